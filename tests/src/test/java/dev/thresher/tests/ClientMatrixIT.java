package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.util.PGobject;

/**
 * The clients people use, unmodified, against the real cluster (docs/clients.md): psql, pgjdbc in every query mode,
 * HikariCP, node-postgres with pg-cursor, psycopg 3, psycopg2, asyncpg and pgbench. Each calls the sample binding and
 * gets the SQL reference, and gets a failing call's SQLSTATE ({@code 42883} for an unknown binding) with the session
 * still serving. Every client connects to {@link #target()}.
 */
class ClientMatrixIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BINDING = "revenue_by_region";
    private static final String CALL = "CALL BINDING " + BINDING + "('{}')";
    private static final String FAILING = "no_such_binding";
    private static final String UNKNOWN_BINDING = "42883";
    private static Map<String, double[]> reference;

    /**
     * The one connection target of the matrix: a node of the test cluster, logging in with SCRAM-SHA-256 (the dev
     * cluster's only method) over TLS, the server's certificate verified against the dev cluster's own authority
     * ({@code sslmode=verify-full}).
     */
    static ClientTarget target() throws Exception {
        return ClientTarget.of(Cluster.get().nodes().get(0), Map.of("sslmode", "verify-full",
                "sslrootcert", Cluster.get().caCertFile().toString()));
    }

    @BeforeAll
    static void startCluster() throws Exception {
        Cluster.get();
        reference = Cluster.sqlReference();
    }

    // ---- psql

    @Test
    void psqlCallsAndRunsSeveralStatementsInOneQuery() throws Exception {
        Run plain = psql(List.of("-c", CALL), null);
        assertThat(plain.exit()).as(plain.stderr()).isZero();
        assertReference(plain.stdout().strip());

        Run several = psql(List.of("-c", "SET thresher.call_deadline_ms = 20000; " + CALL
                + "; SHOW thresher.call_deadline_ms"), null);
        assertThat(several.exit()).as(several.stderr()).isZero();
        List<String> lines = several.stdout().strip().lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines.get(0)).isEqualTo("SET");
        assertReference(lines.get(1));
        assertThat(lines.get(2)).isEqualTo("20000");

        Run failing = psql(List.of("-c", "CALL BINDING " + FAILING + "('{}')"), null);
        assertThat(failing.exit()).isEqualTo(1);
        assertThat(failing.stderr()).contains("ERROR:  " + UNKNOWN_BINDING + ":");
    }

    @Test
    void psqlDescribesAResultAndItsCatalogMetaCommandsFailPolitely() throws Exception {
        String script = String.join("\n", CALL + " \\gdesc", "\\d", "\\dt", "\\l", "SELECT version();",
                "SHOW server_version_num", "\\g", CALL + ";", "");
        Run run = psql(List.of(), script);
        assertThat(run.exit()).as(run.stderr()).isZero();
        List<String> lines = run.stdout().strip().lines().toList();
        assertThat(lines).hasSize(4);
        assertThat(lines.get(0)).isEqualTo("result|json");
        assertThat(lines.get(1)).startsWith("PostgreSQL 16.0");
        assertThat(lines.get(2)).isEqualTo("160000");
        assertReference(lines.get(3));
        // \d, \dt and \l read the system catalogs: refused, and the session goes on
        assertThat(run.stderr().lines().filter(l -> l.startsWith("ERROR:  0A000:"))).hasSize(3);
    }

    // ---- pgjdbc and HikariCP

    static Stream<Arguments> pgjdbcModes() {
        List<Arguments> modes = new ArrayList<>();
        for (String mode : List.of("extended", "extendedForPrepared", "extendedCacheEverything", "simple")) {
            for (String threshold : List.of("0", "5", "-1")) {
                for (String binary : List.of("true", "false")) {
                    modes.add(Arguments.of(mode, threshold, binary));
                }
            }
        }
        return modes.stream();
    }

    @ParameterizedTest(name = "preferQueryMode={0} prepareThreshold={1} binaryTransfer={2}")
    @MethodSource("pgjdbcModes")
    void pgjdbcInEveryQueryMode(String mode, String prepareThreshold, String binaryTransfer) throws Exception {
        Properties p = target().jdbcProperties();
        p.setProperty("preferQueryMode", mode);
        p.setProperty("prepareThreshold", prepareThreshold);
        p.setProperty("binaryTransfer", binaryTransfer);
        try (Connection c = DriverManager.getConnection(target().jdbcUrl(), p)) {
            try (PreparedStatement ps = c.prepareStatement("CALL BINDING " + BINDING + "(?)")) {
                for (int i = 0; i < 6; i++) { // past the prepare threshold
                    ps.setObject(1, "{\"i\": " + i + "}", Types.OTHER);
                    try (ResultSet rs = ps.executeQuery()) {
                        assertThat(rs.next()).isTrue();
                        assertReference(rs.getString(1));
                        assertThat(rs.getObject(1)).isInstanceOf(PGobject.class);
                        ResultSetMetaData md = rs.getMetaData();
                        assertThat(md.getColumnName(1)).isEqualTo("result");
                        assertThat(md.getColumnTypeName(1)).isEqualTo("json");
                        assertThat(md.getColumnType(1)).isEqualTo(Types.OTHER);
                        assertThat(md.getColumnClassName(1)).isEqualTo(PGobject.class.getName());
                        assertThat(rs.next()).isFalse();
                    }
                }
                PGobject jsonb = new PGobject();
                jsonb.setType("jsonb");
                jsonb.setValue("{\"from\": \"pgjdbc\"}");
                ps.setObject(1, jsonb);
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertReference(rs.getString("result"));
                }
            }
            try (Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.executeQuery("CALL BINDING " + FAILING + "('{}')"))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo(UNKNOWN_BINDING));
                try (ResultSet rs = s.executeQuery("SELECT 1")) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getInt(1)).isEqualTo(1);
                }
                assertThatThrownBy(() -> c.getMetaData().getTables(null, null, "%", null))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("0A000"));
                try (ResultSet rs = s.executeQuery(CALL)) {
                    assertThat(rs.next()).isTrue();
                    assertReference(rs.getString(1));
                }
            }
        }
    }

    @ParameterizedTest(name = "connectionTestQuery={0}")
    @ValueSource(strings = {"", "SELECT 1"})
    void hikariPoolsServeCalls(String connectionTestQuery) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(target().jdbcUrl());
        config.setDataSourceProperties(target().jdbcProperties());
        config.setMaximumPoolSize(2);
        config.setMinimumIdle(2);
        config.setConnectionTimeout(20_000);
        if (!connectionTestQuery.isEmpty()) {
            config.setConnectionTestQuery(connectionTestQuery);
        }
        try (HikariDataSource pool = new HikariDataSource(config)) {
            for (int i = 0; i < 4; i++) {
                try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                    if (i == 1) {
                        assertThatThrownBy(() -> s.executeQuery("CALL BINDING " + FAILING + "('{}')"))
                                .isInstanceOfSatisfying(SQLException.class,
                                        e -> assertThat(e.getSQLState()).isEqualTo(UNKNOWN_BINDING));
                    }
                    try (ResultSet rs = s.executeQuery(CALL)) {
                        assertThat(rs.next()).isTrue();
                        assertReference(rs.getString(1));
                    }
                }
            }
            // the pool fills itself to minimumIdle in the background (each connection a TLS handshake and a SCRAM
            // exchange, each validated with the test query when there is one): wait for it, bounded
            Await.until("the pool filled to its minimumIdle of 2", java.time.Duration.ofSeconds(20),
                    () -> pool.getHikariPoolMXBean().getTotalConnections(), total -> total >= 2);
            assertThat(pool.getHikariPoolMXBean().getTotalConnections()).isEqualTo(2);
        }
    }

    // ---- node-postgres

    @Test
    void nodePostgresQueriesPreparedStatementsAndCursors() throws Exception {
        Path dir = NodePostgresIT.provision();
        // never the test JVM's own stdio: Node.js makes inherited pipes non-blocking
        Run run = run(List.of("node", "matrix.js", target().url(), BINDING, FAILING), dir, null);
        assertThat(run.exit()).as("%s%n%s", run.stdout(), run.stderr()).isZero();
        JsonNode r = JSON.readTree(run.stdout());
        assertReference(r.get("simple"));
        assertReference(r.get("parameterized"));
        assertThat(r.get("prepared")).hasSize(3).allSatisfy(ClientMatrixIT::assertReference);
        assertReference(r.get("cursor"));
        assertThat(r.get("cursorRows").asInt()).isEqualTo(1);
        assertThat(r.get("cursorAfter").asInt()).isZero();
        assertThat(r.get("error").asText()).isEqualTo(UNKNOWN_BINDING);
        assertReference(r.get("afterError"));
    }

    // ---- Python

    @Test
    void psycopgInTextBinaryPreparedAndPipelineModes() throws Exception {
        JsonNode r = python("psycopg");
        for (String field : List.of("simple", "parameterized", "jsonb", "binary", "afterError", "transaction")) {
            assertReference(r.get(field));
        }
        assertThat(r.get("prepared")).hasSize(3).allSatisfy(ClientMatrixIT::assertReference);
        assertThat(r.get("pipeline")).hasSize(2).allSatisfy(ClientMatrixIT::assertReference);
        assertThat(r.get("error").asText()).isEqualTo(UNKNOWN_BINDING);
    }

    @Test
    void psycopg2() throws Exception {
        JsonNode r = python("psycopg2");
        for (String field : List.of("simple", "parameterized", "afterError")) {
            assertReference(r.get(field));
        }
        assertThat(r.get("error").asText()).isEqualTo(UNKNOWN_BINDING);
    }

    @Test
    void asyncpgConnectionsPreparedStatementsAndItsPool() throws Exception {
        JsonNode r = python("asyncpg");
        for (String field : List.of("fetch", "parameterized", "afterError")) {
            assertReference(r.get(field));
        }
        assertThat(r.get("prepared")).hasSize(3).allSatisfy(ClientMatrixIT::assertReference);
        assertThat(r.get("pool")).hasSize(3).allSatisfy(ClientMatrixIT::assertReference);
        assertThat(r.get("error").asText()).isEqualTo(UNKNOWN_BINDING);
    }

    // ---- pgbench

    @ParameterizedTest(name = "-M {0}")
    @ValueSource(strings = {"simple", "extended", "prepared"})
    void pgbenchRunsACustomScriptWithoutFailures(String protocol) throws Exception {
        Path script = resource("call.pgbench");
        Run run = run(List.of("pgbench", "-n", "-M", protocol, "-c", "2", "-j", "1", "-t", "10", "-f", script.toString()),
                null, null);
        assertThat(run.exit()).as("%s%n%s", run.stdout(), run.stderr()).isZero();
        assertThat(run.stdout()).contains("number of transactions actually processed: 20/20")
                .contains("number of failed transactions: 0 (0.000%)");
    }

    // ---- helpers

    private record Run(int exit, String stdout, String stderr) {
    }

    private static Run psql(List<String> arguments, String stdin) throws Exception {
        List<String> command = new ArrayList<>(List.of("psql", "-X", "-At", "-v", "VERBOSITY=verbose"));
        command.addAll(arguments);
        return run(command, null, stdin);
    }

    private static JsonNode python(String client) throws Exception {
        Run run = run(List.of("/usr/bin/python3", resource("python_clients.py").toString(), client, BINDING, FAILING),
                null, null);
        assertThat(run.exit()).as("%s (Debian's python3-psycopg, python3-psycopg2 and python3-asyncpg; .ci/run installs"
                + " them)%n%s%n%s", client, run.stdout(), run.stderr()).isZero();
        return JSON.readTree(run.stdout());
    }

    private static Path resource(String name) {
        return Path.of("src", "test", "resources", "clients", name).toAbsolutePath();
    }

    /** Runs a client with the target's libpq environment, bounded to 120 s, its output in files. */
    private static Run run(List<String> command, Path dir, String stdin) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command);
        if (dir != null) {
            pb.directory(dir.toFile());
        }
        pb.environment().putAll(target().libpqEnvironment());
        Path out = Files.createTempFile("client", ".out");
        Path err = Files.createTempFile("client", ".err");
        Path in = Files.createTempFile("client", ".in");
        try {
            Files.writeString(in, stdin == null ? "" : stdin, StandardCharsets.UTF_8);
            pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(in.toFile());
            Process p = pb.start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(command.get(0) + " did not finish within 120 s: "
                        + Files.readString(err, StandardCharsets.UTF_8));
            }
            return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            for (Path f : List.of(out, err, in)) {
                Files.deleteIfExists(f);
            }
        }
    }

    private static void assertReference(String json) {
        try {
            assertReference(JSON.readTree(json));
        } catch (java.io.IOException e) {
            throw new AssertionError("not JSON: " + json, e);
        }
    }

    private static void assertReference(JsonNode result) {
        assertThat(result).as("a result").isNotNull();
        assertThat(Cluster.differs(result, reference)).as(result.toString()).isNull();
    }
}
