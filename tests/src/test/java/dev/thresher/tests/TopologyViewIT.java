package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The topology view: every node's {@code GET /admin/topology} and {@code thresher topology show} are the same
 * bytes once the nodes have read the same topology version, so views can be compared with diff.
 */
class TopologyViewIT {
    private static String get(HttpClient http, Node n) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(n.httpAddress() + "/admin/topology")).header("Authorization", "Bearer " + Cluster.get().adminToken()).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return r.body();
    }

    @Test
    void everyNodesViewAndTheControlDatabasesAreTheSameBytes() throws Exception {
        DevCluster cluster = Cluster.get();
        String cli = ComponentHarnessIT.thresher("topology", "show", "--dev", cluster.endpointsFile().getParent().toString());
        assertThat(cli).startsWith("0:");
        HttpClient http = HttpClient.newHttpClient();
        // the nodes converge on the control database's version (push, and the poll as the bound)
        record Views(List<String> nodes, String control) {}
        Views seen = Await.until("every node's view equal to the control database's", java.time.Duration.ofSeconds(30),
                java.time.Duration.ofMillis(100), () -> {
                    List<String> views = new ArrayList<>();
                    for (Node n : cluster.nodes()) {
                        views.add(get(http, n));
                    }
                    return new Views(views, ComponentHarnessIT.thresher("topology", "show", "--dev",
                            cluster.endpointsFile().getParent().toString()).substring(2));
                }, v -> v.nodes().stream().allMatch(v.control()::equals));
        String expected = seen.control();
        assertThat(seen.nodes()).as("every node's view equals the control database's").allSatisfy(v -> assertThat(v).isEqualTo(expected));

        JsonNode doc = new ObjectMapper().readTree(expected);
        assertThat(doc.fieldNames()).toIterable().containsExactly("hosts", "partitions", "version");
        assertThat(doc.get("partitions")).isNotEmpty();
        JsonNode first = doc.get("partitions").get(0);
        assertThat(first.fieldNames()).toIterable().containsExactly("candidates", "epoch", "id", "leader", "shard", "slots", "table",
                "tenant");
        assertThat(first.get("candidates")).as("every partition has a standby").hasSize(2);
        int previous = -1;
        for (JsonNode p : doc.get("partitions")) {
            assertThat(p.get("id").asInt()).isGreaterThan(previous);
            previous = p.get("id").asInt();
        }
        assertThat(doc.get("hosts")).extracting(h -> h.get("id").asText()).containsExactly("node-1", "node-2", "node-3");
    }

    @Test
    void theAdminRoutesNeedTheDevClustersTokenWhichOnlyItsOwnerCanRead() throws Exception {
        DevCluster cluster = Cluster.get();
        JsonNode endpoints = new ObjectMapper().readTree(cluster.endpointsFile().toFile());
        assertThat(endpoints.path("token").asText()).isEqualTo(cluster.adminToken()).hasSizeGreaterThanOrEqualTo(16);
        assertThat(java.nio.file.Files.getPosixFilePermissions(cluster.endpointsFile()))
                .containsExactlyInAnyOrder(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                        java.nio.file.attribute.PosixFilePermission.OWNER_WRITE);
        HttpClient http = HttpClient.newHttpClient();
        for (Node n : cluster.nodes()) {
            HttpResponse<String> refused = http.send(HttpRequest.newBuilder(URI.create(n.httpAddress() + "/admin/topology"))
                    .GET().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(401);
            assertThat(refused.headers().firstValue("WWW-Authenticate")).isPresent();
            HttpResponse<String> wrong = http.send(HttpRequest.newBuilder(URI.create(n.httpAddress() + "/admin/topology"))
                    .header("Authorization", "Bearer " + cluster.adminToken() + "0").GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(wrong.statusCode()).isEqualTo(401);
            assertThat(get(http, n)).startsWith("{");
            HttpResponse<String> ready = http.send(HttpRequest.newBuilder(URI.create(n.httpAddress() + "/readyz")).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(ready.statusCode()).as("open on loopback").isEqualTo(200);
        }
    }

    /** {@code thresher shard list}, through a node's {@code GET /admin/shards}: each shard, its partitions, its candidates. */
    @Test
    void shardListNamesEveryShardWithItsPartitionsAndCandidates() throws Exception {
        DevCluster cluster = Cluster.get();
        String out = ComponentHarnessIT.thresher("shard", "list", "--dev", cluster.endpointsFile().getParent().toString());
        assertThat(out).startsWith("0:");
        List<String> lines = out.substring(2).lines().toList();
        assertThat(lines).hasSize(cluster.options().shards());
        JsonNode view = new ObjectMapper().readTree(ComponentHarnessIT.thresher("topology", "show", "--dev",
                cluster.endpointsFile().getParent().toString()).substring(2));
        for (int shard = 1; shard <= cluster.options().shards(); shard++) {
            int id = shard;
            long partitions = java.util.stream.StreamSupport.stream(view.get("partitions").spliterator(), false)
                    .filter(p -> p.get("shard").asInt() == id).count();
            assertThat(lines.get(shard - 1)).as("shard %d", shard)
                    .matches(id + "\\s+\\S+\\s+" + partitions + " partitions  candidates \\[.*node-" + id + " \\(home\\).*\\]");
        }
    }
}
