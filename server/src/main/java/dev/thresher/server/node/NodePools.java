package dev.thresher.server.node;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.store.ConnectionBudget;
import dev.thresher.store.Pools;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.OtherNodes;
import dev.thresher.store.shard.ShardReader;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * A node's database pools, opened in steps as it starts: the call path's control pool and the upkeep's (leases,
 * janitor, cache), and a read-only pool to every shard database the node is a candidate for, its home shard's and
 * those it stands by for ({@code node.standbyShards}), with the JDBC URL each was opened on. Calls and the node's own
 * upkeep use separate pools, so a lease renewal never waits behind call traffic and the call path's statements can be
 * counted alone. A pool is null until its step ran; the node closes those that were opened.
 */
final class NodePools {
    private final NodeConfig config;
    private HikariDataSource control;
    private HikariDataSource upkeep;
    private HikariDataSource homeShard;
    /** Read-only pools of every shard database this node is a candidate for, its own included. */
    private final Map<Integer, HikariDataSource> shards = new TreeMap<>();
    /** The JDBC URL of each shard database this node is a candidate for. */
    private final Map<Integer, String> shardUrls = new TreeMap<>();

    NodePools(NodeConfig config) {
        this.config = config;
    }

    /**
     * The call path's control pool and the upkeep's. Every coordination statement runs under statement, lock and
     * idle-in-transaction timeouts, so neither a frozen holder of a lock nor a stalled statement holds a takeover or a
     * call past them (Pools.ControlSessions).
     */
    void openControl(Limits limits) {
        control = Pools.openControl(config.hostId() + "-control", config.controlJdbcUrl(), config.dbUser(),
                config.dbPassword(), 8, Pools.ControlSessions.callPath(limits.maxCallDeadlineMs()));
        upkeep = Pools.openControl(config.hostId() + "-control-upkeep", config.controlJdbcUrl(),
                config.dbUser(), config.dbPassword(), 3, Pools.ControlSessions.upkeep(limits.partitionLeaseMs()));
    }

    /** The home shard database's pool: the call path only reads shard databases, so its sessions are read-only (docs/contract.md). */
    void openHomeShard(Limits limits) {
        homeShard = Pools.openReadOnly(config.hostId() + "-shard", config.shardJdbcUrl(), config.dbUser(),
                config.dbPassword(), limits.shardConcurrency());
        shards.put(config.shardId(), homeShard);
        shardUrls.put(config.shardId(), config.shardJdbcUrl());
    }

    /** The control database's migrations, on a pool of their own: they may wait for another node's (Flyway's lock), longer than the upkeep's lock timeout allows. */
    void migrateControl() {
        try (HikariDataSource migrations = Pools.open(config.hostId() + "-migrate", config.controlJdbcUrl(),
                config.dbUser(), config.dbPassword(), 2)) {
            ControlStore.migrate(migrations);
        }
    }

    /** A read-only pool to each shard database the node stands by for, at the URL the control database knows for it. */
    void openStandbys(Limits limits) {
        if (config.standbyShards().isEmpty()) {
            return;
        }
        Map<Integer, String> urls = new ControlStore(upkeep).shardUrls();
        for (int standby : config.standbyShards()) {
            String url = urls.get(standby);
            if (url == null) {
                throw new IllegalArgumentException("node.standbyShards names shard " + standby
                        + ", which the control database does not know; the shards are " + urls.keySet());
            }
            shards.put(standby, Pools.openReadOnly(config.hostId() + "-shard-" + standby, url, config.dbUser(),
                    config.dbPassword(), limits.shardConcurrency()));
            shardUrls.put(standby, url);
        }
    }

    /**
     * The budgets of this node's pools against what the control and shard database servers allow, with the totals
     * for the nodes registered so far ({@link NodeConnections}: every pool the node opens, its table service's
     * included): the control pools, the listening connection and the table service's catalog pool against the control
     * database; the shard pool (and a leader replica's own connections) and the table service's pool against each
     * shard database it is a candidate for; databases on one server against one budget.
     */
    List<ConnectionBudget> budgets(int shardPool) {
        NodeConnections node = new NodeConnections(control.getMaximumPoolSize(), upkeep.getMaximumPoolSize(), shardPool);
        OtherNodes others = OtherNodes.besides(upkeep, config.hostId());
        Map<Integer, String> shardServers = new TreeMap<>();
        Map<String, DataSource> servers = new HashMap<>();
        servers.put(others.controlServer() == null ? "control" : others.controlServer(), upkeep);
        for (var e : shards.entrySet()) {
            String server = serverOf(e.getValue());
            shardServers.put(e.getKey(), server);
            servers.putIfAbsent(server == null ? "shard-" + e.getKey() : server, e.getValue());
        }
        return node.budgets(others.controlServer(), shardServers, others.count(), others.candidates(),
                key -> ConnectionBudget.available(servers.get(key)));
    }

    /** The address of the server a shard database's pool reaches, as that server reports it. */
    private static String serverOf(DataSource shard) {
        try (java.sql.Connection c = shard.getConnection(); java.sql.Statement s = c.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SELECT host(inet_server_addr()) || ':' || inet_server_port()")) {
            rs.next();
            return rs.getString(1);
        } catch (java.sql.SQLException ex) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard database: " + ex.getMessage(), ex);
        }
    }

    /** A reader of each shard pool, every wait within a call bounded by the call's deadline. */
    Map<Integer, ShardReader> readers() {
        Map<Integer, ShardReader> readers = new TreeMap<>();
        shards.forEach((id, pool) -> readers.put(id, new ShardReader(Pools.bounded(pool))));
        return readers;
    }

    /** The call path's control pool; null before {@link #openControl}. */
    HikariDataSource control() {
        return control;
    }

    /** The upkeep's control pool; null before {@link #openControl}. */
    HikariDataSource upkeep() {
        return upkeep;
    }

    /** The home shard database's pool; null before {@link #openHomeShard}. */
    HikariDataSource homeShard() {
        return homeShard;
    }

    /** The shard pools opened so far, by shard database. */
    Map<Integer, HikariDataSource> shards() {
        return shards;
    }

    /** The JDBC URL of each shard database a pool was opened to. */
    Map<Integer, String> shardUrls() {
        return shardUrls;
    }
}
