package dev.thresher.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.store.CountingDataSource.Snapshot;
import dev.thresher.store.control.ControlStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** CountingDataSource over a HikariCP pool on a real PostgreSQL: known sequences, exact counts. */
class CountingDataSourceTest {
    private static HikariDataSource pool;
    private CountingDataSource db;

    @BeforeAll
    static void openPool() {
        pool = Pools.open("counting-test", TestPostgres.newDatabase(), null, null, 2);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    @BeforeEach
    void wrap() throws SQLException {
        db = new CountingDataSource(pool);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS t");
            s.execute("CREATE TABLE t (id int PRIMARY KEY)");
        }
    }

    @Test
    void autoCommitStatementsAreEachATransaction() throws SQLException {
        try (Connection c = db.getConnection()) {
            try (Statement s = c.createStatement()) {
                s.execute("INSERT INTO t VALUES (1)");
                try (ResultSet rs = s.executeQuery("SELECT count(*) FROM t")) {
                    rs.next();
                }
                assertThat(s.executeUpdate("UPDATE t SET id = 2")).isEqualTo(1);
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM t WHERE id = ?")) {
                ps.setInt(1, 2);
                ps.executeQuery().close();
                ps.setInt(1, 3);
                ps.executeQuery().close();
            }
        }
        assertThat(db.snapshot()).isEqualTo(new Snapshot(5, 5));
        assertThat(db.recentStatements()).containsExactly("INSERT INTO t VALUES (1)", "SELECT count(*) FROM t",
                "UPDATE t SET id = 2", "SELECT id FROM t WHERE id = ?", "SELECT id FROM t WHERE id = ?");
    }

    @Test
    void aTransactionCountsOnceAtItsCommitAndARollbackNotAtAll() throws SQLException {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO t VALUES (?)")) {
                ps.setInt(1, 1);
                ps.executeUpdate();
                ps.setInt(1, 2);
                ps.executeUpdate();
            }
            assertThat(db.snapshot()).isEqualTo(new Snapshot(2, 0));
            c.commit();
            assertThat(db.snapshot()).isEqualTo(new Snapshot(2, 1));
            c.commit(); // nothing ran since: not a transaction
            assertThat(db.transactions()).isEqualTo(1);

            try (Statement s = c.createStatement()) {
                s.execute("DELETE FROM t");
            }
            c.rollback();
            assertThat(db.snapshot()).isEqualTo(new Snapshot(3, 1));
            assertThat(db.rollbacks()).isEqualTo(1);

            try (PreparedStatement ps = c.prepareStatement("INSERT INTO t VALUES (?)")) {
                for (int i = 10; i < 15; i++) {
                    ps.setInt(1, i);
                    ps.addBatch();
                }
                assertThat(ps.executeBatch()).hasSize(5);
            }
            c.setAutoCommit(true); // commits the open transaction
            assertThat(db.snapshot()).isEqualTo(new Snapshot(4, 2));

            // A statement that fails still went to the database.
            try (Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.execute("SELECT * FROM no_such_table")).isInstanceOf(SQLException.class);
            }
            assertThat(db.snapshot()).isEqualTo(new Snapshot(5, 3));
        }
        try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM t")) {
            rs.next();
            assertThat(rs.getInt(1)).as("the batch was committed by the switch to auto-commit").isEqualTo(7);
        }
    }

    @Test
    void snapshotsSubtract() throws SQLException {
        Snapshot before = db.snapshot();
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("SELECT 1");
            assertThat(s.getConnection()).as("a statement's connection is the counting one").isSameAs(c);
            s.getConnection().createStatement().execute("SELECT 2");
        }
        assertThat(db.since(before)).isEqualTo(new Snapshot(2, 2));
        assertThat(db.snapshot().minus(before)).isEqualTo(new Snapshot(2, 2));
        assertThat(db.unwrap(HikariDataSource.class)).isSameAs(pool);
        assertThat(db.isWrapperFor(CountingDataSource.class)).isTrue();
    }

    @Test
    void recentStatementsKeepTheLast128InOrder() throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            for (int i = 0; i < 130; i++) {
                s.execute("SELECT " + i);
            }
        }
        assertThat(db.recentStatements()).hasSize(128).startsWith("SELECT 2", "SELECT 3").endsWith("SELECT 129");
        assertThat(db.statements()).isEqualTo(130);
    }

    @Test
    void controlStoreMethodsCostWhatTheySay() {
        String url = TestPostgres.newDatabase();
        try (HikariDataSource control = Pools.open("counting-control", url, null, null, 2)) {
            ControlStore.migrate(control);
            CountingDataSource counted = new CountingDataSource(control);
            ControlStore store = new ControlStore(counted);

            Snapshot s = counted.snapshot();
            store.ensureTenant("acme"); // one auto-commit statement
            assertThat(counted.since(s)).isEqualTo(new Snapshot(1, 1));

            s = counted.snapshot();
            store.readTopology(); // now(), partitions, leases, hosts, candidates in one transaction
            assertThat(counted.since(s)).isEqualTo(new Snapshot(5, 1));

            s = counted.snapshot();
            store.currentBinding("acme", "none");
            assertThat(counted.since(s)).isEqualTo(new Snapshot(1, 1));

            s = counted.snapshot();
            store.readTopologyVersion();
            assertThat(counted.since(s)).isEqualTo(new Snapshot(1, 1));
        }
    }
}
