package dev.thresher.store.shard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The pool the call path reads shard databases through refuses every write, in and out of transactions. */
class ReadOnlyShardPoolTest {
    private static String url;
    private static HikariDataSource readOnly;

    @BeforeAll
    static void start() throws SQLException {
        url = TestPostgres.newDatabase();
        try (HikariDataSource admin = Pools.open("read-only-setup", url, null, null, 1);
             Connection c = admin.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE t (v int, thresher_slot int)");
            s.execute("INSERT INTO t VALUES (1, 0)");
        }
        readOnly = Pools.openReadOnly("read-only-test", url, null, null, 2);
    }

    @AfterAll
    static void stop() {
        readOnly.close();
    }

    @Test
    void writesFailAsReadOnlyTransactions() throws SQLException {
        for (String write : new String[] {"INSERT INTO t VALUES (2, 0)", "UPDATE t SET v = 3", "DELETE FROM t",
            "CREATE TABLE u (v int)", "TRUNCATE t"}) {
            try (Connection c = readOnly.getConnection(); Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.execute(write)).as(write)
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("25006"));
            }
        }
        try (Connection c = readOnly.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> s.execute("INSERT INTO t VALUES (2, 0)"))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("25006"));
            c.rollback();
            c.setAutoCommit(true);
        }
        try (Connection c = readOnly.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*), current_setting('default_transaction_read_only') FROM t")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getLong(1)).isOne();
            assertThat(rs.getString(2)).isEqualTo("on");
        }
    }

    @Test
    void everyNewConnectionIsReadOnly() throws SQLException {
        readOnly.getHikariPoolMXBean().softEvictConnections();
        try (Connection a = readOnly.getConnection(); Connection b = readOnly.getConnection()) {
            for (Connection c : new Connection[] {a, b}) {
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW transaction_read_only")) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo("on");
                }
            }
        }
    }
}
