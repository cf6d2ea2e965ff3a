package dev.thresher.store.control;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * A migrated control database of its own: tenant {@code acme}, one package, shard 1 with table
 * {@code orders} in partitions 1 and 2, hosts h1 and h2 on shard 1.
 */
final class ControlFixture implements AutoCloseable {
    static final String TENANT = "acme";
    static final String DIGEST = "sha256:" + "ab".repeat(32);
    static final String SELECTOR_1 = "SELECT region, amount FROM orders";
    static final String SELECTOR_2 = "SELECT region FROM orders";
    static final String SELECTOR_3 = "SELECT amount FROM orders";

    final String url;
    final HikariDataSource pool;
    final ControlStore control;
    final TopologyStore topology;
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private int sentinels;

    private ControlFixture(String url) {
        this.url = url;
        this.pool = Pools.open("store-test", url, null, null, 6);
        ControlStore.migrate(pool);
        this.control = new ControlStore(pool);
        this.topology = new TopologyStore(pool);
    }

    static ControlFixture create() {
        ControlFixture f = new ControlFixture(TestPostgres.newDatabase());
        ControlStore c = f.control;
        c.ensureTenant(TENANT);
        c.putPackage(DIGEST, new byte[] {0, 'a', 's', 'm'});
        c.putShard(1, "jdbc:postgresql://shard-1/db");
        c.putShard(2, "jdbc:postgresql://shard-2/db");
        c.putTable(TENANT, "orders", "id", "bigint");
        c.putPartition(new Partition(1, TENANT, "orders", 0, 8191, 1, 1));
        c.putPartition(new Partition(2, TENANT, "orders", 8192, 16383, 1, 1));
        f.topology.registerHost(new Host("h1", 1, "127.0.0.1", 7001), null, null);
        f.topology.registerHost(new Host("h2", 1, "127.0.0.1", 7002), null, null);
        return f;
    }

    Connection connect() throws SQLException {
        return DriverManager.getConnection(url);
    }

    /** A cache listening on this database. */
    ControlCache cache(long pollMs) {
        return track(ControlCache.start(control, this::connect, pollMs, "test"));
    }

    ControlCache cache(long pollMs, Callable<Connection> listen, long loadWaitMs) {
        return track(ControlCache.start(control, listen, pollMs, "test", loadWaitMs));
    }

    /** A cache whose listener hears nothing (it listens on another database): every notification is lost. */
    ControlCache deafCache(long pollMs) {
        return track(ControlCache.start(control, () -> DriverManager.getConnection(TestPostgres.jdbcUrl("postgres")),
                pollMs, "deaf"));
    }

    <T extends AutoCloseable> T track(T t) {
        closeables.add(t);
        return t;
    }

    int update(String sql, Object... args) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    long queryLong(String sql, Object... args) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    long topologyVersion() {
        return queryLong("SELECT version FROM topology_version");
    }

    /** Sends a notification of its own on the catalog channel and returns its payload. */
    String notifySentinel() {
        String payload = "test:sentinel-" + (++sentinels);
        queryLong("SELECT 1 FROM (SELECT pg_notify(?, ?)) n", ControlCache.CHANNEL, payload);
        return payload;
    }

    /** A raw LISTEN connection on the catalog channel. */
    RawListener listen() {
        return track(new RawListener());
    }

    final class RawListener implements AutoCloseable {
        private final Connection c;

        private RawListener() {
            try {
                c = connect();
                c.createStatement().execute("LISTEN " + ControlCache.CHANNEL);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }

        /**
         * Every payload received up to a sentinel sent now. Notifications are delivered in commit order,
         * so this is exactly what was notified by transactions committed before this call.
         */
        List<String> drain() {
            String sentinel = notifySentinel();
            List<String> got = new ArrayList<>();
            dev.thresher.store.TestPostgres.await(Duration.ofSeconds(10),
                    () -> "sentinel " + sentinel + " (received so far: " + got + ")", () -> {
                        try {
                            PGNotification[] ns = c.unwrap(PGConnection.class).getNotifications(100);
                            for (PGNotification n : ns == null ? new PGNotification[0] : ns) {
                                if (n.getParameter().equals(sentinel)) {
                                    return true;
                                }
                                got.add(n.getParameter());
                            }
                            return false;
                        } catch (SQLException e) {
                            throw new IllegalStateException(e);
                        }
                    });
            return got;
        }

        @Override
        public void close() throws SQLException {
            c.close();
        }
    }

    @Override
    public void close() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        pool.close();
    }
}
