package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Node processes logging as an operator runs them: every line about a call carries its call id (and a shard run's
 * line its wire id), in the text format and in the JSON one ({@code THRESHER_LOG_FORMAT=json}).
 */
class LogsIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern TEXT_LINE = Pattern.compile("^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} [A-Z]+ ");

    private static DevCluster databases;
    private static NodeProcesses nodes;

    @BeforeAll
    static void start() throws Exception {
        Path dir = Files.createTempDirectory("thresher-logs-");
        databases = DevCluster.start(DevCluster.Options.defaults(dir).withPgwirePort(0).withRows(2_000).withoutNodes());
        nodes = new NodeProcesses(databases, dir, Map.of());
        nodes.environment(1, Map.of("THRESHER_LOG_FORMAT", "json", "THRESHER_LOG_LEVEL", "DEBUG"));
        nodes.environment(2, Map.of("THRESHER_LOG_FORMAT", "text", "THRESHER_LOG_LEVEL", "DEBUG"));
        for (int i = 1; i <= 3; i++) {
            nodes.start(i);
        }
    }

    @AfterAll
    static void stop() {
        if (nodes != null) {
            nodes.close();
        }
        if (databases != null) {
            databases.close();
        }
    }

    /**
     * Calls through node 1 and answers the call's id, from the NOTICE every call sends. Right after the nodes started,
     * partitions still pass from the first node (their standby) to their home nodes: a call that met such a move
     * fails retryably (TARGET_STALE) and is made again.
     */
    private static String call() throws Exception {
        return Await.until("a call through node 1 not refused for a partition passing home",
                java.time.Duration.ofSeconds(60), () -> {
                    try {
                        return callOnce();
                    } catch (java.sql.SQLException e) {
                        if (!"40001".equals(e.getSQLState())) {
                            throw new AssertionError("a call failed other than retryably", e);
                        }
                        throw e;
                    }
                }, id -> true);
    }

    private static String callOnce() throws Exception {
        try (Connection c = nodes.connect(1); Statement s = c.createStatement()) {
            s.executeQuery("CALL BINDING revenue_by_region('{}')").close();
            for (SQLWarning w = s.getWarnings(); w != null; w = w.getNextWarning()) {
                Matcher m = Pattern.compile("call ([0-9a-f-]{36}) recorded").matcher(w.getMessage());
                if (m.find()) {
                    return m.group(1);
                }
            }
        }
        throw new AssertionError("no call id NOTICE");
    }

    private static List<JsonNode> jsonLines(int node) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (String line : Files.readAllLines(nodes.log(node))) {
            assertThat(TEXT_LINE.matcher(line).find()).as("no text log line in the JSON log: %s", line).isFalse();
            if (line.startsWith("{")) {
                out.add(JSON.readTree(line));
            }
        }
        return out;
    }

    @Test
    void everyLineAboutACallCarriesItsIdAndAShardRunsLineItsWireIdInJsonAndText() throws Exception {
        String callId = call();
        List<JsonNode> about = Await.until("node 1's JSON lines on call " + callId + "'s publication and a shard run",
                java.time.Duration.ofSeconds(20),
                () -> jsonLines(1).stream().filter(n -> callId.equals(n.path("mdc").path("call_id").asText())).toList(),
                lines -> lines.stream().anyMatch(n -> n.path("formattedMessage").asText().contains("published"))
                        && lines.stream().anyMatch(n -> n.path("mdc").has("wire_id")));
        assertThat(about).as("node 1's JSON lines about call %s", callId).isNotEmpty();
        JsonNode published = about.stream().filter(n -> n.path("formattedMessage").asText().contains("published"))
                .findFirst().orElseThrow(() -> new AssertionError("no line on the call's publication"));
        assertThat(published.path("level").asText()).isEqualTo("DEBUG");
        assertThat(published.path("loggerName").asText()).endsWith("Coordinator");
        JsonNode shardRun = about.stream().filter(n -> n.path("mdc").has("wire_id")).findFirst()
                .orElseThrow(() -> new AssertionError("no line about one of the call's shard runs on node 1"));
        assertThat(shardRun.path("mdc").path("wire_id").asText()).startsWith(callId);
        assertThat(jsonLines(1)).as("INFO lines of the node's start are JSON too")
                .anySatisfy(n -> assertThat(n.path("level").asText()).isEqualTo("INFO"));

        // node 2 logs text: its shard runs of the same call name the call and the wire id
        List<String> text = Await.until("node 2's text lines about call " + callId, java.time.Duration.ofSeconds(20),
                () -> Files.readAllLines(nodes.log(2)).stream().filter(l -> l.contains("call_id=" + callId)).toList(),
                lines -> !lines.isEmpty());
        assertThat(text).as("node 2's text lines about call %s", callId).isNotEmpty()
                .allSatisfy(l -> assertThat(l).matches(TEXT_LINE.pattern() + ".*"))
                .anySatisfy(l -> assertThat(l).contains("wire_id=" + callId));
    }
}
