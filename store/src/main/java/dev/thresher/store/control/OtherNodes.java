package dev.thresher.store.control;

import java.util.Map;
import javax.sql.DataSource;

/**
 * The nodes registered besides one, as a node's connection budget counts them: how many there are, how many are
 * candidates for each shard database, and the address of the control database's server. Read by
 * {@link TopologyStore#otherNodes}, the owner of the hosts and their candidacies.
 *
 * @param count the other nodes registered
 * @param candidates per shard database, the other nodes that are candidates for it (home or standby)
 * @param controlServer the control database's server, {@code host:port}; null over a Unix socket
 */
public record OtherNodes(int count, Map<Integer, Integer> candidates, String controlServer) {
    /** Reads them from the control database {@code db}, all but {@code hostId} ({@link TopologyStore#otherNodes}). */
    public static OtherNodes besides(DataSource db, String hostId) {
        return new TopologyStore(db).otherNodes(hostId);
    }
}
