package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.CallOutcome;
import dev.thresher.bindings.JournalScope;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.store.control.InvocationLookup;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.util.PSQLException;
import org.postgresql.util.PSQLWarning;

/**
 * A caller that may lose its connection learns its call's id before the answer: a NOTICE (pgjdbc's
 * {@link SQLWarning}, psql's stderr) once the invocation is recorded, the id alone in its detail; the id
 * is the invocation's in the control database, a failed call's error names it, {@code SET
 * thresher.call_id_notice = off} silences the notice, and {@code SHOW CALL 'id'} answers the outcome.
 */
class CallIdIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern CALL_ID = Pattern.compile("call_id=([0-9a-f-]{36})");

    @BeforeAll
    static void startCluster() throws Exception {
        Cluster.get();
    }

    /** The ids of the call notices a statement received, in order. */
    private static List<String> noticedIds(Statement s) throws SQLException {
        List<String> ids = new ArrayList<>();
        for (SQLWarning w = s.getWarnings(); w != null; w = w.getNextWarning()) {
            assertThat((Object) w).isInstanceOf(PSQLWarning.class);
            assertThat(w.getSQLState()).isEqualTo("00000");
            String id = ((PSQLWarning) w).getServerErrorMessage().getDetail();
            assertThat(((PSQLWarning) w).getServerErrorMessage().getSeverity()).isEqualTo("NOTICE");
            assertThat(w.getMessage()).contains("call " + id + " recorded");
            ids.add(id);
        }
        return ids;
    }

    private static Invocation invocation(String id) throws SQLException {
        try (Connection c = DriverManager.getConnection(Cluster.get().controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             PreparedStatement ps = c.prepareStatement(
                     "SELECT tenant, binding_name, state, error_code, result_json FROM invocations WHERE call_id = ?")) {
            ps.setObject(1, UUID.fromString(id));
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("invocation %s in the control database", id).isTrue();
                return new Invocation(rs.getString(1), rs.getString(2), rs.getString(3), (Integer) rs.getObject(4),
                        rs.getString(5));
            }
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    record Invocation(String tenant, String binding, String state, Integer errorCode, String result) {
    }

    @Test
    void theNoticeCarriesTheRecordedInvocationsIdAndShowCallAnswersItsResult() throws Exception {
        String id;
        String result;
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
            assertThat(rs.next()).isTrue();
            result = rs.getString(1);
            List<String> ids = noticedIds(s);
            assertThat(ids).hasSize(1);
            id = ids.get(0);
        }
        assertThat(UUID.fromString(id).toString()).isEqualTo(id);
        Invocation recorded = invocation(id);
        assertThat(recorded).isEqualTo(new Invocation(DevCluster.TENANT, "revenue_by_region", "succeeded", null, result));

        // from another node, simple and extended protocol
        try (Connection c = Cluster.connect(1); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SHOW CALL '" + id + "'")) {
                assertThat(rs.getMetaData().getColumnCount()).isEqualTo(9);
                assertThat(rs.getMetaData().getColumnTypeName(6)).isEqualTo("json");
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString("call_id")).isEqualTo(id);
                assertThat(rs.getString("binding")).isEqualTo("revenue_by_region");
                assertThat(rs.getString("state")).isEqualTo("succeeded");
                assertThat(rs.getString("error_code")).isNull();
                assertThat(rs.getString("error_message")).isNull();
                assertThat(JSON.readTree(rs.getString("result"))).isEqualTo(JSON.readTree(result));
                assertThat(rs.getTimestamp("created_at")).isNotNull();
                assertThat(rs.getTimestamp("finished_at")).isAfterOrEqualTo(rs.getTimestamp("created_at"));
                assertThat(rs.getTimestamp("deadline_at")).isAfter(rs.getTimestamp("created_at"));
                assertThat(rs.next()).isFalse();
            }
            assertThat((Object) s.getWarnings()).as("SHOW CALL is no call: no notice").isNull();
        }
        try (Connection c = Cluster.connect(2); PreparedStatement ps = c.prepareStatement("SHOW CALL '" + id + "'")) {
            for (int i = 0; i < 6; i++) { // past pgjdbc's server-prepare threshold
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo(id);
                    assertThat(rs.getString("result")).isEqualTo(result);
                }
            }
        }
        // the lookup behind SHOW CALL sees only the caller's tenant's calls, of the bindings it sees
        PGSimpleDataSource control = new PGSimpleDataSource();
        control.setUrl(Cluster.get().controlUrl());
        control.setUser(DevCluster.USER);
        control.setPassword(DevCluster.PASSWORD);
        InvocationLookup lookup = new InvocationLookup(control);
        assertThat(lookup.lookup(JournalScope.wholeTenant(DevCluster.TENANT), UUID.fromString(id))).get()
                .extracting(CallOutcome::state).isEqualTo("succeeded");
        assertThat(lookup.lookup(JournalScope.wholeTenant("another-tenant"), UUID.fromString(id)))
                .isEqualTo(Optional.empty());
        assertThat(lookup.lookup(JournalScope.bindings(DevCluster.TENANT, java.util.Set.of("another_binding")),
                UUID.fromString(id))).isEqualTo(Optional.empty());
    }

    @Test
    void preparedCallsAreNoticedEachTimeUnderANewId() throws Exception {
        List<String> ids = new ArrayList<>();
        try (Connection c = Cluster.connect(1); PreparedStatement ps = c.prepareStatement("CALL BINDING revenue_by_region(?)")) {
            for (int i = 0; i < 6; i++) {
                ps.setString(1, "{}");
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                }
                List<String> noticed = noticedIds(ps);
                assertThat(noticed).hasSize(1);
                ids.add(noticed.get(0));
            }
        }
        assertThat(ids).doesNotHaveDuplicates();
        for (String id : ids) {
            assertThat(invocation(id).state()).isEqualTo("succeeded");
        }
    }

    @Test
    void callIdNoticeOffSilencesTheNotice() throws Exception {
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SHOW thresher.call_id_notice")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("on");
            }
            s.execute("SET thresher.call_id_notice = off");
            try (ResultSet rs = s.executeQuery("SHOW thresher.call_id_notice")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("off");
            }
            try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
            }
            assertThat((Object) s.getWarnings()).isNull();
            assertThatThrownBy(() -> s.execute("SET thresher.call_id_notice = maybe"))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("22023"));
            s.execute("SET thresher.call_id_notice = on");
            try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
            }
            assertThat(noticedIds(s)).hasSize(1);
        }
    }

    @Test
    void showCallOfAnUnknownOrMalformedIdIsATypedErrorAndTheConnectionKeepsServing() throws Exception {
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            assertThatThrownBy(() -> s.executeQuery("SHOW CALL '" + UUID.randomUUID() + "'"))
                    .isInstanceOfSatisfying(SQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("42704");
                        assertThat(e.getMessage()).contains("does not exist");
                    });
            assertThatThrownBy(() -> s.executeQuery("SHOW CALL 'not-a-call-id'"))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("22023"));
            try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
            }
        }
    }

    @Test
    void aFailedCallsErrorNamesTheNoticedIdAndShowCallTellsTheFailure() throws Exception {
        String manifest = """
                {"manifestVersion": 1, "binding": "cid_trap", "module": "m.wasm", "abiVersion": 1,
                 "selector": "SELECT region, amount FROM orders", "budgets": {"runMs": 2000}}""";
        Cluster.bindings().deploy(DevCluster.TENANT, "test", manifest.getBytes(StandardCharsets.UTF_8),
                ContractGuests.wasm("trap"));
        String id;
        try (Connection c = Cluster.connect(2); Statement s = c.createStatement()) {
            PSQLException failure = (PSQLException) org.assertj.core.api.Assertions.catchThrowable(
                    () -> s.executeQuery("CALL BINDING cid_trap('{}')"));
            assertThat((Object) failure).isNotNull();
            assertThat(failure.getSQLState()).isEqualTo("38000");
            String detail = failure.getServerErrorMessage().getDetail();
            Matcher m = CALL_ID.matcher(detail);
            assertThat(m.find()).as(detail).isTrue();
            id = m.group(1);
            assertThat(noticedIds(s)).containsExactly(id);
            assertThat(invocation(id).state()).isEqualTo("failed");
            assertThat(invocation(id).errorCode()).isEqualTo(4001);

            try (ResultSet rs = s.executeQuery("SHOW CALL '" + id + "'")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString("state")).isEqualTo("failed");
                assertThat(rs.getString("error_code")).isEqualTo("4001");
                assertThat(rs.getString("error_message")).isNotBlank();
                assertThat(rs.getString("result")).isNull();
                assertThat(rs.getTimestamp("finished_at")).isNotNull();
            }

            // a call refused before its invocation was recorded has no id: no notice, none in the error
            s.clearWarnings();
            assertThatThrownBy(() -> s.executeQuery("CALL BINDING no_such_binding('{}')"))
                    .isInstanceOfSatisfying(PSQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("42883");
                        assertThat(e.getServerErrorMessage().getDetail()).doesNotContain("call_id");
                    });
            assertThat((Object) s.getWarnings()).isNull();
        }
    }

    @Test
    void psqlPrintsTheNoticeOnStderrAndShowsTheCall() throws Exception {
        Path psql = onPath("psql");
        if (psql == null) {
            throw new AssertionError("psql is not on the PATH");
        }
        String url = "postgresql://" + DevCluster.USER + ":" + DevCluster.PASSWORD + "@"
                + Cluster.get().nodes().get(0).pgwireAddress() + "/thresher";
        Run call = psql(psql, url, "CALL BINDING revenue_by_region('{}')");
        assertThat(call.exit()).as(call.err()).isZero();
        Matcher m = Pattern.compile("NOTICE:  call ([0-9a-f-]{36}) recorded\\s+DETAIL:  ([0-9a-f-]{36})").matcher(call.err());
        assertThat(m.find()).as(call.err()).isTrue();
        String id = m.group(1);
        assertThat(m.group(2)).isEqualTo(id);
        assertThat(JSON.readTree(call.out())).isEqualTo(JSON.readTree(invocation(id).result()));

        Run show = psql(psql, url, "SHOW CALL '" + id + "'");
        assertThat(show.exit()).as(show.err()).isZero();
        assertThat(show.out()).startsWith(id + "|revenue_by_region|succeeded|||" + call.out() + "|");
        assertThat(show.err()).isEmpty();
    }

    record Run(int exit, String out, String err) {
    }

    private static Run psql(Path psql, String url, String sql) throws Exception {
        Path out = Files.createTempFile("psql", ".out");
        Path err = Files.createTempFile("psql", ".err");
        try {
            Process p = new ProcessBuilder(psql.toString(), "-X", "-At", url, "-c", sql)
                    .redirectOutput(out.toFile()).redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("psql did not finish within 60 s");
            }
            return new Run(p.exitValue(), Files.readString(out).strip(), Files.readString(err).strip());
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    private static Path onPath(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path candidate = Path.of(dir, name);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }
}
