package dev.thresher.store.shard;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.Selector;
import dev.thresher.limits.Deadline;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * No session setting survives from one read into the next on a pooled shard connection, whichever way the
 * partition was read, even when the table read is a view whose columns call {@code set_config} (a selector
 * itself cannot call a function; a view made by hand on a shard database can).
 */
class SessionStateTest {
    private static final Partition P = new Partition(1, "acme", "leaky", 0, 99, 1, 1);
    private static HikariDataSource pool;

    @BeforeAll
    static void start() throws SQLException {
        String url = TestPostgres.newDatabase();
        try (HikariDataSource admin = Pools.open("session-setup", url, null, null, 1);
             Connection c = admin.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE t (v int8 NOT NULL, thresher_slot int NOT NULL)");
            s.execute("INSERT INTO t SELECT g, g % 100 FROM generate_series(1, 10) g");
            s.execute("CREATE VIEW leaky AS SELECT v, thresher_slot, length(set_config('thresher.poison', 'yes', false))::int8 AS p,"
                    + " length(set_config('search_path', 'nowhere', false))::int8 AS q FROM t");
        }
        pool = Pools.openReadOnly("session-test", url, null, null, 1); // one connection: every read on the same session
    }

    @AfterAll
    static void stop() {
        pool.close();
    }

    private static Deadline deadline() {
        return Deadline.afterMillis(System.nanoTime(), TimeUnit.SECONDS.toMillis(30));
    }

    private static void assertSessionClean() throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT current_setting('thresher.poison', true), current_setting('search_path')")) {
            rs.next();
            assertThat(rs.getString(1)).as("a custom setting made by the read").isNullOrEmpty();
            assertThat(rs.getString(2)).as("search_path").isNotEqualTo("nowhere");
        }
    }

    @Test
    void aReadThatSetsSessionSettingsLeavesNoneBehindOnEveryPath() throws SQLException {
        Selector selector = Selector.parse("SELECT v, p, q FROM leaky");
        for (ShardReader.Mode mode : ShardReader.Mode.values()) {
            ShardBatch batch = new ShardReader(pool, mode).read(P, selector, 4096, 8 << 20, deadline());
            assertThat(batch.rowCount()).as("%s read the view", mode).isEqualTo(10);
            assertSessionClean();
        }
        try (ShardPages pages = new ShardReader(pool).openPages(P, selector, 4, 8 << 20, deadline())) {
            int rows = 0;
            for (ShardBatch b = pages.next(); b != null; b = pages.next()) {
                rows += b.rowCount();
            }
            assertThat(rows).isEqualTo(10);
        }
        assertSessionClean();
    }
}
