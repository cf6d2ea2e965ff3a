package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.cli.Main;
import dev.thresher.server.dev.DevCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PGobject;
import org.postgresql.util.PSQLException;
import org.postgresql.util.PSQLWarning;
import picocli.CommandLine;

/**
 * The coordination journal read back three ways on the real cluster, after real calls (one that succeeds, one whose
 * guest traps, and a few more to page through): SQL over pgwire with pgjdbc (simple and extended protocol), HTTP's
 * {@code /admin/invocations} (pages without gaps or repeats), and {@code thresher journal} in-process.
 */
class JournalIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern CALL_ID = Pattern.compile("call_id=([0-9a-f-]{36})");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private static String ok;
    private static String trapped;
    private static final List<String> more = new ArrayList<>();
    private static Timestamp firstCreated;

    @BeforeAll
    static void call() throws Exception {
        Cluster.get();
        String manifest = """
                {"manifestVersion": 1, "binding": "journal_trap", "module": "m.wasm", "abiVersion": 1,
                 "selector": "SELECT region, amount FROM orders", "budgets": {"runMs": 2000}}""";
        Cluster.bindings().deploy(DevCluster.TENANT, "test", manifest.getBytes(StandardCharsets.UTF_8),
                ContractGuests.wasm("trap"));
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
            }
            ok = noticed(s);
            s.clearWarnings();
            PSQLException failure = (PSQLException) org.assertj.core.api.Assertions.catchThrowable(
                    () -> s.executeQuery("CALL BINDING journal_trap('{}')"));
            assertThat(failure.getSQLState()).isEqualTo("38000");
            Matcher m = CALL_ID.matcher(failure.getServerErrorMessage().getDetail());
            assertThat(m.find()).isTrue();
            trapped = m.group(1);
            for (int i = 0; i < 5; i++) {
                s.clearWarnings();
                try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                    assertThat(rs.next()).isTrue();
                }
                more.add(noticed(s));
            }
            try (ResultSet rs = s.executeQuery("SELECT created_at FROM thresher.invocations WHERE call_id = '" + ok + "'")) {
                assertThat(rs.next()).isTrue();
                firstCreated = rs.getTimestamp(1);
            }
        }
    }

    private static String noticed(Statement s) throws SQLException {
        SQLWarning w = s.getWarnings();
        assertThat((Object) w).isInstanceOf(PSQLWarning.class);
        return ((PSQLWarning) w).getServerErrorMessage().getDetail();
    }

    private static long orders() throws Exception {
        return Cluster.sqlReference().values().stream().mapToLong(t -> (long) t[1]).sum();
    }

    // ---- SQL

    @Test
    void sqlReadsTheInvocationsWithTheirTypesInTheSimpleProtocol() throws Exception {
        try (Connection c = Cluster.connect(1); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT * FROM thresher.invocations WHERE call_id = '" + ok + "'")) {
                assertThat(rs.getMetaData().getColumnTypeName(1)).isEqualTo("uuid");
                assertThat(rs.next()).isTrue();
                assertThat(rs.getObject("call_id")).isEqualTo(UUID.fromString(ok));
                assertThat(rs.getString("binding")).isEqualTo("revenue_by_region");
                assertThat(rs.getObject("binding_version")).isInstanceOf(Integer.class);
                assertThat(rs.getString("component_digest")).startsWith("sha256:");
                assertThat(rs.getString("state")).isEqualTo("succeeded");
                assertThat(rs.getObject("error_code")).isNull();
                assertThat(rs.getObject("slot_count")).isEqualTo(16);
                assertThat(rs.getObject("slots_published")).isEqualTo(16L);
                assertThat(rs.getInt("attempts")).isGreaterThanOrEqualTo(16);
                assertThat(rs.getObject("created_at")).isInstanceOf(Timestamp.class);
                assertThat(rs.getTimestamp("finished_at")).isAfterOrEqualTo(rs.getTimestamp("created_at"));
                assertThat(rs.getTimestamp("deadline_at")).isAfter(rs.getTimestamp("created_at"));
                assertThat(rs.getObject("duration_ms")).isInstanceOf(Long.class);
                assertThat(rs.getString("coordinator_host")).isEqualTo("node-1");
                assertThat(rs.getString("reduce_host")).isEqualTo("node-1");
                assertThat(rs.getObject("result")).isInstanceOfSatisfying(PGobject.class,
                        j -> assertThat(j.getType()).isEqualTo("json"));
                assertThat(rs.next()).isFalse();
            }
            try (ResultSet rs = s.executeQuery("SELECT state, error_code, error_name, error_category, retry_class,"
                    + " error_message FROM thresher.invocations WHERE call_id = '" + trapped + "'")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("failed");
                assertThat(rs.getObject(2)).isEqualTo(4001);
                assertThat(rs.getString(3)).isEqualTo("GUEST_TRAP");
                assertThat(rs.getString(4)).isEqualTo("GUEST_FAILURE");
                assertThat(rs.getString(5)).isEqualTo("TERMINAL");
                assertThat(rs.getString(6)).isNotBlank();
            }
            // the newest calls, a filter of every kind
            try (ResultSet rs = s.executeQuery("SHOW CALLS")) {
                List<String> ids = new ArrayList<>();
                while (rs.next()) {
                    ids.add(rs.getString("call_id"));
                }
                assertThat(ids).containsSubsequence(more.get(4), more.get(0), trapped, ok);
            }
            try (ResultSet rs = s.executeQuery("SELECT call_id FROM thresher.invocations WHERE created_at >= now() - interval"
                    + " '10 minutes' AND (binding = 'journal_trap' OR state = 'failed') AND NOT error_name IN ('GUEST_TRAP')")) {
                while (rs.next()) {
                    assertThat(rs.getString(1)).isNotEqualTo(trapped);
                }
            }
        }
    }

    @Test
    void sqlReadsEachSlotPublishedOrFailedWithItsTimings() throws Exception {
        try (Connection c = Cluster.connect(2); Statement s = c.createStatement()) {
            long rows = 0;
            Set<String> hosts = new HashSet<>();
            try (ResultSet rs = s.executeQuery("SELECT * FROM thresher.shard_runs WHERE call_id = '" + ok
                    + "' ORDER BY run_index")) {
                for (int slot = 0; slot < 16; slot++) {
                    assertThat(rs.next()).as("slot %d", slot).isTrue();
                    assertThat(rs.getObject("run_index")).isEqualTo(slot);
                    assertThat(rs.getString("wire_id")).isEqualTo(ok + "/shard/" + slot);
                    assertThat(rs.getString("state")).isEqualTo("published");
                    assertThat(rs.getObject("epoch")).isInstanceOf(Long.class);
                    assertThat(rs.getInt("attempts")).isBetween(1, 2);
                    assertThat(rs.getObject("read_micros")).isInstanceOf(Long.class);
                    assertThat(rs.getLong("guest_micros")).isPositive();
                    // guest_started_at is an upper bound of the guest's start (the leader's reading of the control
                    // database's clock plus the time since), so it may pass published_at by that reading's error
                    assertThat(rs.getTimestamp("published_at"))
                            .isAfterOrEqualTo(new java.sql.Timestamp(rs.getTimestamp("guest_started_at").getTime() - 100));
                    assertThat(rs.getTimestamp("lease_until")).isAfter(rs.getTimestamp("published_at"));
                    assertThat(rs.getObject("error_code")).isNull();
                    rows += rs.getInt("rows_read");
                    hosts.add(rs.getString("host_id"));
                }
                assertThat(rs.next()).isFalse();
            }
            assertThat(rows).as("every row of orders was read once").isEqualTo(orders());
            assertThat(hosts).containsExactlyInAnyOrder("node-1", "node-2", "node-3");

            int failed = 0;
            try (ResultSet rs = s.executeQuery("SELECT state, error_code, error_name, retry_class, error_message, host_id"
                    + " FROM thresher.shard_runs WHERE call_id = '" + trapped + "' AND state = 'failed'")) {
                while (rs.next()) {
                    failed++;
                    assertThat(rs.getObject("error_code")).isEqualTo(4001);
                    assertThat(rs.getString("error_name")).isEqualTo("GUEST_TRAP");
                    assertThat(rs.getString("retry_class")).isEqualTo("TERMINAL");
                    assertThat(rs.getString("error_message")).isNotBlank();
                }
            }
            assertThat(failed).isPositive();
        }
    }

    @Test
    void preparedStatementsBindParametersPastTheServerPrepareThreshold() throws Exception {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        p.setProperty("prepareThreshold", "2");
        try (Connection c = java.sql.DriverManager.getConnection("jdbc:postgresql://"
                + Cluster.get().nodes().get(0).pgwireAddress() + "/thresher", p);
             PreparedStatement ps = c.prepareStatement("SELECT call_id, state, slots_published, created_at"
                     + " FROM thresher.invocations WHERE call_id IN (?, ?) AND created_at >= ? ORDER BY created_at")) {
            for (int i = 0; i < 4; i++) {
                ps.setObject(1, UUID.fromString(ok));
                ps.setString(2, trapped);
                ps.setTimestamp(3, firstCreated);
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getObject(1)).isEqualTo(UUID.fromString(ok));
                    assertThat(rs.getString(2)).isEqualTo("succeeded");
                    assertThat(rs.getObject(3)).isEqualTo(16L);
                    assertThat(rs.getTimestamp(4)).isEqualTo(firstCreated);
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getObject(1)).isEqualTo(UUID.fromString(trapped));
                    assertThat(rs.next()).isFalse();
                }
            }
            try (PreparedStatement slots = c.prepareStatement(
                    "SELECT count(*) FROM thresher.shard_runs WHERE call_id = ?")) {
                slots.setString(1, ok);
                assertThatThrownBy(slots::executeQuery).isInstanceOfSatisfying(SQLException.class,
                        e -> assertThat(e.getSQLState()).isEqualTo("0A000"));
            }
        }
    }

    @Test
    void sqlRefusesWhatItDoesNotServeTypedAndTheTenantCannotBeEscaped() throws Exception {
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            for (Map.Entry<String, String> e : Map.of(
                    "SELECT tenant FROM thresher.invocations", "42703",
                    "SELECT * FROM thresher.invocations WHERE tenant = 'other' OR 1=1", "42703",
                    "SELECT * FROM thresher.invocations WHERE 1=1 OR tenant = 'other'", "0A000",
                    "SELECT * FROM invocations", "0A000",
                    "SELECT * FROM thresher.invocations WHERE call_id IN (SELECT call_id FROM invocations)", "0A000",
                    "SELECT * FROM thresher.invocations WHERE created_at > 'soon'", "22023").entrySet()) {
                assertThatThrownBy(() -> s.executeQuery(e.getKey())).as(e.getKey())
                        .isInstanceOfSatisfying(SQLException.class, x -> assertThat(x.getSQLState()).isEqualTo(e.getValue()));
            }
            // a quote in a literal is part of the value, never SQL
            try (ResultSet rs = s.executeQuery("SELECT call_id FROM thresher.invocations WHERE binding = 'x'' OR ''a'' = ''a'")) {
                assertThat(rs.next()).isFalse();
            }
            assertThatThrownBy(() -> s.executeQuery("SELECT count FROM thresher.invocations LIMIT 1"))
                    .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("42703"));
        }
    }

    @Test
    void psqlPrintsTheViewsRows() throws Exception {
        String url = "postgresql://" + DevCluster.USER + ":" + DevCluster.PASSWORD + "@"
                + Cluster.get().nodes().get(0).pgwireAddress() + "/thresher";
        Run one = psql(url, "SELECT call_id, state, slot_count, slots_published, error_name FROM thresher.invocations"
                + " WHERE call_id = '" + trapped + "' OR call_id = '" + ok + "' ORDER BY created_at");
        assertThat(one.exit()).as(one.err()).isZero();
        List<String> lines = one.out().lines().toList();
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).isEqualTo(ok + "|succeeded|16|16|");
        assertThat(lines.get(1)).startsWith(trapped + "|failed|16|").endsWith("|GUEST_TRAP");
        Run slots = psql(url, "SELECT run_index, state, host_id FROM thresher.shard_runs"
                + " WHERE call_id = '" + ok + "' AND run_index < 2 ORDER BY run_index");
        assertThat(slots.exit()).as(slots.err()).isZero();
        assertThat(slots.out().lines().toList()).hasSize(2).allSatisfy(l -> assertThat(l).contains("|published"));
        Run refused = psql(url, "SELECT * FROM thresher.invocations WHERE tenant = 'other'");
        assertThat(refused.exit()).isEqualTo(1);
        assertThat(refused.err()).contains("column \"tenant\" does not exist");
    }

    private static Run psql(String url, String sql) throws Exception {
        java.nio.file.Path out = java.nio.file.Files.createTempFile("psql", ".out");
        java.nio.file.Path err = java.nio.file.Files.createTempFile("psql", ".err");
        try {
            Process p = new ProcessBuilder("psql", "-X", "-At", url, "-c", sql).redirectOutput(out.toFile())
                    .redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
            if (!p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("psql did not finish within 60 s");
            }
            return new Run(p.exitValue(), java.nio.file.Files.readString(out).strip(),
                    java.nio.file.Files.readString(err).strip());
        } finally {
            java.nio.file.Files.deleteIfExists(out);
            java.nio.file.Files.deleteIfExists(err);
        }
    }

    // ---- HTTP

    private static String http() throws Exception {
        return Cluster.get().nodes().get(0).httpAddress();
    }

    private static HttpResponse<String> get(String pathAndQuery) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(http() + pathAndQuery)).timeout(Duration.ofSeconds(30)).GET()
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String since() {
        return URLEncoder.encode(firstCreated.toInstant().toString(), StandardCharsets.UTF_8);
    }

    @Test
    void httpListsPagesWithoutGapsOrRepeats() throws Exception {
        HttpResponse<String> all = get("/admin/invocations?since=" + since() + "&limit=1000");
        assertThat(all.statusCode()).as(all.body()).isEqualTo(200);
        JsonNode whole = JSON.readTree(all.body());
        assertThat(whole.get("tenant").asText()).isEqualTo(DevCluster.TENANT);
        assertThat(whole.get("next").isNull()).isTrue();
        List<String> expected = new ArrayList<>();
        whole.get("invocations").forEach(i -> expected.add(i.get("call_id").asText()));
        assertThat(expected).containsSubsequence(more.get(4), more.get(3), more.get(2), more.get(1), more.get(0), trapped, ok);
        assertThat(expected.get(expected.size() - 1)).isEqualTo(ok);

        List<String> paged = new ArrayList<>();
        String after = null;
        int pages = 0;
        do {
            HttpResponse<String> r = get("/admin/invocations?since=" + since() + "&limit=2"
                    + (after == null ? "" : "&after=" + after));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode page = JSON.readTree(r.body());
            assertThat(page.get("invocations").size()).isBetween(1, 2);
            page.get("invocations").forEach(i -> paged.add(i.get("call_id").asText()));
            after = page.get("next").isNull() ? null : page.get("next").asText();
            pages++;
        } while (after != null && pages < 100);
        assertThat(paged).doesNotHaveDuplicates().containsExactlyElementsOf(expected);
        assertThat(pages).isEqualTo((expected.size() + 1) / 2);

        JsonNode failed = JSON.readTree(get("/admin/invocations?binding=journal_trap&state=failed").body());
        assertThat(failed.get("invocations")).isNotEmpty();
        assertThat(failed.get("invocations").get(0).get("call_id").asText()).isEqualTo(trapped);
        assertThat(failed.get("invocations").get(0).get("error_name").asText()).isEqualTo("GUEST_TRAP");
        assertThat(failed.get("invocations").get(0).has("result")).isFalse();

        assertThat(JSON.readTree(get("/admin/invocations?tenant=other").body()).get("invocations")).isEmpty();
    }

    @Test
    void httpShowsOneCallWithItsSlotsAndRefusesTyped() throws Exception {
        HttpResponse<String> r = get("/admin/invocations/" + ok);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode shown = JSON.readTree(r.body());
        assertThat(shown.get("invocation").get("state").asText()).isEqualTo("succeeded");
        assertThat(shown.get("invocation").get("result").isObject()).isTrue();
        assertThat(shown.get("shard_runs")).hasSize(16);
        long rows = 0;
        for (int slot = 0; slot < 16; slot++) {
            JsonNode s = shown.get("shard_runs").get(slot);
            assertThat(s.get("run_index").asInt()).isEqualTo(slot);
            assertThat(s.get("partition_id").isInt()).isTrue();
            assertThat(s.get("epoch").isNumber()).isTrue();
            assertThat(s.get("host_id").asText()).startsWith("node-");
            assertThat(s.get("wire_id").asText()).isEqualTo(ok + "/shard/" + slot);
            assertThat(s.get("lease_until").asText()).endsWith("Z");
            assertThat(s.get("read_micros").isNumber()).isTrue();
            assertThat(s.get("guest_micros").isNumber()).isTrue();
            assertThat(s.get("published_at").isTextual()).isTrue();
            assertThat(s.get("error_name").isNull()).isTrue();
            rows += s.get("rows_read").asLong();
        }
        assertThat(rows).isEqualTo(orders());

        JsonNode trap = JSON.readTree(get("/admin/invocations/" + trapped).body());
        assertThat(trap.get("invocation").get("error_code").asInt()).isEqualTo(4001);
        List<JsonNode> failed = new ArrayList<>();
        trap.get("shard_runs").forEach(s -> {
            if (s.get("state").asText().equals("failed")) {
                failed.add(s);
            }
        });
        assertThat(failed).isNotEmpty().allSatisfy(s -> {
            assertThat(s.get("error_name").asText()).isEqualTo("GUEST_TRAP");
            assertThat(s.get("retry_class").asText()).isEqualTo("TERMINAL");
        });

        HttpResponse<String> unknown = get("/admin/invocations/" + UUID.randomUUID());
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(unknown.body()).get("error").get("name").asText()).isEqualTo("UNKNOWN_CALL");
        HttpResponse<String> otherTenant = get("/admin/invocations/" + ok + "?tenant=other");
        assertThat(otherTenant.statusCode()).isEqualTo(404);
        for (String bad : List.of("/admin/invocations/not-an-id", "/admin/invocations?limit=x", "/admin/invocations?after=x",
                "/admin/invocations?since=yesterday", "/admin/invocations?state=lost", "/admin/invocations?tenant=a&tenant=b")) {
            HttpResponse<String> b = get(bad);
            assertThat(b.statusCode()).as(bad).isEqualTo(400);
            assertThat(JSON.readTree(b.body()).get("error").get("code").asInt()).as(bad).isEqualTo(1004);
        }
        assertThat(get("/admin/invocations/" + ok + "/slots").statusCode()).isEqualTo(404);
        assertThat(HTTP.send(HttpRequest.newBuilder(URI.create(http() + "/admin/invocations")).GET().build(),
                HttpResponse.BodyHandlers.ofString()).statusCode()).as("the admin token is needed").isEqualTo(401);
        HttpResponse<String> post = HTTP.send(HttpRequest.newBuilder(URI.create(http() + "/admin/invocations"))
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("Allow")).hasValue("GET");
    }

    // ---- the command line

    private record Run(int exit, String out, String err) {
    }

    private static Run cli(String... args) throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new Main());
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        List<String> all = new ArrayList<>(List.of(args));
        // the node, and the dev cluster's directory whose endpoints.json names the admin token
        all.addAll(List.of("--node", http(), "--dev", Cluster.get().endpointsFile().getParent().toString()));
        int exit = cl.execute(all.toArray(String[]::new));
        return new Run(exit, out.toString(), err.toString());
    }

    @Test
    void theCommandLineListsAndShowsThroughANodesHttpRoutes() throws Exception {
        Run ls = cli("journal", "ls", "--since", firstCreated.toInstant().toString(), "--limit", "3");
        assertThat(ls.exit()).as(ls.err()).isZero();
        List<String> lines = ls.out().lines().toList();
        assertThat(lines.get(0)).startsWith("CALL_ID").contains("BINDING", "STATE", "ERROR", "SLOTS", "CREATED_AT");
        assertThat(lines).hasSize(5); // header, 3 calls, the cursor
        assertThat(lines.get(1)).startsWith(more.get(4)).contains("revenue_by_region", "succeeded", "16/16");
        Matcher next = Pattern.compile("more: --after (\\S+)").matcher(lines.get(4));
        assertThat(next.matches()).as(lines.get(4)).isTrue();

        Set<String> seen = new LinkedHashSet<>();
        Run rest = cli("journal", "ls", "--since", firstCreated.toInstant().toString(), "--after", next.group(1), "--json");
        assertThat(rest.exit()).as(rest.err()).isZero();
        JSON.readTree(rest.out()).get("invocations").forEach(i -> seen.add(i.get("call_id").asText()));
        assertThat(seen).contains(trapped, ok).doesNotContain(more.get(4), more.get(3), more.get(2));

        Run failed = cli("journal", "ls", "--binding", "journal_trap", "--state", "failed");
        assertThat(failed.out()).contains(trapped).contains("GUEST_TRAP");

        Run show = cli("journal", "show", ok);
        assertThat(show.exit()).as(show.err()).isZero();
        assertThat(show.out()).contains("call      " + ok).contains("16 of 16 published");
        List<String> slotLines = show.out().lines().dropWhile(l -> !l.startsWith("RUN")).toList();
        assertThat(slotLines.get(0)).contains("PARTITION", "EPOCH", "HOST", "ATTEMPTS", "STATE", "ROWS", "EMITS", "READ_MS",
                "GUEST_MS", "PUBLISHED_AT", "ERROR");
        assertThat(slotLines).hasSize(17);
        assertThat(slotLines.subList(1, 17)).allSatisfy(l -> assertThat(l).contains("published"));

        Run trapShow = cli("journal", "show", trapped);
        assertThat(trapShow.out()).contains("GUEST_TRAP").contains("TERMINAL");
        Run json = cli("journal", "show", trapped, "--json");
        assertThat(JSON.readTree(json.out())).isEqualTo(JSON.readTree(get("/admin/invocations/" + trapped).body()));

        Run unknown = cli("journal", "show", UUID.randomUUID().toString());
        assertThat(unknown.exit()).isNotZero();
        assertThat(unknown.err()).contains("does not exist");
    }
}
