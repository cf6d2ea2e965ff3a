package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.examples.ExampleComponents;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.cli.Main;
import dev.thresher.server.dev.DevCluster;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Deploying component packages on the real cluster: the sample directory of {@code examples/} deployed by
 * {@code thresher deploy} (again: unchanged), every kind of bad manifest, module and selector refused with its
 * typed error before anything is stored, and a binding replaced and rolled back while 8 threads call it, each
 * result wholly from one version.
 */
class DeployIT {
    private static final Path SAMPLE = Path.of(System.getProperty("thresher.repo", "..")).toAbsolutePath().normalize()
            .resolve("examples/revenue_by_region");
    private static DevCluster cluster;
    private static BindingAdmin bindings;

    @BeforeAll
    static void open() throws Exception {
        cluster = Cluster.get();
        bindings = Cluster.bindings();
    }

    private static String manifest(String binding, int abi, String selector) {
        return """
                {"manifestVersion": 1, "binding": "%s", "module": "m.wasm", "abiVersion": %d, "selector": "%s"}"""
                .formatted(binding, abi, selector);
    }

    private static void refused(String manifest, byte[] module, ErrorCode code, String... says) {
        assertThatThrownBy(() -> bindings.deploy(DevCluster.TENANT, "test", manifest.getBytes(StandardCharsets.UTF_8), module))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).as(e.getMessage()).isEqualTo(code);
                    for (String s : says) {
                        assertThat(e.getMessage()).contains(s);
                    }
                });
    }

    @Test
    void theSampleDirectoryDeploysAndDeployingItAgainChangesNothing() throws Exception {
        // the dev cluster deployed the sample from the same package: deploying its directory again changes nothing
        Path dev = cluster.endpointsFile().getParent();
        BindingAdmin.Version deployed = bindings.show(DevCluster.TENANT, "revenue_by_region");
        assertThat(new CommandLine(new Main()).execute("deploy", SAMPLE.toString(), "--dev", dev.toString())).isZero();
        assertThat(bindings.show(DevCluster.TENANT, "revenue_by_region")).isEqualTo(deployed);
        assertThat(deployed.manifestDigest()).startsWith("sha256:");
        assertThat(deployed.abiVersion()).isEqualTo(2);
        assertThat(deployed.deployedBy()).isEqualTo("dev-cluster");
        assertThat(bindings.manifest(deployed.manifestDigest())).get().asString().contains("\"abiVersion\": 2");

        BindingAdmin.Deployed again = bindings.deployDir(DevCluster.TENANT, "test", SAMPLE);
        assertThat(again.unchanged()).isTrue();
        assertThat(again.version()).isEqualTo(deployed.version());

        // the same package over HTTP (its manifest a JSON object, keys in another order) and over SQL (on one line):
        // the same manifest, so unchanged whatever path brought it
        BindingAdmin.Package pkg = BindingAdmin.read(SAMPLE, Limits.DEFAULTS);
        ObjectMapper json = new ObjectMapper();
        JsonNode manifest = json.readTree(pkg.manifest());
        com.fasterxml.jackson.databind.node.ObjectNode reordered = json.createObjectNode();
        java.util.List<String> keys = new java.util.ArrayList<>();
        manifest.fieldNames().forEachRemaining(keys::add);
        java.util.Collections.reverse(keys);
        keys.forEach(k -> reordered.set(k, manifest.get(k)));
        com.fasterxml.jackson.databind.node.ObjectNode body = json.createObjectNode();
        body.set("manifest", reordered);
        body.put("module", java.util.Base64.getEncoder().encodeToString(pkg.module()));
        try (java.net.http.HttpClient client = java.net.http.HttpClient.newHttpClient()) {
            var viaHttp = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(cluster.nodes().get(1)
                    .httpAddress() + "/admin/bindings")).header("Authorization", "Bearer " + cluster.adminToken())
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body.toString())).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertThat(json.readTree(viaHttp.body()).get("unchanged").asBoolean()).as(viaHttp.body()).isTrue();
            assertThat(json.readTree(viaHttp.body()).get("version").asInt()).isEqualTo(deployed.version());
        }
        try (Connection c = Cluster.connect(1); Statement s = c.createStatement()) {
            s.execute("CREATE BINDING WITH MANIFEST '" + manifest.toString().replace("'", "''") + "' MODULE '\\x"
                    + java.util.HexFormat.of().formatHex(pkg.module()) + "'");
        }
        assertThat(bindings.show(DevCluster.TENANT, "revenue_by_region")).isEqualTo(deployed);
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
            assertThat(rs.next()).isTrue();
            JsonNode result = new ObjectMapper().readTree(rs.getString(1));
            Cluster.sqlReference().forEach((region, t) ->
                    assertThat(result.get(region).get("count").asLong()).isEqualTo((long) t[1]));
        }
    }

    @Test
    void badManifestsModulesAndSelectorsAreRefusedBeforeAnythingIsStored() throws Exception {
        byte[] sample = ExampleComponents.revenueByRegionWasm();
        refused("{\"manifestVersion\": 3, \"binding\": \"9x\", \"abiVersion\": 3, \"colour\": 1}", sample,
                ErrorCode.INVALID_CONFIGURATION, "manifest.manifestVersion: must be 1 or 2", "manifest.binding: '9x' is not a name",
                "manifest.abiVersion: must be 1 or 2", "manifest.colour: unknown field", "manifest.selector: missing",
                "manifest.module: missing");
        refused("[1]", sample, ErrorCode.INVALID_CONFIGURATION, "must be a JSON object");

        // selectors: functions, trailing statements, comments, subqueries, unknown columns and tables
        for (String selector : List.of("SELECT region, amount FROM orders WHERE lower(region) = 'x'",
                "SELECT region, amount FROM orders; DELETE FROM orders", "SELECT region, amount FROM orders -- x",
                "SELECT region, amount FROM orders WHERE amount IN (SELECT 1)")) {
            refused(manifest("bad_sel", 2, selector), sample, ErrorCode.INVALID_SELECTOR);
        }
        refused(manifest("bad_sel", 2, "SELECT region, price FROM orders"), sample, ErrorCode.INVALID_SELECTOR, "price");
        refused(manifest("bad_sel", 2, "SELECT region, amount FROM nowhere"), sample, ErrorCode.INVALID_SELECTOR,
                "table nowhere does not exist");

        // modules: the declared ABI version's exports, imports outside the set or with another type, memory
        refused(manifest("bad_mod", 1, "SELECT region, amount FROM orders"), sample, ErrorCode.GUEST_ABI_MISMATCH,
                "export run: has type (i32) -> (i32); guest ABI 1 wants (i32, i32) -> (i32)");
        String guest = """
                (module
                  (import "thresher" "emit" (func (param i32 i32) (result i32)))
                  (import "env" "now" (func (result i64)))
                  (import "wasi_snapshot_preview1" "path_unlink_file" (func (param i32 i32 i32) (result i32)))
                  (memory (export "memory") 5000)
                  (func (export "thresher_abi_version") (result i32) (i32.const 2))
                  (func (export "run") (param i32) (result i32) (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""";
        refused(manifest("bad_mod", 2, "SELECT region, amount FROM orders"), guest.getBytes(StandardCharsets.UTF_8),
                ErrorCode.GUEST_INVALID_MODULE, "import thresher.emit: has type (i32, i32) -> (i32); the host provides (i32, i32, f64) -> (i32)",
                "import env.now: module 'env' is not provided", "import wasi_snapshot_preview1.path_unlink_file: not a function",
                "memory: starts at 5000 pages");
        refused(manifest("bad_mod", 2, "SELECT region, amount FROM orders"), "not wasm (".getBytes(StandardCharsets.UTF_8),
                ErrorCode.GUEST_INVALID_MODULE, "neither a wasm binary");
        refused(manifest("bad_mod", 2, "SELECT region, amount FROM orders"), new byte[Limits.DEFAULTS.packageMaxBytes() + 1],
                ErrorCode.PAYLOAD_TOO_LARGE, "limits.packageMaxBytes");

        assertThat(bindings.list(DevCluster.TENANT)).extracting(BindingAdmin.Version::binding)
                .doesNotContain("bad_sel", "bad_mod", "bad_budget");
    }

    private static String withBudgets(String binding, String budgets) {
        return """
                {"manifestVersion": 1, "binding": "%s", "module": "m.wasm", "abiVersion": 2,
                 "selector": "SELECT region, amount FROM orders", "budgets": %s}""".formatted(binding, budgets);
    }

    @Test
    void aDeployHasADeadlineLikeACallAndEndsTypedWhenTheControlDatabaseHoldsIt() throws Exception {
        // kills: a deploy's database waits bounded only by the pool's own timeouts (a deploy behind a lock waited as
        // long as the lock was held), a deadline reported as STORE_UNAVAILABLE, anything written by the failed deploy
        Limits shortDeadline = Limits.fromProperties(Map.of("limits.callDeadlineMs", "1500"));
        BindingAdmin bounded = new BindingAdmin(Cluster.tables(), shortDeadline);
        byte[] sample = ExampleComponents.revenueByRegionWasm();
        byte[] manifest = withBudgets("deploy_deadline", "{}").getBytes(StandardCharsets.UTF_8);
        try (Connection lock = java.sql.DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = lock.createStatement()) {
            lock.setAutoCommit(false);
            s.execute("LOCK TABLE bindings IN ACCESS EXCLUSIVE MODE");
            long t0 = System.nanoTime();
            // on a thread of its own: a deploy that waited for the lock would hold this test until it ends
            java.util.concurrent.CompletableFuture<BindingAdmin.Deployed> deploying = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> bounded.deploy(DevCluster.TENANT, "test", manifest, sample));
            assertThatThrownBy(() -> deploying.get(10, TimeUnit.SECONDS))
                    .as("ended, typed, within 10 s").isInstanceOf(java.util.concurrent.ExecutionException.class)
                    .cause().isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).as(e.getMessage()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
                        assertThat(e.getMessage()).contains("deploy: its deadline of 1500 ms", "again is safe");
                    });
            long millis = (System.nanoTime() - t0) / 1_000_000;
            assertThat(millis).as("answered at its deadline, not when the lock ends").isLessThan(1500 + 1000);
            assertThatThrownBy(() -> bounded.rollback(DevCluster.TENANT, "revenue_by_region", 1, "test"))
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.code()).as(e.getMessage()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
            lock.rollback();
        }
        assertThatThrownBy(() -> bindings.show(DevCluster.TENANT, "deploy_deadline"))
                .as("nothing deployed by the deploy that ran out of time").isInstanceOf(ThresherException.class);
        BindingAdmin.Deployed later = bounded.deploy(DevCluster.TENANT, "test", manifest, sample);
        assertThat(later.version()).as("the same deploy, once the database answers").isEqualTo(1);
    }

    @Test
    void budgetsAreCheckedAtDeployAgainstTheNodesLimitsAndPinnedByEachVersion() throws Exception {
        byte[] sample = ExampleComponents.revenueByRegionWasm(); // memory of at most 256 pages (16 MiB)
        refused(withBudgets("bad_budget", "{\"cpu\": 1, \"runMs\": 0, \"emits\": 1.5}"), sample,
                ErrorCode.INVALID_CONFIGURATION, "manifest.budgets.cpu: unknown budget",
                "manifest.budgets.runMs: must be a positive integer, was 0", "manifest.budgets.emits: must be a positive integer");
        refused(withBudgets("bad_budget", "[1]"), sample, ErrorCode.INVALID_CONFIGURATION, "manifest.budgets: must be an object");
        refused(withBudgets("bad_budget", "{\"runMs\": 60000, \"emits\": 65}"), sample, ErrorCode.INVALID_CONFIGURATION,
                "manifest.budgets.runMs: at most 30000 on this cluster (limits.maxCallDeadlineMs), was 60000",
                "manifest.budgets.emits: at most 64 on this cluster (limits.emitsPerInvocation), was 65");
        refused(withBudgets("bad_budget", "{\"memoryBytes\": 1048576, \"moduleBytes\": 100}"), sample,
                ErrorCode.INVALID_CONFIGURATION, "manifest.budgets.memoryBytes: the module's memory may grow to 16777216 bytes,"
                        + " more than 1048576", "manifest.budgets.moduleBytes: the module has " + sample.length + " bytes");
        String noMaximum = """
                (module
                  (memory (export "memory") 1)
                  (func (export "thresher_abi_version") (result i32) (i32.const 2))
                  (func (export "run") (param i32) (result i32) (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""";
        refused(withBudgets("bad_budget", "{\"memoryBytes\": 1048576}"), noMaximum.getBytes(StandardCharsets.UTF_8),
                ErrorCode.INVALID_CONFIGURATION, "the module's memory declares no maximum; declare one of at most 16 pages");

        BindingAdmin.Deployed budgeted = bindings.deploy(DevCluster.TENANT, "test", withBudgets("budgeted",
                "{\"runMs\": 5000, \"memoryBytes\": 16777216, \"emits\": 64}").getBytes(StandardCharsets.UTF_8), sample);
        BindingAdmin.Deployed open = bindings.deploy(DevCluster.TENANT, "test", withBudgets("budgeted", "{}")
                .getBytes(StandardCharsets.UTF_8), sample);
        bindings.rollback(DevCluster.TENANT, "budgeted", budgeted.version(), "test");
        try (Connection c = java.sql.DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT version, budget_run_ms, budget_memory_bytes, budget_emits, budget_input_bytes"
                     + " FROM bindings WHERE name = 'budgeted' ORDER BY version")) {
            List<String> rows = new java.util.ArrayList<>();
            while (rs.next()) {
                rows.add(rs.getInt(1) + ":" + rs.getString(2) + "," + rs.getString(3) + "," + rs.getString(4) + "," + rs.getString(5));
            }
            assertThat(rows).containsExactly(budgeted.version() + ":5000,16777216,64,null", open.version() + ":null,null,null,null",
                    (open.version() + 1) + ":5000,16777216,64,null");
        }
        // the budgeted binding answers as the sample does: its budgets leave room for it
        try (Connection c = Cluster.connect(1); Statement s = c.createStatement()) {
            assertThat(total(s, "budgeted")).isEqualTo(Cluster.sqlReference().values().stream().mapToLong(t -> (long) t[1]).sum());
        }
    }

    @Test
    void replacingAndRollingBackABindingWhileEightThreadsCallItNeverMixesVersions() throws Exception {
        byte[] wasm = ExampleComponents.revenueByRegionWasm();
        String all = "SELECT region, amount FROM orders";
        String some = "SELECT region, amount FROM orders WHERE amount >= 500";
        BindingAdmin.Deployed first = bindings.deploy(DevCluster.TENANT, "test", manifest("swap", 2, all).getBytes(StandardCharsets.UTF_8), wasm);
        BindingAdmin.Deployed second = bindings.deploy(DevCluster.TENANT, "test", manifest("swap", 2, some).getBytes(StandardCharsets.UTF_8), wasm);
        assertThat(second.version()).isEqualTo(first.version() + 1);
        // the total count tells the versions apart: every row, or those of amount >= 500
        assertThat(new CommandLine(new Main()).execute("binding", "rollback", "swap", "--to", Integer.toString(first.version()),
                "--dev", cluster.endpointsFile().getParent().toString())).isZero();
        long everyRow = Cluster.sqlReference().values().stream().mapToLong(t -> (long) t[1]).sum();
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            assertThat(total(s, "swap")).isEqualTo(everyRow); // the rollback's version pins the first's selector
        }
        long expectedSome = 0;
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = java.sql.DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM orders WHERE amount >= 500")) {
                rs.next();
                expectedSome += rs.getLong(1);
            }
        }
        assertThat(expectedSome).isBetween(1L, everyRow - 1);

        Map<Long, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicInteger stale = new AtomicInteger();
        List<String> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService callers = Executors.newFixedThreadPool(8);
        CountDownLatch started = new CountDownLatch(8);
        try {
            List<Future<?>> running = new java.util.ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int node = t % 3;
                running.add(callers.submit(() -> {
                    try (Connection c = Cluster.connect(node); Statement s = c.createStatement()) {
                        started.countDown();
                        while (!stop.get()) {
                            long t0 = System.nanoTime();
                            try {
                                seen.computeIfAbsent(total(s, "swap"), k -> new AtomicInteger()).incrementAndGet();
                            } catch (java.sql.SQLException e) {
                                failures.add((System.nanoTime() - t0) / 1_000_000 + " ms: " + e.getMessage().lines().findFirst().orElse(""));
                                assertThat(e.getMessage()).as("only a stale target may fail a call").contains("thresher_code=7001");
                                stale.incrementAndGet();
                            }
                        }
                    }
                    return null;
                }));
            }
            assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
            // the calls are warm (the first ones of a JVM compile the guest): every thread has had answers
            awaitResults(seen, everyRow, 8);
            for (int round = 0; round < 6; round++) {
                long expected = round % 2 == 0 ? expectedSome : everyRow;
                int before = seen.getOrDefault(expected, new AtomicInteger()).get();
                if (round % 2 == 0) {
                    bindings.deploy(DevCluster.TENANT, "test", manifest("swap", 2, some).getBytes(StandardCharsets.UTF_8), wasm);
                } else {
                    bindings.rollback(DevCluster.TENANT, "swap", first.version(), "test");
                }
                awaitResults(seen, expected, before + 8); // answers of the new version, while the threads go on calling
            }
            stop.set(true);
            for (Future<?> f : running) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            stop.set(true);
            callers.shutdownNow();
        }
        assertThat(seen.keySet()).as("every result counts every row or exactly the rows of amount >= 500")
                .isSubsetOf(everyRow, expectedSome);
        assertThat(seen.keySet()).as("results %s, stale refusals %d %s, versions %s", seen, stale.get(), failures,
                bindings.history(DevCluster.TENANT, "swap")).containsExactlyInAnyOrder(everyRow, expectedSome);
        assertThat(bindings.history(DevCluster.TENANT, "swap")).filteredOn(v -> v.note() != null)
                .allSatisfy(v -> assertThat(v.note()).isEqualTo("rollback to version " + first.version()));
    }

    @Test
    void psqlAndHttpDeployAndRollBackToo() throws Exception {
        byte[] wasm = ExampleComponents.revenueByRegionWasm();
        String hex = java.util.HexFormat.of().formatHex(wasm);
        try (Connection c = Cluster.connect(1); Statement s = c.createStatement()) {
            s.execute("CREATE BINDING WITH MANIFEST '" + manifest("via_sql", 2, "SELECT region, amount FROM orders")
                    + "' MODULE '\\x" + hex + "'");
            s.execute("CREATE BINDING WITH MANIFEST '" + manifest("via_sql", 2, "SELECT region, amount FROM orders WHERE amount < 100")
                    .replace("'", "''") + "' MODULE '" + java.util.Base64.getEncoder().encodeToString(wasm) + "'");
            assertThat(bindings.history(DevCluster.TENANT, "via_sql")).extracting(BindingAdmin.Version::deployedBy)
                    .containsOnly("pgwire:" + DevCluster.USER);
            s.execute("ALTER BINDING via_sql ROLLBACK TO VERSION 1");
            assertThat(bindings.show(DevCluster.TENANT, "via_sql").note()).isEqualTo("rollback to version 1");
            assertThatThrownBy(() -> s.execute("CREATE BINDING WITH MANIFEST '{}' MODULE '00'"))
                    .hasMessageContaining("manifest.binding: missing");
        }
        String base = cluster.nodes().get(2).httpAddress() + "/admin/bindings";
        ObjectMapper json = new ObjectMapper();
        try (java.net.http.HttpClient client = java.net.http.HttpClient.newHttpClient()) {
            String body = "{\"manifest\": " + manifest("via_http", 2, "SELECT region, amount FROM orders") + ", \"module\": \""
                    + java.util.Base64.getEncoder().encodeToString(wasm) + "\"}";
            var created = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base)).header("Authorization", "Bearer " + cluster.adminToken())
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
            assertThat(json.readTree(created.body()).get("version").asInt()).isEqualTo(1);
            var again = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base)).header("Authorization", "Bearer " + cluster.adminToken())
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertThat(json.readTree(again.body()).get("unchanged").asBoolean()).isTrue();
            var shown = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/via_http")).header("Authorization", "Bearer " + cluster.adminToken()).GET().build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            JsonNode v = json.readTree(shown.body());
            assertThat(v.at("/version/deployedBy").asText()).isEqualTo("http");
            assertThat(v.at("/manifest/binding").asText()).isEqualTo("via_http");
            assertThat(v.at("/version/deployedAt").asText()).endsWith("Z");
            var same = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/via_http/rollback")).header("Authorization", "Bearer " + cluster.adminToken())
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"to\": 1}")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertThat(same.statusCode()).as(same.body()).isEqualTo(200);
            assertThat(json.readTree(same.body()).get("unchanged").asBoolean()).as("a rollback to the current version")
                    .isTrue();
            var history = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/via_http/history")).header("Authorization", "Bearer " + cluster.adminToken()).GET().build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertThat(json.readTree(history.body())).hasSize(1);
        }
    }

    /** Waits (at most 60 s) until at least {@code n} answers counted {@code total} rows. */
    private static void awaitResults(Map<Long, AtomicInteger> seen, long total, int n) {
        Await.until(() -> n + " answers counting " + total + " rows; seen " + seen, Duration.ofSeconds(60),
                Duration.ofMillis(5), () -> seen.getOrDefault(total, new AtomicInteger()).get() >= n);
    }

    /** The total count of the sample's result: how many rows the version that answered saw. */
    private static long total(Statement s, String binding) throws Exception {
        try (ResultSet rs = s.executeQuery("CALL BINDING " + binding + "('{}')")) {
            rs.next();
            long n = 0;
            for (JsonNode region : new ObjectMapper().readTree(rs.getString(1))) {
                n += region.get("count").asLong();
            }
            return n;
        }
    }
}
