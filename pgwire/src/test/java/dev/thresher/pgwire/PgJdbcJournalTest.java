package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalSelect.Compare;
import dev.thresher.bindings.JournalSelect.Op;
import dev.thresher.bindings.JournalSelect.Text;
import dev.thresher.bindings.JournalService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PGobject;

/** pgjdbc reads the journal views through the real server: types, both protocols, parameters, fetch sizes, errors. */
class PgJdbcJournalTest {
    private static final UUID ID = UUID.fromString("0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f");
    private static final Instant AT = Instant.parse("2025-01-31T09:15:02.123456Z");
    private static final List<Seen> seen = new CopyOnWriteArrayList<>();
    private static volatile int rowCount = 3;
    private static volatile RuntimeException failure;
    private static PgWireServer server;

    record Seen(String tenant, JournalSelect select) {
    }

    /** Rows of made-up values of each column's type; error_code is NULL. */
    private static final JournalService JOURNAL = (scope, select) -> {
        seen.add(new Seen(scope.tenant(), select));
        if (failure != null) {
            throw failure;
        }
        List<List<Object>> rows = new ArrayList<>();
        for (int r = 0; r < rowCount; r++) {
            List<Object> row = new ArrayList<>();
            for (JournalColumn c : select.resolvedColumns()) {
                row.add(c.name().equals("error_code") ? null : switch (c.type()) {
                    case UUID -> ID;
                    case INT4 -> 7 + r;
                    case INT8 -> 8_000_000_000L + r;
                    case TIMESTAMPTZ -> AT.plusSeconds(r);
                    case TEXT -> c.name() + "-" + r;
                    case JSON -> "{\"a\":" + r + "}";
                });
            }
            rows.add(row);
        }
        return new JournalRows(select.resolvedColumns(), rows, false);
    };

    @BeforeAll
    static void start() throws InterruptedException {
        server = PgWireServer.start(new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", null, "acme",
                Limits.DEFAULTS), new TestCallService(), null, null, null, JOURNAL);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @BeforeEach
    void reset() {
        seen.clear();
        rowCount = 3;
        failure = null;
    }

