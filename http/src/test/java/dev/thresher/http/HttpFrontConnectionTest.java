package dev.thresher.http;

import static dev.thresher.http.Wire.closedByServer;
import static dev.thresher.http.Wire.connect;
import static dev.thresher.http.Wire.get;
import static dev.thresher.http.Wire.post;
import static dev.thresher.http.Wire.read;
import static dev.thresher.http.Wire.send;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.CallResult;
import dev.thresher.errors.ErrorCode;
import dev.thresher.limits.Limits;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** How the HTTP front holds connections: one request at a time, bounded arrival, a cap on how many. */
class HttpFrontConnectionTest {
    /** Calls of the binding {@code slow} complete after this long; every other call at once. */
    private static final long SLOW_MS = 1_000;

    private final Wire.StubCalls calls = new Wire.StubCalls(r -> r.bindingName().equals("slow")
            ? CompletableFuture.supplyAsync(() -> Wire.StubCalls.echoOf(r),
                    CompletableFuture.delayedExecutor(SLOW_MS, TimeUnit.MILLISECONDS))
            : CompletableFuture.completedFuture(Wire.StubCalls.echoOf(r)));
    private HttpFront front;

    private void start(Limits limits) throws InterruptedException {
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(limits).calls(calls).start();
    }

    @AfterEach
    void stop() {
        if (front != null) {
            front.close();
        }
    }

    @Test
    void pipelinedRequestsAreAnsweredInRequestOrderOneCallAtATime() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, post("/v1/bindings/slow/call", "{\"n\":1}") + post("/v1/bindings/fast/call", "{\"n\":2}")
                    + get("/livez") + post("/v1/bindings/fast/call", "{\"n\":3}"));
            Wire.Response first = read(s);
            Wire.Response second = read(s);
            Wire.Response third = read(s);
            Wire.Response fourth = read(s);
            assertThat(first.json().path("result").path("args").path("n").asInt()).isEqualTo(1);
            assertThat(second.json().path("result").path("args").path("n").asInt()).isEqualTo(2);
            assertThat(third.json().path("status").asText()).isEqualTo("live");
            assertThat(fourth.json().path("result").path("args").path("n").asInt()).isEqualTo(3);
        }
        assertThat(calls.maxInFlight.get()).as("calls in flight at once on one connection").isEqualTo(1);
    }

    @Test
    void aRequestThatNeverFinishesArrivingIsClosedWithoutACall() throws Exception {
        start(Wire.limits(Map.of("httpRequestTimeoutMs", "300")));
        try (Socket s = connect(front)) {
            send(s, "POST /v1/bindings/fast/call HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"n\":");
            assertThat(closedByServer(s)).isTrue();
        }
        assertThat(calls.requests).isEmpty();
    }

    @Test
    void aRequestTrickledByteByByteIsClosedAtTheBoundNotKeptAliveByEachByte() throws Exception {
        start(Wire.limits(Map.of("httpRequestTimeoutMs", "400")));
        try (Socket s = connect(front)) {
            Thread trickle = Thread.ofVirtual().start(() -> {
                try {
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Wire.WAIT_MS);
                    send(s, "POST /v1/bindings/fast/call HTTP/1.1\r\nHost: t\r\n");
                    while (System.nanoTime() < end) {
                        send(s, "X");
                        Thread.sleep(50);
                    }
                } catch (IOException | InterruptedException e) {
                    // closed by the server, or the test ended
                }
            });
            try {
                assertThat(closedByServer(s)).isTrue();
            } finally {
                trickle.interrupt();
            }
        }
        assertThat(calls.requests).isEmpty();
    }

    @Test
    void aClientThatDoesNotReadItsResponseLosesTheConnection() throws Exception {
        String big = "\"" + "x".repeat(8 << 20) + "\"";
        Wire.StubCalls bigResults = new Wire.StubCalls(r -> CompletableFuture.completedFuture(new CallResult("c", big)));
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1")
                .limits(Wire.limits(Map.of("httpRequestTimeoutMs", "200"))).calls(bigResults).start();
        try (Socket s = new Socket()) {
            s.setReceiveBufferSize(4096);
            s.connect(new java.net.InetSocketAddress("127.0.0.1", front.port()));
            s.setSoTimeout(Wire.WAIT_MS);
            send(s, post("/v1/bindings/big/call", "{}"));
            // Not reading: 8 MiB cannot fit in the socket buffers, so the response is not written in
            // 200 ms. Wait well past that before reading anything.
            Thread.sleep(2_000);
            long received = 0;
            boolean closed;
            try {
                byte[] buf = new byte[65_536];
                int n;
                while ((n = s.getInputStream().read(buf)) >= 0) {
                    received += n;
                }
                closed = true;
            } catch (java.net.SocketTimeoutException e) {
                closed = false;
            } catch (java.net.SocketException e) {
                closed = true;
            }
            assertThat(closed).as("closed by the server").isTrue();
            assertThat(received).as("the response was cut").isLessThan(8L << 20);
        }
    }

    @Test
    void anIdleKeepAliveConnectionIsClosedAfterTheBound() throws Exception {
        start(Wire.limits(Map.of("httpRequestTimeoutMs", "300")));
        try (Socket s = connect(front)) {
            send(s, get("/livez"));
            assertThat(read(s).status()).isEqualTo(200);
            assertThat(closedByServer(s)).isTrue();
        }
    }

    @Test
    void aCallInFlightLongerThanTheRequestTimeoutIsStillAnswered() throws Exception {
        start(Wire.limits(Map.of("httpRequestTimeoutMs", "200")));
        try (Socket s = connect(front)) {
            send(s, post("/v1/bindings/slow/call", "{\"n\":7}"));
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(200);
            assertThat(res.json().path("result").path("args").path("n").asInt()).isEqualTo(7);
        }
    }

    @Test
    void connectionsOverTheCapAreAnswered503AndClosed() throws Exception {
        start(Wire.limits(Map.of("httpMaxConnections", "2")));
        List<Socket> open = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                Socket s = connect(front);
                open.add(s);
                send(s, get("/livez"));
                assertThat(read(s).status()).isEqualTo(200);
            }
            try (Socket third = connect(front)) {
                Wire.Response res = read(third);
                assertThat(res.status()).isEqualTo(503);
                assertThat(res.errorCode()).as("TOO_MANY_CONNECTIONS").isEqualTo(6003);
                assertThat(res.json().path("error").path("retry").asText()).isEqualTo("RETRYABLE");
                assertThat(closedByServer(third)).isTrue();
            }
            open.removeFirst().close();
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Wire.WAIT_MS);
            int status = 0;
            while (status != 200 && System.nanoTime() < end) { // the server sees the close a moment later
                try (Socket again = connect(front)) {
                    send(again, get("/livez"));
                    status = read(again).status();
                } catch (IOException refusedAndClosed) {
                    status = 0;
                }
            }
            assertThat(status).as("a connection once one closed").isEqualTo(200);
        } finally {
            for (Socket s : open) {
                s.close();
            }
        }
    }

    @Test
    void anExceptionInThePipelineClosesTheConnection() {
        EmbeddedChannel ch = new EmbeddedChannel(
                HttpFront.builder().tenant("t1").limits(Limits.DEFAULTS).calls(calls).connection(new AtomicInteger()));
        assertThat(ch.isOpen()).isTrue();
        ch.pipeline().fireExceptionCaught(new IOException("Connection reset by peer"));
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }
}
