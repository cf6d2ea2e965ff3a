package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.CallRequest;
import dev.thresher.limits.Limits;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.Map;
import java.util.Optional;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.postgresql.PGStatement;

/** Real pgjdbc against the real server on 127.0.0.1. */
class PgJdbcTest {
    static final String PASSWORD = "s3cret";
    private static final TestCallService CALLS = new TestCallService();
    private static PgWireServer server;

    @BeforeAll
    static void start() throws InterruptedException {
        Limits limits = Limits.fromProperties(Map.of("limits.directCallPayloadBytes", "1024"));
        server = PgWireServer.start(
                new PgWireConfig("127.0.0.1", 0, AuthMode.PASSWORD, "thresher", PASSWORD, "acme", limits), CALLS);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static Connection connect(String password) throws SQLException {
        return connect(password, new Properties());
    }

    private static Connection connect(String password, Properties p) throws SQLException {
        p.setProperty("user", "thresher");
        p.setProperty("password", password);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "30");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + server.port() + "/thresher", p);
    }

    @Test
    void plainStatementReturnsOneJsonRow() throws SQLException {
        try (Connection c = connect(PASSWORD); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING total_sales('{\"region\": ''eu''}')")) {
            assertThat(rs.getMetaData().getColumnCount()).isEqualTo(1);
            assertThat(rs.getMetaData().getColumnName(1)).isEqualTo("result");
            assertThat(rs.getMetaData().getColumnTypeName(1)).isEqualTo("json");
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString("result")).isEqualTo(TestCallService.RESULT);
            assertThat(rs.next()).isFalse();
        }
        assertThat(CALLS.requests).contains(CallRequest.of("acme", "thresher", "total_sales", "{\"region\": 'eu'}"));
    }

    @Test
    void sessionDeadlineBoundsTheConnectionsCalls() throws SQLException {
        try (Connection c = connect(PASSWORD); Statement s = c.createStatement()) {
            s.execute("SET thresher.call_deadline_ms = 1500");
            try (ResultSet rs = s.executeQuery("CALL BINDING deadline_probe('{}')")) {
                assertThat(rs.next()).isTrue();
            }
            try (PreparedStatement ps = c.prepareStatement("CALL BINDING deadline_probe_prepared(?)")) {
                ps.setString(1, "{}");
                ps.executeQuery().close();
            }
            for (String bad : List.of("0", "-5", "soon", "30001")) {
                assertThatThrownBy(() -> s.execute("SET thresher.call_deadline_ms = '" + bad + "'"))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("22023"));
            }
            s.execute("SET thresher.call_deadline_ms = DEFAULT");
            s.executeQuery("CALL BINDING deadline_probe_default('{}')").close();
        }
        assertThat(CALLS.requests).contains(
                new CallRequest("acme", "thresher", "deadline_probe", "{}", Optional.of(1500L)),
                new CallRequest("acme", "thresher", "deadline_probe_prepared", "{}", Optional.of(1500L)),
                new CallRequest("acme", "thresher", "deadline_probe_default", "{}", Optional.empty()));
    }

    @Test
    void preparedStatementCrossesIntoServerSideNamedStatements() throws SQLException {
        try (Connection c = connect(PASSWORD); PreparedStatement ps = c.prepareStatement("CALL BINDING echo(?)")) {
            for (int i = 0; i < 10; i++) {
                String args = "{\"i\": " + i + ", \"s\": \"ünï\"}";
                if (i % 2 == 0) {
                    ps.setString(1, args);
                } else {
                    ps.setObject(1, args, Types.OTHER);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo(args);
                }
            }
            assertThat(ps.unwrap(PGStatement.class).isUseServerPrepare()).isTrue();
        }
    }

    @Test
    void namedStatementsFromTheFirstExecution() throws SQLException {
        Properties p = new Properties();
        p.setProperty("prepareThreshold", "-1"); // named server-side statements and binary transfer at once
        try (Connection c = connect(PASSWORD, p); PreparedStatement ps = c.prepareStatement("CALL BINDING echo(?)")) {
            for (int i = 0; i < 3; i++) {
                ps.setObject(1, "[" + i + "]", Types.OTHER);
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString("result")).isEqualTo("[" + i + "]");
                }
            }
        }
    }

    @Test
    void literalInPreparedStatementAndExecute() throws SQLException {
        try (Connection c = connect(PASSWORD); PreparedStatement ps = c.prepareStatement("CALL BINDING x('[1,2]')")) {
            for (int i = 0; i < 7; i++) {
                assertThat(ps.execute()).isTrue();
                try (ResultSet rs = ps.getResultSet()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo(TestCallService.RESULT);
                }
            }
        }
    }

    @ParameterizedTest
    @CsvSource({
        "SELECT 2 + 2, 0A000",
        "SELECT * FROM pg_catalog.pg_class, 0A000",
        "'CALL BINDING x(''{}''', 42601",
        "CALL BINDING unknown_binding('{}'), 42883",
        "CALL BINDING invalid_arguments('{}'), 22023",
        "CALL BINDING guest_trap('{}'), 38000",
        "CALL BINDING deadline_exceeded('{}'), 57014",
        "CALL BINDING cell_unavailable('{}'), 57P03",
        "CALL BINDING target_stale('{}'), 40001",
        "CALL BINDING transport_outcome_unknown('{}'), 58000",
        "CALL BINDING batch_too_many_rows('{}'), 53400",
        "CALL BINDING permission_denied('{}'), 42501",
    })
    void errorsCarrySqlStatesAndTheConnectionStaysUsable(String sql, String sqlState) throws SQLException {
        try (Connection c = connect(PASSWORD)) {
            try (Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.executeQuery(sql)).isInstanceOfSatisfying(SQLException.class,
                        e -> assertThat(e.getSQLState()).isEqualTo(sqlState));
            }
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                for (int i = 0; i < 6; i++) {
                    assertThatThrownBy(ps::executeQuery).isInstanceOfSatisfying(SQLException.class,
                            e -> assertThat(e.getSQLState()).isEqualTo(sqlState));
                }
            }
            assertUsable(c);
        }
    }

    @Test
    void parameterFailuresAndPayloadLimit() throws SQLException {
        try (Connection c = connect(PASSWORD); PreparedStatement ps = c.prepareStatement("CALL BINDING echo(?)")) {
            for (int i = 0; i < 7; i++) {
                ps.setString(1, "{\"k\": \"" + "x".repeat(2000) + "\"}");
                assertThatThrownBy(ps::executeQuery).isInstanceOfSatisfying(SQLException.class,
                        e -> assertThat(e.getSQLState()).isEqualTo("54000"));
                ps.setNull(1, Types.VARCHAR);
                assertThatThrownBy(ps::executeQuery).isInstanceOfSatisfying(SQLException.class,
                        e -> assertThat(e.getSQLState()).isEqualTo("22023"));
                ps.setString(1, "{}");
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo("{}");
                }
            }
        }
    }

    @Test
    void rightPasswordConnectsWrongPasswordIsRefused() throws SQLException {
        try (Connection c = connect(PASSWORD)) {
            assertUsable(c);
        }
        assertThatThrownBy(() -> connect("wrong")).isInstanceOfSatisfying(SQLException.class,
                e -> assertThat(e.getSQLState()).isEqualTo("28P01"));
    }

    @Test
    void autoCommitOffRunsCallsInsideBlocksAndRollsBackAFailedOne() throws SQLException {
        try (Connection c = connect(PASSWORD)) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("CALL BINDING echo('[1]')")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("[1]");
            }
            try (PreparedStatement ps = c.prepareStatement("CALL BINDING echo(?)")) {
                ps.setString(1, "[2]");
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo("[2]");
                }
            }
            c.commit();
            try (Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.executeQuery("CALL BINDING guest_trap('{}')"))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("38000"));
                assertThatThrownBy(() -> s.executeQuery("CALL BINDING echo('{}')"))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("25P02"));
            }
            c.rollback();
            assertUsable(c);
            c.commit();
            assertThat(c.getTransactionIsolation()).isEqualTo(Connection.TRANSACTION_READ_COMMITTED);
        }
    }

    @Test
    void aDefaultHikariPoolServesCalls() throws SQLException {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + server.port() + "/thresher");
        config.setUsername("thresher");
        config.setPassword(PASSWORD);
        config.setMaximumPoolSize(2);
        config.setConnectionTimeout(10_000);
        try (HikariDataSource pool = new HikariDataSource(config)) {
            for (int i = 0; i < 4; i++) {
                try (Connection c = pool.getConnection()) {
                    assertUsable(c);
                }
            }
        }
    }

    @Test
    void targetServerTypePrimaryFindsThePrimary() throws SQLException {
        Properties p = new Properties();
        p.setProperty("targetServerType", "primary");
        try (Connection c = connect(PASSWORD, p); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW transaction_read_only")) {
            assertThat(rs.getMetaData().getColumnName(1)).isEqualTo("transaction_read_only");
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("off");
            assertUsable(c);
        }
    }

    private static void assertUsable(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("CALL BINDING echo('{\"ok\": true}')")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("{\"ok\": true}");
        }
    }
}
