package dev.thresher.http;

import static dev.thresher.http.Wire.connect;
import static dev.thresher.http.Wire.get;
import static dev.thresher.http.Wire.post;
import static dev.thresher.http.Wire.read;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.HandlerRequest;
import dev.thresher.bindings.HandlerResponse;
import dev.thresher.bindings.HandlerService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The routes of HTTP handler bindings on the front door: what reaches the handler service, and how it is answered. */
class HandlerRoutesTest {
    private static final String TOKEN = "handler-routes-token-0123";
    private final LinkedBlockingQueue<HandlerRequest> requests = new LinkedBlockingQueue<>();

    /** Sends {@code request} with the admin token every handler route needs. */
    private static void send(java.net.Socket s, String request) throws java.io.IOException {
        int eol = request.indexOf("\r\n");
        Wire.send(s, request.substring(0, eol + 2) + "Authorization: Bearer " + TOKEN + "\r\n" + request.substring(eol + 2));
    }
    private HttpFront front;

    private void start(Limits limits, Function<HandlerRequest, CompletableFuture<HandlerResponse>> behaviour)
            throws InterruptedException {
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(limits).calls(Wire.StubCalls.echo())
                .access(HttpAccess.withToken(TOKEN)).start();
        front.serveHandlers(r -> {
            requests.add(r);
            return behaviour.apply(r);
        });
    }

    @AfterEach
    void stop() {
        if (front != null) {
            front.close();
        }
    }

    @Test
    void aRequestReachesTheServiceWholeAndItsAnswerIsWrittenAsIs() throws Exception {
        start(Limits.DEFAULTS, r -> CompletableFuture.completedFuture(new HandlerResponse(201,
                List.of(Map.entry("content-type", "text/plain"), Map.entry("x-a", "1"), Map.entry("x-a", "2")),
                "made".getBytes(StandardCharsets.UTF_8))));
        try (Socket s = connect(front)) {
            send(s, "POST /v1/http/my_api/regions/eu%20w/x?a=1&b=2 HTTP/1.1\r\nHost: t\r\nThresher-Deadline-Ms: 5000\r\n"
                    + "X-Trace: abc\r\nContent-Length: 3\r\n\r\nabc");
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(201);
            assertThat(res.body()).isEqualTo("made");
            assertThat(res.header("content-type")).isEqualTo("text/plain");
            assertThat(res.header("content-length")).isEqualTo("4");
            send(s, get("/v1/http/my_api"));
            assertThat(read(s).status()).as("the connection keeps serving").isEqualTo(201);
        }
        HandlerRequest r = requests.poll();
        assertThat(r.tenant()).isEqualTo("t1");
        assertThat(r.binding()).isEqualTo("my_api");
        assertThat(r.method()).isEqualTo("POST");
        assertThat(r.path()).isEqualTo("/regions/eu%20w/x");
        assertThat(r.rawQuery()).isEqualTo("a=1&b=2");
        assertThat(r.headers()).contains(Map.entry("x-trace", "abc"), Map.entry("thresher-deadline-ms", "5000"));
        assertThat(r.body()).isEqualTo("abc".getBytes(StandardCharsets.UTF_8));
        assertThat(r.deadlineMs()).hasValue(5000L);
        HandlerRequest root = requests.poll();
        assertThat(root.path()).isEqualTo("/");
        assertThat(root.rawQuery()).isEmpty();
        assertThat(root.deadlineMs()).isEmpty();
    }

    @Test
    void refusalsAreTypedWithTheirStatus() throws Exception {
        start(Wire.limits(Map.of("directCallPayloadBytes", "100")), r -> switch (r.path()) {
            case "/none" -> CompletableFuture.failedFuture(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "no route",
                    new HandlerService.RouteRefusal(Set.of())));
            case "/other" -> CompletableFuture.failedFuture(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "GET only",
                    new HandlerService.RouteRefusal(new java.util.LinkedHashSet<>(List.of("GET", "PUT")))));
            case "/trap" -> CompletableFuture.failedFuture(new ThresherException(ErrorCode.GUEST_TRAP, "trapped")
                    .afterGuestCode());
            default -> CompletableFuture.failedFuture(new ThresherException(ErrorCode.NESTED_CALL_LIMIT_EXCEEDED, "two"));
        });
        try (Socket s = connect(front)) {
            send(s, get("/v1/http/h/none"));
            Wire.Response none = read(s);
            assertThat(none.status()).isEqualTo(404);
            assertThat(none.errorCode()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT.code());
            send(s, post("/v1/http/h/other", "{}"));
            Wire.Response other = read(s);
            assertThat(other.status()).isEqualTo(405);
            assertThat(other.header("allow")).isEqualTo("GET, PUT");
            send(s, get("/v1/http/h/trap"));
            Wire.Response trap = read(s);
            assertThat(trap.status()).isEqualTo(422);
            assertThat(trap.json().at("/error/guestCodeRan").asBoolean()).isTrue();
            send(s, get("/v1/http/h/twice"));
            Wire.Response twice = read(s);
            assertThat(twice.status()).isEqualTo(422);
            assertThat(twice.json().at("/error/name").asText()).isEqualTo("NESTED_CALL_LIMIT_EXCEEDED");
            send(s, get("/v1/http/bad-name/x"));
            Wire.Response badName = read(s);
            assertThat(badName.status()).isEqualTo(404);
            assertThat(badName.errorCode()).isEqualTo(ErrorCode.UNKNOWN_BINDING.code());
            send(s, get("/v1/http/"));
            assertThat(read(s).status()).isEqualTo(404);
            send(s, "GET /v1/http/h/x HTTP/1.1\r\nHost: t\r\nThresher-Deadline-Ms: soon\r\n\r\n");
            assertThat(read(s).errorCode()).isEqualTo(ErrorCode.INVALID_DEADLINE.code());
            send(s, post("/v1/http/h/x", "x".repeat(101)));
            Wire.Response big = read(s);
            assertThat(big.status()).isEqualTo(413);
            assertThat(big.errorCode()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE.code());
        }
        assertThat(requests).extracting(HandlerRequest::path).containsExactly("/none", "/other", "/trap", "/twice");
    }

    @Test
    void withoutHandlersTheRoutesAreNotServed() throws Exception {
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(Limits.DEFAULTS)
                .calls(Wire.StubCalls.echo()).access(HttpAccess.withToken(TOKEN)).start();
        try (Socket s = connect(front)) {
            send(s, get("/v1/http/h/x"));
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(404);
            assertThat(res.json().at("/error/message").asText()).contains("serves no HTTP handlers");
        }
    }
}