    private static Connection connect(Properties p) throws SQLException {
        p.setProperty("user", "thresher");
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "30");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + server.port() + "/thresher", p);
    }

    private static final String COLUMNS = "call_id, attempts, slots_published, created_at, binding, result, error_code";

    private static void assertRow(ResultSet rs, int r) throws SQLException {
        assertThat(rs.getObject("call_id")).isEqualTo(ID);
        assertThat(rs.getObject("attempts")).isEqualTo(7 + r);
        assertThat(rs.getObject("slots_published")).isEqualTo(8_000_000_000L + r);
        assertThat(rs.getObject("created_at")).isEqualTo(Timestamp.from(AT.plusSeconds(r)));
        assertThat(rs.getObject("created_at", OffsetDateTime.class)).isEqualTo(AT.plusSeconds(r).atOffset(ZoneOffset.UTC));
        assertThat(rs.getObject("binding")).isEqualTo("binding-" + r);
        assertThat(rs.getObject("result")).isInstanceOfSatisfying(PGobject.class,
                j -> assertThat(j.getValue()).isEqualTo("{\"a\":" + r + "}"));
        assertThat(rs.getObject("error_code")).isNull();
        assertThat(rs.getInt("error_code")).isZero();
        assertThat(rs.wasNull()).isTrue();
    }

    @Test
    void aSimpleQueryAnswersTypedColumnsForTheConnectionsTenant() throws SQLException {
        try (Connection c = connect(new Properties()); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT " + COLUMNS + " FROM thresher.invocations WHERE state = 'failed'")) {
            ResultSetMetaData md = rs.getMetaData();
            assertThat(List.of(md.getColumnTypeName(1), md.getColumnTypeName(2), md.getColumnTypeName(3),
                    md.getColumnTypeName(4), md.getColumnTypeName(5), md.getColumnTypeName(6), md.getColumnTypeName(7)))
                    .containsExactly("uuid", "int4", "int8", "timestamptz", "text", "json", "int4");
            for (int r = 0; r < 3; r++) {
                assertThat(rs.next()).isTrue();
                assertRow(rs, r);
            }
            assertThat(rs.next()).isFalse();
        }
        assertThat(seen).hasSize(1);
        assertThat(seen.get(0).tenant()).isEqualTo("acme");
        assertThat(seen.get(0).select().where()).contains(new Compare("state", Op.EQ, new Text("failed")));
    }

    @Test
    void preparedStatementsBindParametersAndReadBinaryResults() throws SQLException {
        Properties p = new Properties();
        p.setProperty("prepareThreshold", "1"); // named statements from the first execution: binary results
        try (Connection c = connect(p); PreparedStatement ps = c.prepareStatement("SELECT " + COLUMNS
                + " FROM thresher.invocations WHERE state = ? AND attempts > ? AND call_id = ? AND created_at > ?"
                + " AND duration_ms < ? ORDER BY created_at DESC LIMIT 10")) {
            for (int i = 0; i < 4; i++) {
                ps.setString(1, "failed");
                ps.setInt(2, 2);
                ps.setObject(3, ID);
                ps.setObject(4, AT.atOffset(ZoneOffset.UTC));
                ps.setLong(5, 9_000_000_000L);
                try (ResultSet rs = ps.executeQuery()) {
                    for (int r = 0; r < 3; r++) {
                        assertThat(rs.next()).isTrue();
                        assertRow(rs, r);
                    }
                    assertThat(rs.next()).isFalse();
                }
            }
        }
        assertThat(seen).hasSize(4);
        JournalSelect bound = seen.get(3).select();
        assertThat(bound.hasParameters()).isFalse();
        String where = bound.where().orElseThrow().toString();
        assertThat(where).contains("Compare[column=state, op=EQ, value=Text[value=failed]]",
                "Compare[column=attempts, op=GT, value=Text[value=2]]", "value=Text[value=" + ID + "]",
                "Compare[column=duration_ms, op=LT, value=Text[value=9000000000]]");
        assertThat(JournalSelect.value(dev.thresher.bindings.JournalView.INVOCATIONS.column("created_at").orElseThrow(),
                ((Compare) ((JournalSelect.And) ((JournalSelect.And) bound.where().get()).left()).right()).value()))
                .isEqualTo(AT);
    }

    @Test
    void aFetchSizeReadsThePortalAFewRowsAtATime() throws SQLException {
        rowCount = 7;
        try (Connection c = connect(new Properties())) {
            c.setAutoCommit(false); // pgjdbc fetches by portal only inside a transaction
            try (PreparedStatement ps = c.prepareStatement("SELECT " + COLUMNS + " FROM thresher.invocations")) {
                ps.setFetchSize(2);
                try (ResultSet rs = ps.executeQuery()) {
                    for (int r = 0; r < 7; r++) {
                        assertThat(rs.next()).as("row %d", r).isTrue();
                        assertRow(rs, r);
                    }
                    assertThat(rs.next()).isFalse();
                }
            }
            c.commit();
        }
        assertThat(seen).as("the query ran once; the portal held its rows").hasSize(1);
    }

    @Test
    void showCallsIsTheRecentCalls() throws SQLException {
        try (Connection c = connect(new Properties()); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW CALLS")) {
            assertThat(rs.getMetaData().getColumnCount()).isEqualTo(JournalSqlParser.SHOW_CALLS_COLUMNS.size());
            assertThat(rs.next()).isTrue();
        }
        assertThat(seen.get(0).select()).isEqualTo(JournalSqlParser.showCalls());
    }

    @Test
    void refusalsAreTypedAndTheConnectionKeepsServing() throws SQLException {
        try (Connection c = connect(new Properties()); Statement s = c.createStatement()) {
            for (Map.Entry<String, String> e : Map.of(
                    "SELECT tenant FROM thresher.invocations", "42703",
                    "SELECT * FROM thresher.invocations WHERE tenant = 'other' OR 1=1", "42703",
                    "SELECT * FROM thresher.invocations WHERE 1=1", "0A000",
                    "SELECT * FROM pg_catalog.pg_type", "0A000",
                    "SELECT * FROM thresher.invocations WHERE attempts = 'x'", "22023",
                    "SELECT * FROM thresher.invocations WHERE", "42601").entrySet()) {
                assertThatThrownBy(() -> s.executeQuery(e.getKey())).as(e.getKey())
                        .isInstanceOfSatisfying(SQLException.class, x -> assertThat(x.getSQLState()).isEqualTo(e.getValue()));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT call_id FROM thresher.invocations WHERE attempts > ?")) {
                ps.setString(1, "many");
                assertThatThrownBy(ps::executeQuery).isInstanceOfSatisfying(SQLException.class,
                        x -> assertThat(x.getSQLState()).isEqualTo("22023"));
            }
            failure = new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: down");
            assertThatThrownBy(() -> s.executeQuery("SHOW CALLS")).isInstanceOfSatisfying(SQLException.class,
                    x -> assertThat(x.getSQLState()).isEqualTo("XX000"));
            failure = null;
            try (ResultSet rs = s.executeQuery("SELECT call_id FROM thresher.shard_runs")) {
                assertThat(rs.next()).isTrue();
            }
        }
        assertThat(seen).allSatisfy(x -> assertThat(x.tenant()).isEqualTo("acme"));
    }
}
