package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The first real call path end to end: pgjdbc → pgwire → coordinator → wire → shard read → wasm → reduce. */
class CallBindingIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Map<String, double[]> reference;

    @BeforeAll
    static void startCluster() throws Exception {
        Cluster.get();
        reference = Cluster.sqlReference();
        assertThat(reference).hasSize(DevCluster.REGIONS.size());
        assertThat(reference.values().stream().mapToDouble(v -> v[1]).sum()).isEqualTo(50_000);
    }

    @Test
    void plainStatementEqualsTheSqlReference() throws Exception {
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
            assertThat(rs.getMetaData().getColumnName(1)).isEqualTo("result");
            assertThat(rs.getMetaData().getColumnTypeName(1)).isEqualTo("json");
            assertThat(rs.next()).isTrue();
            assertEqualsReference(rs.getString(1));
            assertThat(rs.next()).isFalse();
        }
    }

    @Test
    void preparedStatementRepeatedPastTheServerPrepareThreshold() throws Exception {
        try (Connection c = Cluster.connect(1);
             PreparedStatement ps = c.prepareStatement("CALL BINDING revenue_by_region(?)")) {
            for (int i = 0; i < 8; i++) {
                ps.setString(1, "{}");
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).isTrue();
                    assertEqualsReference(rs.getString("result"));
                }
            }
        }
    }

    @Test
    void everyNodeCoordinates() throws Exception {
        for (int n = 0; n < Cluster.get().nodes().size(); n++) {
            try (Connection c = Cluster.connect(n); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{\"any\": [1, 2]}')")) {
                assertThat(rs.next()).isTrue();
                assertEqualsReference(rs.getString(1));
            }
        }
    }

    @Test
    void guestsRunOnTheOptimizingRuntime() throws Exception {
        for (Node n : Cluster.get().nodes()) {
            assertThat(n.cells().engineName()).isNotEqualTo("Interpreted");
            assertThat(n.cells().optimizing()).isTrue();
        }
    }

    @Test
    void badInputGetsTypedErrorsAndTheConnectionKeepsServing() throws Exception {
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            assertSqlState(s, "CALL BINDING no_such_binding('{}')", "42883");
            assertSqlState(s, "CALL BINDING revenue_by_region('{not json')", "22023");
            assertSqlState(s, "CALL BINDING revenue_by_region('{} {}')", "22023");
            assertSqlState(s, "SELECT 2 + 2", "0A000");
            assertSqlState(s, "CALL BINDING revenue_by_region(", "42601");
            try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
                assertEqualsReference(rs.getString(1));
            }
        }
        try (Connection c = Cluster.connect(2);
             PreparedStatement ps = c.prepareStatement("CALL BINDING revenue_by_region(?)")) {
            ps.setString(1, "nope");
            assertThatThrownBy(ps::executeQuery).isInstanceOfSatisfying(SQLException.class,
                    e -> assertThat(e.getSQLState()).isEqualTo("22023"));
            ps.setString(1, "{}");
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertEqualsReference(rs.getString(1));
            }
        }
    }

    @Test
    void httpFrontServesTheSameCall() throws Exception {
        Node node = Cluster.get().nodes().get(2);
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> ready = http.send(HttpRequest.newBuilder(URI.create(node.httpAddress() + "/readyz")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(ready.statusCode()).isEqualTo(200);
        HttpResponse<String> call = http.send(HttpRequest.newBuilder(
                        URI.create(node.httpAddress() + "/v1/bindings/revenue_by_region/call"))
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(call.statusCode()).isEqualTo(200);
        JsonNode body = JSON.readTree(call.body());
        assertThat(body.path("call_id").asText()).isNotEmpty();
        assertEqualsReference(body.get("result").toString());

        HttpResponse<String> unknown = http.send(HttpRequest.newBuilder(
                        URI.create(node.httpAddress() + "/v1/bindings/nope/call"))
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(unknown.body()).path("error").path("code").asInt()).isEqualTo(1003);
    }

    private static void assertSqlState(Statement s, String sql, String sqlState) {
        assertThatThrownBy(() -> s.executeQuery(sql)).as(sql).isInstanceOfSatisfying(SQLException.class,
                e -> assertThat(e.getSQLState()).as(sql + ": " + e.getMessage()).isEqualTo(sqlState));
    }

    /** Counts equal exactly; sums equal up to floating-point summation order (relative 1e-9). */
    private static void assertEqualsReference(String resultJson) throws Exception {
        JsonNode result = JSON.readTree(resultJson);
        Map<String, double[]> got = new TreeMap<>();
        result.fields().forEachRemaining(e -> got.put(e.getKey(),
                new double[] {e.getValue().path("sum").asDouble(), e.getValue().path("count").asLong()}));
        assertThat(got.keySet()).containsExactlyElementsOf(reference.keySet());
        for (var e : reference.entrySet()) {
            double[] g = got.get(e.getKey());
            assertThat(g[1]).as("count of %s", e.getKey()).isEqualTo(e.getValue()[1]);
            assertThat(g[0]).as("sum of %s", e.getKey()).isCloseTo(e.getValue()[0], within(Math.abs(e.getValue()[0]) * 1e-9));
            assertThat(result.get(e.getKey()).get("count").isIntegralNumber()).isTrue();
        }
    }
}
