package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * node-postgres, installed from npm into {@code target/node}, against the real cluster: simple,
 * parameterized and named prepared queries return the SQL reference; an unknown binding is a
 * typed error and the connection keeps serving; in row mode ({@code rows: 10}) a failing call answers
 * its error (the script bounds each step, so a hang fails) and a succeeding one its row.
 */
class NodePostgresIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void nodePostgresCallsTheBinding() throws Exception {
        Path dir = provision();
        Node node = Cluster.get().nodes().get(0);
        String address = node.pgwireAddress();
        // Never the test JVM's own stdio: Node.js makes inherited pipes non-blocking, and the test
        // runner talks to this JVM over them.
        Path stdout = dir.resolve("call.out");
        Path stderr = dir.resolve("call.err");
        Process p = new ProcessBuilder("node", "call.js", address.substring(0, address.lastIndexOf(':')),
                String.valueOf(node.pgwirePort()), DevCluster.USER, DevCluster.PASSWORD)
                .directory(dir.toFile()).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
        p.getOutputStream().close();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("node finished").isTrue();
        String out = Files.readString(stdout, StandardCharsets.UTF_8).trim();
        assertThat(p.exitValue()).as("%s%n%s", out, Files.readString(stderr, StandardCharsets.UTF_8)).isZero();
        JsonNode r = JSON.readTree(out);

        Map<String, double[]> reference = Cluster.sqlReference();
        assertThat(r.path("fields").get(0).path("name").asText()).isEqualTo("result");
        assertThat(r.path("fields").get(0).path("dataTypeID").asInt()).as("json").isEqualTo(114);
        assertEquals(r.get("simple"), reference);
        assertEquals(r.get("parameterized"), reference);
        assertThat(r.get("prepared")).hasSize(6);
        for (JsonNode each : r.get("prepared")) {
            assertEquals(each, reference);
        }
        assertThat(r.path("error").path("code").asText()).isEqualTo("42883");
        assertThat(r.path("error").path("detail").asText()).contains("thresher_code=1003");
        assertEquals(r.get("afterError"), reference);
        // row mode (rows: 10) sends Execute + Flush and waits for the answer before Sync: an error must arrive
        assertThat(r.path("rowsError").path("code").asText()).as(r.path("rowsError").toString()).isEqualTo("42883");
        assertEquals(r.get("rowMode"), reference);
    }

    /** Copies the scripts and installs the pinned node-postgres and pg-cursor from the npm registry, once. */
    static synchronized Path provision() throws Exception {
        Path src = Path.of("src", "test", "node");
        Path dir = Path.of("target", "node");
        Files.createDirectories(dir);
        for (String f : List.of("package.json", "call.js", "matrix.js")) {
            Files.copy(src.resolve(f), dir.resolve(f), StandardCopyOption.REPLACE_EXISTING);
        }
        if (!Files.isDirectory(dir.resolve("node_modules/pg")) || !Files.isDirectory(dir.resolve("node_modules/pg-cursor"))) {
            Path log = dir.resolve("npm-install.log");
            Process npm = new ProcessBuilder("npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
                    .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            npm.getOutputStream().close();
            assertThat(npm.waitFor(300, TimeUnit.SECONDS)).as("npm install finished").isTrue();
            assertThat(npm.exitValue()).as("npm install pg pg-cursor (needs Node.js and npm; .ci/run installs them):%n%s",
                    Files.readString(log, StandardCharsets.UTF_8)).isZero();
        }
        return dir;
    }

    private static void assertEquals(JsonNode result, Map<String, double[]> reference) {
        assertThat(result.size()).isEqualTo(reference.size());
        for (var e : reference.entrySet()) {
            JsonNode g = result.get(e.getKey());
            assertThat(g).as(e.getKey()).isNotNull();
            assertThat(g.get("count").asLong()).isEqualTo((long) e.getValue()[1]);
            assertThat(g.get("sum").asDouble()).isCloseTo(e.getValue()[0], within(Math.abs(e.getValue()[0]) * 1e-9));
        }
    }
}
