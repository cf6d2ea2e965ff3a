package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The README's first command, as a user runs it: {@code ./thresher dev} in its own process, then
 * psql against it, then Ctrl-C (SIGTERM) stopping everything it started.
 */
class LauncherIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void devClusterAnswersPsqlOnTheOptimizingRuntimeAndStopsCleanly() throws Exception {
        Path repo = Path.of(System.getProperty("thresher.repo", ".")).toAbsolutePath();
        Path dir = Files.createTempDirectory("thresher-launcher-");
        Path log = dir.resolve("dev.log");
        int port = DevLaunch.freePortRun();
        ProcessBuilder pb = new ProcessBuilder(repo.resolve("thresher").toString(), "dev", "--pgwire-port",
                String.valueOf(port), "--dir", dir.resolve("dev").toString())
                .directory(repo.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("THRESHER_SKIP_BUILD", "1");
        Process p = pb.start();
        try {
            Path endpoints = dir.resolve("dev/endpoints.json");
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(150);
            while (!Files.exists(endpoints) || !Files.readString(log).contains("Ctrl-C stops everything")) {
                assertThat(p.isAlive()).as("./thresher dev exited early:%n%s", Files.readString(log)).isTrue();
                assertThat(System.nanoTime() - until).as("./thresher dev not up in 150 s:%n%s", Files.readString(log)).isNegative();
                p.waitFor(200, TimeUnit.MILLISECONDS);
            }
            String out = Files.readString(log);
            assertThat(out).contains("psql \"postgresql://" + DevCluster.USER + ":" + DevCluster.PASSWORD + "@127.0.0.1:"
                    + port + "/thresher\"");
            assertThat(out.lines().filter(l -> l.contains("guest engine")).toList())
                    .hasSize(3)
                    .allSatisfy(l -> assertThat(l).contains("optimizing runtime on").doesNotContain("Interpreted"));

            JsonNode ep = JSON.readTree(endpoints.toFile());
            assertThat(ep.get("pgwire")).hasSize(3);
            assertThat(ep.get("pgwire").get(0).asText()).isEqualTo("127.0.0.1:" + port);
            assertThat(ep.get("http")).hasSize(3);
            assertThat(ep.path("postgres").get("shards")).hasSize(3);

            // the dev cluster's login, as its snippet and endpoints.json give it (SCRAM-SHA-256)
            String login = "postgresql://" + ep.path("user").asText() + ":" + ep.path("password").asText()
                    + "@127.0.0.1:" + port + "/thresher";
            Process psql = new ProcessBuilder("psql", login, "-At", "-c",
                    "CALL BINDING revenue_by_region('{}')").redirectErrorStream(true).start();
            assertThat(psql.waitFor(60, TimeUnit.SECONDS)).isTrue();
            String printed = new String(psql.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertThat(psql.exitValue()).as(printed).isZero();
            assertMatchesShards(JSON.readTree(lastLine(printed)), ep);

            // leader replicas on, as the dev cluster's default: the call's partitions were read from memory, and the
            // control database runs in a PostgreSQL apart from the shard databases'
            assertThat(out).contains("leader replicas on (256 MiB per node");
            String control = ep.path("postgres").path("control").asText();
            String shard = ep.path("postgres").path("shards").get(0).asText();
            assertThat(URI.create(control.substring("jdbc:".length())).getPort()).as(control + " and " + shard)
                    .isPositive().isNotEqualTo(URI.create(shard.substring("jdbc:".length())).getPort());
            double fromMemory = 0;
            for (JsonNode http : ep.get("http")) {
                java.net.http.HttpResponse<String> metrics = java.net.http.HttpClient.newHttpClient().send(
                        java.net.http.HttpRequest.newBuilder(URI.create(http.asText() + "/metrics"))
                                .header("Authorization", "Bearer " + ep.path("token").asText()).build(),
                        java.net.http.HttpResponse.BodyHandlers.ofString());
                assertThat(metrics.statusCode()).as(metrics.body()).isEqualTo(200);
                fromMemory += metrics.body().lines()
                        .filter(l -> l.startsWith("thresher_replica_reads_total{") && l.contains("served=\"memory\""))
                        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
            }
            assertThat(fromMemory).as("partition reads served from memory").isGreaterThanOrEqualTo(16);

            // Several statements in one simple query, as psql users write them.
            Process script = new ProcessBuilder("psql", login, "-qAt", "-c",
                    "SET thresher.call_deadline_ms = 20000; CALL BINDING revenue_by_region('{}')")
                    .redirectErrorStream(true).start();
            assertThat(script.waitFor(60, TimeUnit.SECONDS)).isTrue();
            String scripted = new String(script.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertThat(script.exitValue()).as(scripted).isZero();
            assertMatchesShards(JSON.readTree(lastLine(scripted)), ep);
        } finally {
            p.destroy();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
        assertThat(p.exitValue()).as(Files.readString(log)).isIn(0, 143);
        assertThat(Files.readString(log)).contains("stopping the dev cluster");
        assertThat(listening(port)).as("pgwire still listening after stop").isFalse();
    }

    private static void assertMatchesShards(JsonNode result, JsonNode ep) throws Exception {
        Map<String, double[]> ref = new TreeMap<>();
        for (JsonNode url : ep.path("postgres").get("shards")) {
            try (Connection c = DriverManager.getConnection(url.asText(), ep.get("user").asText(), ep.get("password").asText());
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT region, sum(amount), count(*) FROM orders GROUP BY region")) {
                while (rs.next()) {
                    double[] t = ref.computeIfAbsent(rs.getString(1), k -> new double[2]);
                    t[0] += rs.getDouble(2);
                    t[1] += rs.getLong(3);
                }
            }
        }
        assertThat(ref).hasSize(8);
        assertThat(result.size()).isEqualTo(ref.size());
        for (var e : ref.entrySet()) {
            JsonNode r = result.get(e.getKey());
            assertThat(r).as(e.getKey()).isNotNull();
            assertThat(r.get("count").asLong()).isEqualTo((long) e.getValue()[1]);
            assertThat(r.get("sum").asDouble()).isCloseTo(e.getValue()[0], within(Math.abs(e.getValue()[0]) * 1e-9));
        }
    }


    private static boolean listening(int port) {
        try (Socket s = new Socket("127.0.0.1", port)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The answer psql printed: its last line (stderr is merged in, and the call id NOTICE comes first). */
    private static String lastLine(String printed) {
        return printed.substring(printed.lastIndexOf('\n') + 1);
    }
}
