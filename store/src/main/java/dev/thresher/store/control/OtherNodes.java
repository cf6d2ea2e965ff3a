package dev.thresher.store.control;

import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * The nodes registered besides one, as a node's connection budget counts them: how many there are, how many are
 * candidates for each shard database, and the address of the control database's server.
 *
 * @param count the other nodes registered
 * @param candidates per shard database, the other nodes that are candidates for it (home or standby)
 * @param controlServer the control database's server, {@code host:port}; null over a Unix socket
 */
public record OtherNodes(int count, Map<Integer, Integer> candidates, String controlServer) {
    /** Reads them from the control database {@code db}, all but {@code hostId}. */
    public static OtherNodes besides(DataSource db, String hostId) {
        return new ControlSql(db).inTransaction(c -> {
            record Head(int count, String server) {}
            Head head = ControlSql.queryOne(c, "SELECT count(*), host(inet_server_addr()) || ':' || inet_server_port()"
                    + " FROM hosts WHERE host_id <> ?", rs -> new Head(rs.getInt(1), rs.getString(2)), hostId).orElseThrow();
            Map<Integer, Integer> candidates = new TreeMap<>();
            ControlSql.queryList(c, "SELECT shard_id, count(*) FROM host_shards WHERE host_id <> ? GROUP BY shard_id",
                    rs -> Map.entry(rs.getInt(1), rs.getInt(2)), hostId).forEach(e -> candidates.put(e.getKey(), e.getValue()));
            return new OtherNodes(head.count(), candidates, head.server());
        });
    }
}
