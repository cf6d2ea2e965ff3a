package dev.thresher.http;

import static dev.thresher.http.Wire.closedByServer;
import static dev.thresher.http.Wire.connect;
import static dev.thresher.http.Wire.get;
import static dev.thresher.http.Wire.post;
import static dev.thresher.http.Wire.read;
import static dev.thresher.http.Wire.send;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.limits.Limits;
import java.io.ByteArrayOutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What the HTTP front answers to one request: routes, refused requests, and the typed error of each. */
class HttpFrontRequestTest {
    private final Wire.StubCalls calls = Wire.StubCalls.echo();
    private HttpFront front;

    private HttpFront start(Limits limits) throws InterruptedException {
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(limits).calls(calls).start();
        return front;
    }

    @AfterEach
    void stop() {
        if (front != null) {
            front.close();
        }
    }

    @Test
    void aCallAnswersItsResult() throws Exception {
        start(Limits.DEFAULTS);
        HttpResponse<String> res = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + front.port() + "/v1/bindings/sum/call"))
                .timeout(Duration.ofMillis(Wire.WAIT_MS))
                .POST(HttpRequest.BodyPublishers.ofString("{\"x\":\"é\"}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(res.statusCode()).isEqualTo(200);
        assertThat(Wire.JSON.readTree(res.body()).path("result").path("args").path("x").asText()).isEqualTo("é");
        assertThat(calls.requests.poll().tenant()).isEqualTo("t1");
    }

    @Test
    void aBindingNameOverSixtyThreeBytesIsRefused400WithoutACallAndWithoutEchoingIt() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, post("/v1/bindings/" + "n".repeat(3_000) + "/call", "{}"));
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(400);
            assertThat(res.errorCode()).as("NAME_TOO_LONG").isEqualTo(1018);
            String message = res.json().path("error").path("message").asText();
            assertThat(message).contains("63 bytes").contains("…(3000 bytes)");
            assertThat(message.length()).isLessThan(300);
            send(s, post("/v1/bindings/" + "n".repeat(63) + "/call", "{}"));
            assertThat(read(s).status()).as("63 bytes is a name").isEqualTo(200);
        }
        assertThat(calls.requests).hasSize(1);
    }

    @Test
    void aLongUnknownPathIsEchoedCutShort() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, get("/nowhere/" + "p".repeat(3_000)));
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(404);
            String message = res.json().path("error").path("message").asText();
            assertThat(message).startsWith("no route for GET /nowhere/ppp").contains("…(3009 bytes)");
            assertThat(message.length()).isLessThan(300);
        }
    }

    @Test
    void aHeaderSectionOverTheDecoderLimitIsRefused431AndClosesWithoutACall() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, "POST /v1/bindings/sum/call HTTP/1.1\r\nHost: t\r\nX-Long: " + "a".repeat(10_000)
                    + "\r\nContent-Length: 2\r\n\r\n{}");
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(431);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION.code());
            assertThat(res.header("connection")).isEqualToIgnoringCase("close");
            assertThat(closedByServer(s)).isTrue();
        }
        assertThat(calls.requests).isEmpty();
    }

    @Test
    void aMalformedRequestIsRefused400AndClosesWithoutACall() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, "POST /v1/bindings/sum/call HTTP/1.1\r\nHost: t\r\nContent-Length: twelve\r\n\r\n{}");
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(400);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION.code());
            assertThat(closedByServer(s)).isTrue();
        }
        assertThat(calls.requests).isEmpty();
    }

    @Test
    void anEmptyBodyIsRefusedAsInvalidArguments() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, post("/v1/bindings/sum/call", ""));
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(400);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.INVALID_ARGUMENTS.code());
            send(s, post("/v1/bindings/sum/call", " \r\n"));
            assertThat(read(s).errorCode()).isEqualTo(ErrorCode.INVALID_ARGUMENTS.code());
            send(s, get("/livez"));
            assertThat(read(s).status()).as("the connection keeps serving").isEqualTo(200);
        }
        assertThat(calls.requests).isEmpty();
    }

    @Test
    void aBodyThatIsNotUtf8IsRefusedAsInvalidTextEncoding() throws Exception {
        start(Limits.DEFAULTS);
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.writeBytes("{\"region\":\"".getBytes(StandardCharsets.US_ASCII));
        body.write(0xC3); // a lead byte with no continuation
        body.writeBytes("\"}".getBytes(StandardCharsets.US_ASCII));
        try (Socket s = connect(front)) {
            send(s, post("/v1/bindings/sum/call", body.toByteArray()));
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(400);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.INVALID_TEXT_ENCODING.code());
            assertThat(res.json().path("error").path("name").asText()).isEqualTo("INVALID_TEXT_ENCODING");
            send(s, get("/livez"));
            assertThat(read(s).status()).as("the connection keeps serving").isEqualTo(200);
        }
        assertThat(calls.requests).isEmpty();
    }

    @Test
    void aBodyOverThePayloadLimitIsATyped413AndCloses() throws Exception {
        start(Wire.limits(Map.of("directCallPayloadBytes", "1000")));
        String big = "{\"pad\":\"" + "x".repeat(5_000) + "\"}";
        try (Socket s = connect(front)) {
            send(s, post("/v1/bindings/sum/call", big));
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(413);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE.code());
            assertThat(res.json().path("error").path("name").asText()).isEqualTo("PAYLOAD_TOO_LARGE");
            assertThat(closedByServer(s)).isTrue();
        }
        try (Socket s = connect(front)) {
            send(s, "POST /v1/bindings/sum/call HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + Integer.toHexString(big.length()) + "\r\n" + big + "\r\n0\r\n\r\n");
            Wire.Response res = read(s);
            assertThat(res.status()).as("chunked").isEqualTo(413);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE.code());
            assertThat(closedByServer(s)).isTrue();
        }
        try (Socket s = connect(front)) {
            send(s, "POST /v1/bindings/sum/call HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n");
            Wire.Response res = read(s);
            assertThat(res.status()).as("Expect: 100-continue").isEqualTo(413);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE.code());
            assertThat(closedByServer(s)).isTrue();
        }
        String exact = "\"" + "x".repeat(998) + "\"";
        try (Socket s = connect(front)) {
            send(s, post("/v1/bindings/sum/call", exact));
            assertThat(read(s).status()).as("a body of exactly the limit").isEqualTo(200);
        }
        assertThat(calls.requests).hasSize(1);
    }

    @Test
    void anUnknownPathIs404AndAWrongMethod405WithAllow() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, get("/nope"));
            Wire.Response notFound = read(s);
            assertThat(notFound.status()).isEqualTo(404);
            assertThat(notFound.errorCode()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT.code());

            send(s, post("/livez", "{}"));
            Wire.Response livez = read(s);
            assertThat(livez.status()).isEqualTo(405);
            assertThat(livez.header("allow")).isEqualTo("GET");
            assertThat(livez.errorCode()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT.code());

            send(s, get("/v1/bindings/sum/call"));
            Wire.Response call = read(s);
            assertThat(call.status()).isEqualTo(405);
            assertThat(call.header("allow")).isEqualTo("POST");

            send(s, post("/v1/bindings/9-not-a-name/call", "{}"));
            Wire.Response badName = read(s);
            assertThat(badName.status()).isEqualTo(404);
            assertThat(badName.errorCode()).as("the status is the code's").isEqualTo(ErrorCode.UNKNOWN_BINDING.code());
            assertThat(HttpStatuses.of(ErrorCode.UNKNOWN_BINDING).code()).isEqualTo(404);
        }
        assertThat(calls.requests).isEmpty();
    }

    @Test
    void aPathOfSeveralMethodsAnswersAWrongMethod405NamingEachAndAPathNoRouteHas404() throws Exception {
        dev.thresher.bindings.TableService tables = (dev.thresher.bindings.TableService) java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {dev.thresher.bindings.TableService.class}, (proxy, method, args) -> {
                    if (method.getName().equals("list")) {
                        return java.util.List.of();
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(Limits.DEFAULTS).calls(calls).tables(tables)
                .start();
        try (Socket s = connect(front)) {
            send(s, "PUT /admin/tables HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
            Wire.Response put = read(s);
            assertThat(put.status()).isEqualTo(405);
            assertThat(put.header("allow")).isEqualTo("GET, POST");
            assertThat(put.errorCode()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT.code());
            assertThat(put.json().at("/error/message").asText()).isEqualTo("/admin/tables serves GET or POST, not PUT");

            send(s, post("/admin/tables/t", "{}"));
            Wire.Response postOne = read(s);
            assertThat(postOne.status()).isEqualTo(405);
            assertThat(postOne.header("allow")).isEqualTo("GET, DELETE");

            send(s, get("/admin/tables"));
            Wire.Response list = read(s);
            assertThat(list.status()).isEqualTo(200);
            assertThat(list.body()).isEqualTo("[]");

            for (String path : new String[] {"/admin/tables/", "/admin/tables/t/", "/admin/tables/t/migrate/x",
                    "/admin/tables/a%2Fb/migrate/x", "/livez/", "/v1/bindings/sum/call/"}) {
                send(s, get(path));
                Wire.Response none = read(s);
                assertThat(none.status()).as(path).isEqualTo(404);
                assertThat(none.header("allow")).as(path).isNull();
                assertThat(none.json().at("/error/message").asText()).as(path).isEqualTo("no route for GET " + path);
            }
        }
        assertThat(calls.requests).isEmpty();
    }
}
