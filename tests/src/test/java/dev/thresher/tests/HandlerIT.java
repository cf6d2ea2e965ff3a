package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.abi.HttpRequestCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * HTTP handler components on the real cluster, over real HTTP clients: a handler deployed as a binding serves its
 * routes under {@code /v1/http/<binding>/} on every node, makes one nested distributed call per request through the
 * call API, and answers what it built or the typed failure (docs/components.md, "HTTP handlers"; docs/guest-abi.md,
 * section 8). The handler is {@code handlers/contract_handler.wat}: one route per behaviour.
 */
class HandlerIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String HANDLER = "handler_it";
    private static HttpClient http;

    @BeforeAll
    static void deploy() throws Exception {
        DevCluster cluster = Cluster.get();
        PGSimpleDataSource controlDb = new PGSimpleDataSource();
        controlDb.setURL(cluster.controlUrl());
        controlDb.setUser(DevCluster.USER);
        controlDb.setPassword(DevCluster.PASSWORD);
        ContractGuests.bind(controlDb, DevCluster.TENANT, "handler_it_spin", "spin");
        Cluster.bindings().deploy(DevCluster.TENANT, "test", resource("contract_handler.json"),
                resource("contract_handler.wat"));
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void close() {
        if (http != null) {
            http.close();
        }
    }

    private static byte[] resource(String name) throws IOException {
        try (InputStream in = HandlerIT.class.getResourceAsStream("/handlers/" + name)) {
            assertThat(in).as(name).isNotNull();
            return in.readAllBytes();
        }
    }

    private static Node node(int i) throws Exception {
        return Cluster.get().nodes().get(i);
    }

    private static HttpResponse<byte[]> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.header("Authorization", "Bearer " + Cluster.get().adminToken())
                .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static HttpResponse<byte[]> get(int node, String path) throws Exception {
        return send(HttpRequest.newBuilder(URI.create(node(node).httpAddress() + path)).GET());
    }

    private static JsonNode json(HttpResponse<byte[]> res) throws IOException {
        return JSON.readTree(res.body());
    }

    /** The response is the typed failure {@code code}, with the HTTP status the one table maps it to. */
    private static void assertFailure(HttpResponse<byte[]> res, int status, ErrorCode code) throws IOException {
        String body = new String(res.body(), StandardCharsets.UTF_8);
        assertThat(res.statusCode()).as(body).isEqualTo(status);
        JsonNode error = json(res).path("error");
        assertThat(error.path("code").asInt()).as(body).isEqualTo(code.code());
        assertThat(error.path("name").asText()).isEqualTo(code.name());
    }

    private static JsonNode directCall() throws Exception {
        HttpResponse<byte[]> res = send(HttpRequest.newBuilder(URI.create(node(1).httpAddress()
                + "/v1/bindings/revenue_by_region/call")).POST(HttpRequest.BodyPublishers.ofString("{}")));
        assertThat(res.statusCode()).isEqualTo(200);
        return json(res).get("result");
    }

    @Test
    void aHandlerCallsABindingAndAnswersItsResultOnEveryNode() throws Exception {
        JsonNode direct = directCall();
        assertThat(Cluster.differs(direct, Cluster.sqlReference())).isNull();
        for (int n = 0; n < Cluster.get().nodes().size(); n++) {
            HttpResponse<byte[]> res = get(n, "/v1/http/" + HANDLER + "/revenue");
            assertThat(res.statusCode()).as(new String(res.body(), StandardCharsets.UTF_8)).isEqualTo(200);
            assertThat(res.headers().firstValue("content-type")).hasValue("application/json");
            assertThat(json(res)).as("node %d answers the direct call's result", n).isEqualTo(direct);
        }
    }

    @Test
    void manyRequestsAtOnceAllEndTypedAndTheNodeKeepsServingCalls() throws Exception {
        // more requests than a node has handler threads (limits.handlerConcurrency), all on one node, each waiting for
        // its nested call: the calls run on other threads, so every request ends, answered or refused as busy
        int n = 2 * dev.thresher.limits.Limits.DEFAULTS.handlerConcurrency();
        JsonNode direct = directCall();
        List<java.util.concurrent.CompletableFuture<HttpResponse<byte[]>>> all = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            all.add(http.sendAsync(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/http/" + HANDLER
                    + "/revenue")).header("Authorization", "Bearer " + Cluster.get().adminToken())
                    .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofByteArray()));
        }
        // meanwhile the node serves direct calls
        assertThat(send(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/bindings/revenue_by_region/call"))
                .POST(HttpRequest.BodyPublishers.ofString("{}"))).statusCode()).isEqualTo(200);
        int answered = 0;
        for (var f : all) {
            HttpResponse<byte[]> res = f.get(60, java.util.concurrent.TimeUnit.SECONDS);
            if (res.statusCode() == 200) {
                assertThat(json(res)).isEqualTo(direct);
                answered++;
            } else {
                assertFailure(res, 503, ErrorCode.CELL_UNAVAILABLE); // busy: retryable, nothing ran
                assertThat(json(res).at("/error/retry").asText()).isEqualTo("RETRYABLE");
            }
        }
        assertThat(answered).isPositive();
        assertThat(get(0, "/v1/http/" + HANDLER + "/revenue").statusCode()).isEqualTo(200);
    }

    /** Nested invocations of the sample binding recorded since {@code since} (the control database's clock). */
    private static int nestedCallsSince(java.sql.Timestamp since) throws Exception {
        DevCluster c = Cluster.get();
        try (Connection conn = java.sql.DriverManager.getConnection(c.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             java.sql.PreparedStatement ps = conn.prepareStatement(
                     "SELECT count(*) FROM invocations WHERE created_at >= ? AND binding_name = 'revenue_by_region'")) {
            ps.setTimestamp(1, since);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static java.sql.Timestamp controlNow() throws Exception {
        DevCluster c = Cluster.get();
        try (Connection conn = java.sql.DriverManager.getConnection(c.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             Statement st = conn.createStatement(); java.sql.ResultSet rs = st.executeQuery("SELECT clock_timestamp()")) {
            rs.next();
            return rs.getTimestamp(1);
        }
    }

    private static HttpResponse<byte[]> keyed(int node, String path, String key) throws Exception {
        return send(HttpRequest.newBuilder(URI.create(node(node).httpAddress() + path)).header("Idempotency-Key", key).GET());
    }

    @Test
    void aRepeatedRequestWithAnIdempotencyKeyIsAnsweredFromTheJournalWithoutRunningItsNestedCallAgain() throws Exception {
        String key = "handler-" + java.util.UUID.randomUUID();
        java.sql.Timestamp since = controlNow();
        HttpResponse<byte[]> first = keyed(0, "/v1/http/" + HANDLER + "/revenue", key);
        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        for (int n = 0; n < 3; n++) {
            HttpResponse<byte[]> again = keyed(n, "/v1/http/" + HANDLER + "/revenue", key);
            assertThat(again.statusCode()).isEqualTo(200);
            assertThat(again.body()).isEqualTo(first.body());
            assertThat(again.headers().firstValue("content-type")).isEqualTo(first.headers().firstValue("content-type"));
            assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        }
        assertThat(nestedCallsSince(since)).as("one nested call for four requests").isEqualTo(1);
        // the same key on another route is another request
        assertFailure(keyed(1, "/v1/http/" + HANDLER + "/twice/seen", key), 422, ErrorCode.IDEMPOTENCY_KEY_REUSED);

        // eight at once with a new key: the nested call runs once
        String concurrent = "handler-concurrent-" + java.util.UUID.randomUUID();
        java.sql.Timestamp before = controlNow();
        List<java.util.concurrent.CompletableFuture<HttpResponse<byte[]>>> all = new java.util.ArrayList<>();
        java.util.concurrent.ExecutorService eight = java.util.concurrent.Executors.newFixedThreadPool(8);
        for (int i = 0; i < 8; i++) {
            int node = i % 3;
            all.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return keyed(node, "/v1/http/" + HANDLER + "/revenue", concurrent);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, eight));
        }
        eight.shutdown();
        java.util.Set<String> bodies = new java.util.HashSet<>();
        for (var f : all) {
            HttpResponse<byte[]> r = f.get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            bodies.add(new String(r.body(), StandardCharsets.UTF_8));
        }
        assertThat(bodies).hasSize(1);
        assertThat(nestedCallsSince(before)).isEqualTo(1);
    }

    @Test
    void aSecondNestedCallInOneRequestIsRefusedTyped() throws Exception {
        // the handler returns the second call's code: the request fails as that call did
        assertFailure(get(0, "/v1/http/" + HANDLER + "/twice"), 422, ErrorCode.NESTED_CALL_LIMIT_EXCEEDED);
        // the handler saw the code and read the error object after it
        HttpResponse<byte[]> seen = get(2, "/v1/http/" + HANDLER + "/twice/seen");
        assertThat(seen.statusCode()).as(new String(seen.body(), StandardCharsets.UTF_8)).isEqualTo(200);
        JsonNode error = json(seen).path("error");
        assertThat(error.path("code").asInt()).isEqualTo(ErrorCode.NESTED_CALL_LIMIT_EXCEEDED.code());
        assertThat(error.path("retry").asText()).isEqualTo("TERMINAL");
        assertThat(error.path("message").asText()).contains("limits.nestedCallsPerRequest");
    }

    @Test
    void pathParametersQueryHeadersAndBodyReachTheHandlerAsEncoded() throws Exception {
        byte[] body = "{\"x\": \"é\"}".getBytes(StandardCharsets.UTF_8);
        HttpResponse<byte[]> res = send(HttpRequest.newBuilder(URI.create(node(1).httpAddress() + "/v1/http/" + HANDLER
                        + "/echo/eu%20west/x%2Fy?a=1&b=two+words&a=%C3%A9&flag"))
                .header("Content-Type", "text/plain")
                .header("X-Trace", "t-1")
                .header("X-Other", "not passed")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)));
        assertThat(res.statusCode()).as(new String(res.body(), StandardCharsets.UTF_8)).isEqualTo(200);
        HttpRequestCodec.Request r = HttpRequestCodec.decode(res.body());
        assertThat(r.routeIndex()).isEqualTo(1);
        assertThat(r.method()).isEqualTo("POST");
        assertThat(r.path()).isEqualTo("/echo/eu%20west/x%2Fy");
        assertThat(r.route()).isEqualTo("/echo/{a}/{b}");
        assertThat(r.parameters()).containsExactly(Map.entry("a", "eu west"), Map.entry("b", "x/y"));
        assertThat(r.query()).containsExactly(Map.entry("a", "1"), Map.entry("b", "two words"), Map.entry("a", "é"),
                Map.entry("flag", ""));
        assertThat(r.headers()).containsExactlyInAnyOrder(Map.entry("content-type", "text/plain"), Map.entry("x-trace", "t-1"));
        assertThat(r.body()).isEqualTo(body);

        HttpRequestCodec.Request region = HttpRequestCodec.decode(get(2, "/v1/http/" + HANDLER + "/regions/asia/revenue").body());
        assertThat(region.routeIndex()).isEqualTo(8);
        assertThat(region.parameters()).containsExactly(Map.entry("region", "asia"));
        assertThat(region.query()).isEmpty();
        assertThat(region.body()).isEmpty();
    }

    @Test
    void aBodyOverThePayloadLimitIsRefused() throws Exception {
        byte[] big = new byte[(1 << 20) + 1];
        HttpResponse<byte[]> res = send(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/http/" + HANDLER
                + "/echo/a/b")).expectContinue(true).POST(HttpRequest.BodyPublishers.ofByteArray(big)));
        assertFailure(res, 413, ErrorCode.PAYLOAD_TOO_LARGE);
    }

    @Test
    void theDeadlineCoversTheNestedCall() throws Exception {
        long t0 = System.nanoTime();
        HttpResponse<byte[]> res = send(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/http/" + HANDLER
                + "/slow")).header("Thresher-Deadline-Ms", "1500").GET());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertFailure(res, 504, ErrorCode.DEADLINE_EXCEEDED);
        assertThat(ms).as("answered at the request's deadline, not the call's default").isBetween(1_400L, 10_000L);
        assertThat(json(res).at("/error/guestCodeRan").asBoolean()).as("the handler ran").isTrue();
        assertFailure(send(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/http/" + HANDLER + "/revenue"))
                .header("Thresher-Deadline-Ms", "600000").GET()), 400, ErrorCode.INVALID_DEADLINE);
    }

    @Test
    void aFailingHandlerIsTheTypedGuestError() throws Exception {
        HttpResponse<byte[]> trap = get(1, "/v1/http/" + HANDLER + "/trap");
        assertFailure(trap, 422, ErrorCode.GUEST_TRAP);
        assertThat(json(trap).at("/error/guestCodeRan").asBoolean()).isTrue();
        HttpResponse<byte[]> fails = get(1, "/v1/http/" + HANDLER + "/fails");
        assertFailure(fails, 422, ErrorCode.GUEST_REPORTED_FAILURE);
        assertThat(json(fails).at("/error/message").asText()).isEqualTo("handler says no");
        // a version the binding does not have: the nested call's TARGET_STALE, passed through
        assertFailure(get(1, "/v1/http/" + HANDLER + "/pinned"), 503, ErrorCode.TARGET_STALE);
        // and after all of these the handler answers again
        assertThat(get(1, "/v1/http/" + HANDLER + "/revenue").statusCode()).isEqualTo(200);
    }

    @Test
    void unknownRoutesAndHandlersAreNotFound() throws Exception {
        assertFailure(get(0, "/v1/http/" + HANDLER + "/nope"), 404, ErrorCode.UNSUPPORTED_STATEMENT);
        assertFailure(get(0, "/v1/http/" + HANDLER + "/revenue/"), 404, ErrorCode.UNSUPPORTED_STATEMENT);
        assertFailure(get(0, "/v1/http/no_such_handler/revenue"), 404, ErrorCode.UNKNOWN_BINDING);
        // a handler route needs the admin token, like /admin/*
        HttpResponse<byte[]> anonymous = http.send(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/http/"
                + HANDLER + "/revenue")).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
        assertFailure(anonymous, 401, ErrorCode.AUTHENTICATION_FAILED);
        assertFailure(get(0, "/v1/http/revenue_by_region/revenue"), 404, ErrorCode.UNKNOWN_BINDING);
        HttpResponse<byte[]> post = send(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/http/" + HANDLER
                + "/revenue")).POST(HttpRequest.BodyPublishers.ofString("{}")));
        assertFailure(post, 405, ErrorCode.UNSUPPORTED_STATEMENT);
        assertThat(post.headers().firstValue("allow")).hasValue("GET");
        // a handler is not a distributed call
        HttpResponse<byte[]> called = send(HttpRequest.newBuilder(URI.create(node(0).httpAddress() + "/v1/bindings/" + HANDLER
                + "/call")).POST(HttpRequest.BodyPublishers.ofString("{}")));
        assertFailure(called, 404, ErrorCode.UNKNOWN_BINDING);
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            assertThatThrownBy(() -> s.executeQuery("CALL BINDING " + HANDLER + "('{}')"))
                    .hasMessageContaining("does not exist");
        }
    }

    private static HttpResponse<byte[]> deploy(String manifest, byte[] module) throws Exception {
        String body = "{\"manifest\": " + manifest + ", \"module\": \"" + Base64.getEncoder().encodeToString(module) + "\"}";
        return send(HttpRequest.newBuilder(URI.create(node(2).httpAddress() + "/admin/bindings"))
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    private static String manifest(String binding, String routes) {
        return "{\"manifestVersion\": 2, \"binding\": \"" + binding + "\", \"module\": \"h.wat\", \"http\": {\"routes\": "
                + routes + "}}";
    }

    @Test
    void aHandlerWithABadManifestOrModuleIsRefusedAtDeploy() throws Exception {
        byte[] module = resource("contract_handler.wat");
        HttpResponse<byte[]> conflict = deploy(manifest("handler_it_bad",
                "[{\"method\": \"GET\", \"path\": \"/a/{x}\"}, {\"method\": \"GET\", \"path\": \"/{y}/b\"}]"), module);
        assertFailure(conflict, 400, ErrorCode.INVALID_CONFIGURATION);
        assertThat(json(conflict).at("/error/message").asText())
                .contains("manifest.http.routes[1]: GET /{y}/b conflicts with manifest.http.routes[0] GET /a/{x}: both match GET /a/b");
        HttpResponse<byte[]> bad = deploy(manifest("handler_it_bad",
                "[{\"method\": \"FETCH\", \"path\": \"regions/{region}\", \"headers\": [\"Authorization\"]}]"), module);
        assertFailure(bad, 400, ErrorCode.INVALID_CONFIGURATION);
        assertThat(json(bad).at("/error/message").asText()).contains("manifest.http.routes[0].method",
                "manifest.http.routes[0].path", "manifest.http.routes[0].headers");
        HttpResponse<byte[]> withSelector = deploy("{\"manifestVersion\": 2, \"binding\": \"handler_it_bad\", \"module\":"
                + " \"h.wat\", \"selector\": \"SELECT region FROM orders\", \"http\": {\"routes\": [{\"method\": \"GET\","
                + " \"path\": \"/\"}]}}", module);
        assertFailure(withSelector, 400, ErrorCode.INVALID_CONFIGURATION);
        assertThat(json(withSelector).at("/error/message").asText()).contains("manifest.selector: an HTTP handler");
        // a handler importing what only run and reduce may
        byte[] emits = ("(module (import \"thresher\" \"emit\" (func (param i32 i32 f64) (result i32)))"
                + " (memory (export \"memory\") 1 1) (func (export \"thresher_handler_abi_version\") (result i32) (i32.const 1))"
                + " (func (export \"handle\") (param i32) (result i32) (i32.const 0)))").getBytes(StandardCharsets.UTF_8);
        HttpResponse<byte[]> imports = deploy(manifest("handler_it_bad", "[{\"method\": \"GET\", \"path\": \"/\"}]"), emits);
        assertFailure(imports, 422, ErrorCode.GUEST_INVALID_MODULE);
        assertThat(json(imports).at("/error/message").asText()).contains("import thresher.emit");
        // a distributed call's name cannot become a handler
        HttpResponse<byte[]> kind = deploy(manifest("revenue_by_region", "[{\"method\": \"GET\", \"path\": \"/\"}]"), module);
        assertFailure(kind, 400, ErrorCode.INVALID_CONFIGURATION);
        assertThat(get(0, "/v1/http/handler_it_bad/").statusCode()).isEqualTo(404);
        // the deploy API refuses the same way without HTTP
        assertThatThrownBy(() -> Cluster.bindings().deploy(DevCluster.TENANT, "test", manifest("handler_it_bad",
                "[{\"method\": \"GET\", \"path\": \"/x\"}, {\"method\": \"GET\", \"path\": \"/x\"}]").getBytes(StandardCharsets.UTF_8),
                module)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION));
        assertThat(List.of(conflict, bad, withSelector, imports, kind)).allMatch(r -> r.statusCode() >= 400);
    }
}
