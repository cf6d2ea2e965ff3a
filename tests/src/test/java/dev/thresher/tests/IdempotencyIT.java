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
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code Idempotency-Key} on the direct call route, proven by counts: a repeat runs no guest, concurrent duplicates
 * run the call once, a different request under the key is refused, and a key whose owner died is taken over without
 * running a published call again.
 */
class IdempotencyIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static HttpResponse<String> call(Node n, String binding, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(n.httpAddress() + "/v1/bindings/" + binding + "/call"))
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static long guestStarts(DevCluster c) {
        return c.nodes().stream().mapToLong(n -> n.cells().guestStarts()).sum();
    }

    private static Connection control(DevCluster c) throws Exception {
        return DriverManager.getConnection(c.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
    }

    private static int invocationsSince(DevCluster c, java.sql.Timestamp since) throws Exception {
        try (Connection conn = control(c); PreparedStatement ps = conn.prepareStatement(
                "SELECT count(*) FROM invocations WHERE created_at >= ? AND binding_name = 'revenue_by_region'")) {
            ps.setTimestamp(1, since);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static java.sql.Timestamp controlNow(DevCluster c) throws Exception {
        try (Connection conn = control(c); ResultSet rs = conn.createStatement().executeQuery("SELECT clock_timestamp()")) {
            rs.next();
            return rs.getTimestamp(1);
        }
    }

    @Test
    void aRepeatWithTheSameKeyAndRequestIsAnsweredFromTheJournalWithoutRunningAnything() throws Exception {
        DevCluster c = Cluster.get();
        String key = "repeat-" + UUID.randomUUID();
        HttpResponse<String> first = call(c.nodes().get(0), "revenue_by_region", key, "{}");
        assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        long starts = guestStarts(c);
        java.sql.Timestamp since = controlNow(c);
        // on another node too: the journal is the control database's
        for (Node n : c.nodes()) {
            HttpResponse<String> again = call(n, "revenue_by_region", key, "{}");
            assertThat(again.statusCode()).isEqualTo(200);
            assertThat(again.body()).isEqualTo(first.body());
            assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        }
        assertThat(guestStarts(c)).as("no guest ran for the repeats").isEqualTo(starts);
        assertThat(invocationsSince(c, since)).isZero();
        // without a key, the same request is a new call
        HttpResponse<String> fresh = call(c.nodes().get(0), "revenue_by_region", null, "{}");
        assertThat(JSON.readTree(fresh.body()).path("call_id").asText())
                .isNotEqualTo(JSON.readTree(first.body()).path("call_id").asText());
    }

    @Test
    void theSameKeyWithAnotherRequestIsRefused422AndAMalformedKey400() throws Exception {
        DevCluster c = Cluster.get();
        String key = "reuse-" + UUID.randomUUID();
        assertThat(call(c.nodes().get(1), "revenue_by_region", key, "{}").statusCode()).isEqualTo(200);
        long starts = guestStarts(c);
        HttpResponse<String> other = call(c.nodes().get(1), "revenue_by_region", key, "{\"x\":1}");
        assertThat(other.statusCode()).as(other.body()).isEqualTo(422);
        JsonNode err = JSON.readTree(other.body()).path("error");
        assertThat(err.path("name").asText()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
        assertThat(err.path("guestCodeRan").asBoolean()).isFalse();
        HttpResponse<String> otherBinding = call(c.nodes().get(1), "nope", key, "{}");
        assertThat(otherBinding.statusCode()).isEqualTo(422);
        assertThat(guestStarts(c)).isEqualTo(starts);

        HttpResponse<String> tooLong = call(c.nodes().get(1), "revenue_by_region", "k".repeat(256), "{}");
        assertThat(tooLong.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(tooLong.body()).path("error").path("name").asText()).isEqualTo("INVALID_ARGUMENTS");
        HttpResponse<String> spaced = call(c.nodes().get(1), "revenue_by_region", "a key with spaces", "{}");
        assertThat(spaced.statusCode()).isEqualTo(400);
        assertThat(spaced.body()).contains("visible ASCII");
    }

    @Test
    void eightConcurrentRequestsWithOneKeyRunTheCallOnce() throws Exception {
        DevCluster c = Cluster.get();
        // what one call costs in guest starts, measured on this cluster
        long before = guestStarts(c);
        assertThat(call(c.nodes().get(2), "revenue_by_region", null, "{}").statusCode()).isEqualTo(200);
        long perCall = guestStarts(c) - before;
        assertThat(perCall).isPositive();

        String key = "concurrent-" + UUID.randomUUID();
        java.sql.Timestamp since = controlNow(c);
        long starts = guestStarts(c);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                Node n = c.nodes().get(i % 3);
                all.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return call(n, "revenue_by_region", key, "{}");
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, pool));
            }
            Set<String> bodies = new HashSet<>();
            int replayed = 0;
            for (var f : all) {
                HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                bodies.add(r.body());
                replayed += r.headers().firstValue("Idempotent-Replayed").isPresent() ? 1 : 0;
            }
            assertThat(bodies).as("one answer, one call id").hasSize(1);
            assertThat(replayed).isEqualTo(7);
        } finally {
            pool.shutdownNow();
        }
        assertThat(invocationsSince(c, since)).as("one invocation").isEqualTo(1);
        assertThat(guestStarts(c) - starts).as("the guests of one call").isEqualTo(perCall);
    }

    @Test
    void aFailureNothingWasPublishedForReleasesTheKeySoTheSameKeyRunsAgain() throws Exception {
        DevCluster c = Cluster.get();
        String key = "unknown-" + UUID.randomUUID();
        HttpResponse<String> first = call(c.nodes().get(0), "not_deployed_yet", key, "{}");
        assertThat(first.statusCode()).isEqualTo(404);
        HttpResponse<String> again = call(c.nodes().get(0), "not_deployed_yet", key, "{}");
        assertThat(again.statusCode()).isEqualTo(404);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).as("run again, not replayed").isEmpty();
        try (Connection conn = control(c); PreparedStatement ps = conn.prepareStatement(
                "SELECT count(*) FROM idempotency_keys WHERE key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1)).isZero();
            }
        }
    }

    @Test
    void aKeyWhoseOwnerDiedIsTakenOverAndAPublishedCallIsAnsweredNotRunAgain() throws Exception {
        DevCluster c = Cluster.get();
        HttpResponse<String> published = call(c.nodes().get(0), "revenue_by_region", null, "{}");
        String callId = JSON.readTree(published.body()).path("call_id").asText();
        byte[] fingerprint = fingerprint("POST /v1/bindings/revenue_by_region/call", "{}");
        String key = "orphan-" + UUID.randomUUID();
        String unrecorded = "orphan-none-" + UUID.randomUUID();
        try (Connection conn = control(c); PreparedStatement ps = conn.prepareStatement("""
                INSERT INTO idempotency_keys (tenant, key, fingerprint, state, owner, call_id, claimed_until, expires_at)
                VALUES ('default', ?, ?, 'running', gen_random_uuid(), ?, clock_timestamp() - interval '1 second',
                        clock_timestamp() + interval '1 hour')""")) {
            // an owner that recorded its call, which was published, then died before recording its response
            ps.setString(1, key);
            ps.setBytes(2, fingerprint);
            ps.setObject(3, UUID.fromString(callId));
            ps.executeUpdate();
            // one that died before its call was recorded
            ps.setString(1, unrecorded);
            ps.setObject(3, null);
            ps.executeUpdate();
        }
        long starts = guestStarts(c);
        HttpResponse<String> takenOver = call(c.nodes().get(1), "revenue_by_region", key, "{}");
        assertThat(takenOver.statusCode()).isEqualTo(200);
        assertThat(takenOver.body()).as("the published call's answer").isEqualTo(published.body());
        assertThat(guestStarts(c)).isEqualTo(starts);
        HttpResponse<String> replay = call(c.nodes().get(2), "revenue_by_region", key, "{}");
        assertThat(replay.body()).isEqualTo(published.body());
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");

        HttpResponse<String> ranAgain = call(c.nodes().get(1), "revenue_by_region", unrecorded, "{}");
        assertThat(ranAgain.statusCode()).isEqualTo(200);
        assertThat(guestStarts(c)).as("nothing recorded: the call runs").isGreaterThan(starts);
    }

    /** The fingerprint the HTTP front door journals: SHA-256 of the route, a NUL byte, and the body. */
    private static byte[] fingerprint(String route, String body) throws Exception {
        java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-256");
        d.update(route.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        d.update((byte) 0);
        d.update(body.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return d.digest();
    }
}
