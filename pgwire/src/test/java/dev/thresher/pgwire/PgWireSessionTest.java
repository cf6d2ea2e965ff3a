package dev.thresher.pgwire;

import static dev.thresher.pgwire.BackendReader.types;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.CallRequest;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.BackendReader.Message;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.sql.Types;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.util.PGobject;

/**
 * What drivers send around their calls: startup parameters, transaction-scoped settings, the SELECTs and the session
 * commands pgwire answers itself; real pgjdbc against the real server on 127.0.0.1, and raw startup packets.
 */
class PgWireSessionTest {
    private static final TestCallService CALLS = new TestCallService();
    private static PgWireServer server;

    @BeforeAll
    static void start() throws InterruptedException {
        server = PgWireServer.start(new PgWireConfig("127.0.0.1", 0, AuthMode.PASSWORD, "thresher", PgJdbcTest.PASSWORD,
                "acme", Limits.DEFAULTS), CALLS);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static Connection connect(Properties p) throws SQLException {
        p.setProperty("user", "thresher");
        p.setProperty("password", PgJdbcTest.PASSWORD);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "30");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + server.port() + "/thresher", p);
    }

    private static Connection connect() throws SQLException {
        return connect(new Properties());
    }

    private static String show(Statement s, String setting) throws SQLException {
        try (ResultSet rs = s.executeQuery("SHOW " + setting)) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }

    /** The SQLSTATEs of the statement's warnings. */
    private static List<String> warningStates(Statement s) throws SQLException {
        List<String> states = new java.util.ArrayList<>();
        for (SQLWarning w = s.getWarnings(); w != null; w = w.getNextWarning()) {
            states.add(w.getSQLState());
        }
        return states;
    }

    /** Calls {@code binding}; the deadline the call service was given. */
    private static Optional<Long> deadlineOfACall(Statement s, String binding) throws SQLException {
        s.executeQuery("CALL BINDING " + binding + "('{}')").close();
        return CALLS.requests.stream().filter(r -> r.bindingName().equals(binding)).reduce((a, b) -> b)
                .orElseThrow().deadlineMs();
    }

    @Test
    void setLocalLastsUntilTheEndOfItsTransactionBlock() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            String initial = show(s, "thresher.call_deadline_ms");
            s.execute("BEGIN");
            s.execute("SET LOCAL thresher.call_deadline_ms = 1200");
            assertThat(warningStates(s)).isEmpty();
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("1200");
            assertThat(deadlineOfACall(s, "local_in_block")).contains(1200L);
            s.execute("COMMIT");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo(initial);
            assertThat(deadlineOfACall(s, "local_after_commit")).isEmpty();

            s.execute("BEGIN");
            s.execute("SET LOCAL thresher.call_id_notice = off");
            s.execute("ROLLBACK");
            assertThat(show(s, "thresher.call_id_notice")).isEqualTo("on");
        }
    }

    @Test
    void setLocalOutsideABlockWarnsAndHasNoEffect() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            s.execute("SET LOCAL thresher.call_deadline_ms = 1200");
            SQLWarning warning = s.getWarnings();
            assertThat((Object) warning).isNotNull();
            assertThat(warning.getSQLState()).isEqualTo("25P01");
            assertThat(warning.getMessage()).contains("SET LOCAL can only be used in transaction blocks");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("30000");
            // the value is checked all the same, as in PostgreSQL
            assertThatThrownBy(() -> s.execute("SET LOCAL thresher.call_deadline_ms = 'soon'"))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("22023"));
        }
    }

    @Test
    void aSessionSetInABlockThatRollsBackIsUndone() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            String appName = c.getClientInfo("ApplicationName");
            s.execute("BEGIN");
            s.execute("SET thresher.call_deadline_ms = 1300");
            s.execute("SET application_name = 'in-the-block'");
            assertThat(c.getClientInfo("ApplicationName")).isEqualTo("in-the-block");
            s.execute("ROLLBACK");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("30000");
            assertThat(show(s, "application_name")).isEqualTo(appName);
            assertThat(c.getClientInfo("ApplicationName")).as("ParameterStatus after ROLLBACK").isEqualTo(appName);

            // a failed block rolls back on COMMIT too
            s.execute("BEGIN");
            s.execute("SET thresher.call_deadline_ms = 1350");
            assertThatThrownBy(() -> s.executeQuery("CALL BINDING guest_trap('{}')")).isInstanceOf(SQLException.class);
            s.execute("COMMIT");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("30000");

            s.execute("BEGIN");
            s.execute("SET thresher.call_deadline_ms = 1400");
            s.execute("COMMIT");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("1400");
        }
    }

    @Test
    void aSimpleQueryOfSeveralStatementsIsOneImplicitBlock() throws SQLException {
        Properties p = new Properties();
        p.setProperty("preferQueryMode", "simple");
        try (Connection c = connect(p); Statement s = c.createStatement()) {
            s.execute("SET LOCAL thresher.call_deadline_ms = 1500; CALL BINDING implicit_block('{}')");
            assertThat(warningStates(s)).doesNotContain("25P01");
            assertThat(CALLS.requests).contains(new CallRequest("acme", "thresher", "implicit_block", "{}", Optional.of(1500L)));
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("30000");
            assertThatThrownBy(() -> s.execute("SET thresher.call_deadline_ms = 1600; CALL BINDING guest_trap('{}')"))
                    .isInstanceOf(SQLException.class);
            assertThat(show(s, "thresher.call_deadline_ms")).as("undone with the failed query").isEqualTo("30000");
            s.execute("SET thresher.call_deadline_ms = 1700; CALL BINDING implicit_block_2('{}')");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("1700");
        }
    }

    @Test
    void startupSettingsAreWhatResetGoesBackTo() throws SQLException {
        Properties p = new Properties();
        p.setProperty("options", "-c thresher.call_deadline_ms=2500 --search-path=ignored");
        try (Connection c = connect(p); Statement s = c.createStatement()) {
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("2500");
            s.execute("SET thresher.call_deadline_ms = 900");
            s.execute("RESET thresher.call_deadline_ms");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("2500");
            s.execute("SET thresher.call_deadline_ms = 900");
            s.execute("SET thresher.call_deadline_ms = DEFAULT");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("2500");
            s.execute("SET thresher.call_deadline_ms = 900");
            s.execute("RESET ALL");
            assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("2500");
        }
        p.setProperty("options", "-c thresher.call_deadline_ms=never");
        assertThatThrownBy(() -> connect(p)).isInstanceOfSatisfying(SQLException.class,
                e -> assertThat(e.getSQLState()).isEqualTo("22023"));
        p.setProperty("options", "-B 100");
        assertThatThrownBy(() -> connect(p)).isInstanceOfSatisfying(SQLException.class,
                e -> assertThat(e.getSQLState()).isEqualTo("42601"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"'utf-8'", "utf-8", "UTF8", "unicode", "'UTF-8'"})
    void clientEncodingInEverySpellingDriversSend(String encoding) {
        PgWireProtocolTest.Connection c = new PgWireProtocolTest.Connection(new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST,
                "thresher", "s3cret", "acme", Limits.DEFAULTS), PgWireProtocolTest.Calls.returning("{}"), 41);
        // asyncpg's startup packet
        c.send(new FrontendBytes().startup(Map.of("client_encoding", encoding, "user", "thresher", "database", "thresher",
                "DateStyle", "ISO", "TimeZone", "Europe/Berlin", "extra_float_digits", "3", "search_path", "public")));
        List<Message> hello = c.receive();
        assertThat(types(hello)).isEqualTo("R" + "S".repeat(13) + "KZ");
        assertThat(hello.stream().filter(m -> m.type() == 'S').map(Message::strings)).contains(List.of("client_encoding", "UTF8"),
                List.of("TimeZone", "UTC"));
        c.assertNoLeaks();
    }

    @Test
    void anEncodingOtherThanUtf8IsRefusedAtStartup() {
        PgWireProtocolTest.Connection c = new PgWireProtocolTest.Connection(new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST,
                "thresher", "s3cret", "acme", Limits.DEFAULTS), PgWireProtocolTest.Calls.returning("{}"), 42);
        c.send(new FrontendBytes().startup(Map.of("client_encoding", "'LATIN1'", "user", "thresher")));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("E");
        assertThat(m.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "22023");
        c.assertNoLeaks();
    }

    @ParameterizedTest
    @ValueSource(strings = {"extended", "simple"})
    void jsonbParametersAndResultMetadata(String mode) throws SQLException {
        Properties p = new Properties();
        p.setProperty("preferQueryMode", mode);
        try (Connection c = connect(p); PreparedStatement ps = c.prepareStatement("CALL BINDING echo(?)")) {
            for (int i = 0; i < 6; i++) {
                PGobject jsonb = new PGobject();
                jsonb.setType("jsonb");
                jsonb.setValue("{\"i\": " + i + "}");
                ps.setObject(1, jsonb);
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo("{\"i\": " + i + "}");
                    ResultSetMetaData md = rs.getMetaData();
                    assertThat(md.getColumnType(1)).isEqualTo(Types.OTHER);
                    assertThat(md.getColumnTypeName(1)).isEqualTo("json");
                    assertThat(md.getColumnClassName(1)).isEqualTo(PGobject.class.getName());
                }
                ps.setObject(1, "[" + i + "]", Types.OTHER);
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo("[" + i + "]");
                }
            }
            // a type pgjdbc does not know is looked up in pg_type by OID
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_advisory_unlock_all(), 1 AS one")) {
                ResultSetMetaData md = rs.getMetaData();
                assertThat(md.getColumnTypeName(1)).isEqualTo("void");
                assertThat(md.getColumnType(1)).isEqualTo(Types.OTHER);
                assertThat(md.getColumnName(2)).isEqualTo("one");
                assertThat(rs.next()).isTrue();
                assertThat(rs.getInt(2)).isEqualTo(1);
            }
        }
    }

    @Test
    void answeredSelectsInBinaryAndPortionsAndTheirErrors() throws SQLException {
        Properties p = new Properties();
        p.setProperty("prepareThreshold", "-1"); // named statements and binary results from the first execution
        try (Connection c = connect(p)) {
            try (PreparedStatement ps = c.prepareStatement("SELECT 1, current_setting(?) AS v")) {
                ps.setString(1, "x");
                assertThatThrownBy(ps::executeQuery).isInstanceOfSatisfying(SQLException.class,
                        e -> assertThat(e.getSQLState()).isEqualTo("0A000")); // only constants are answered
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT 1, 5000000000 AS big, current_user, current_setting('server_version_num')")) {
                for (int i = 0; i < 3; i++) {
                    try (ResultSet rs = ps.executeQuery()) {
                        assertThat(rs.next()).isTrue();
                        assertThat(rs.getInt(1)).isEqualTo(1);
                        assertThat(rs.getLong("big")).isEqualTo(5_000_000_000L);
                        assertThat(rs.getString(3)).isEqualTo("thresher");
                        assertThat(rs.getString(4)).isEqualTo("160000");
                        assertThat(rs.next()).isFalse();
                    }
                }
            }
            try (Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.executeQuery("SELECT current_setting('no_such')"))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("42704"));
                assertThatThrownBy(() -> c.getMetaData().getTables(null, null, "%", null))
                        .isInstanceOfSatisfying(SQLException.class, e -> {
                            assertThat(e.getSQLState()).isEqualTo("0A000");
                            assertThat(e.getMessage()).contains("system catalogs are not");
                        });
                try (ResultSet rs = s.executeQuery("SELECT version()")) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).startsWith("PostgreSQL 16.0");
                }
            }
        }
    }

    @Test
    void discardAllDeallocateAndResetAsPoolsSendThem() throws SQLException {
        Properties p = new Properties();
        p.setProperty("prepareThreshold", "1");
        try (Connection c = connect(p); Statement s = c.createStatement()) {
            try (PreparedStatement ps = c.prepareStatement("CALL BINDING echo(?)")) {
                for (int i = 0; i < 3; i++) {
                    ps.setString(1, "[" + i + "]");
                    ps.executeQuery().close();
                    if (i == 1) {
                        s.execute("SET thresher.call_deadline_ms = 700");
                        s.execute("DISCARD ALL"); // pgjdbc forgets its server-side statements on this command tag
                        assertThat(show(s, "thresher.call_deadline_ms")).isEqualTo("30000");
                    }
                }
            }
            s.execute("BEGIN");
            assertThatThrownBy(() -> s.execute("DISCARD ALL")).isInstanceOfSatisfying(SQLException.class,
                    e -> assertThat(e.getSQLState()).isEqualTo("25001"));
            s.execute("ROLLBACK");
            assertThatThrownBy(() -> s.execute("DEALLOCATE no_such")).isInstanceOfSatisfying(SQLException.class,
                    e -> assertThat(e.getSQLState()).isEqualTo("26000"));
            s.execute("SELECT pg_advisory_unlock_all();\nCLOSE ALL;\nUNLISTEN *;\nRESET ALL;");
            s.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED");
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            try (ResultSet rs = s.executeQuery("CALL BINDING echo('{\"ok\": 1}')")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("{\"ok\": 1}");
            }
        }
    }
}
