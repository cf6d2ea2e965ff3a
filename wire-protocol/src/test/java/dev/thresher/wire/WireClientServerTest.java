package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Partial;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A real {@link WireServer} and {@link WireClient} over loopback TCP. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WireClientServerTest {
    private static final String HOST = "127.0.0.1";
    private static final long WAIT_SECONDS = 20;

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final ExecutorService work = Executors.newFixedThreadPool(4);

    @AfterEach
    void tearDown() throws Exception {
        Collections.reverse(closeables);
        for (AutoCloseable c : closeables) {
            c.close();
        }
        work.shutdownNow();
    }

    @Test
    void correlatesConcurrentRequestsOverOneConnection() throws Exception {
        int n = 64;
        Map<Long, CompletableFuture<WireMessage>> held = new ConcurrentHashMap<>();
        CountDownLatch allArrived = new CountDownLatch(n);
        AtomicReference<String> wrongThread = new AtomicReference<>();
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> {
            Thread t = Thread.currentThread();
            if (!t.isVirtual() || !t.getName().startsWith("thresher-wire-dispatch-") || receivedNanos > System.nanoTime()) {
                wrongThread.set(t + " at " + receivedNanos);
            }
            CompletableFuture<WireMessage> reply = new CompletableFuture<>();
            held.put(request.requestId(), reply);
            allArrived.countDown();
            return reply;
        });
        WireClient client = client(Limits.DEFAULTS);

        List<CompletableFuture<WireMessage>> sent = new ArrayList<>();
        List<CompletableFuture<?>> senders = new ArrayList<>();
        Map<Long, CompletableFuture<WireMessage>> byId = new ConcurrentHashMap<>();
        for (int i = 0; i < n; i++) {
            long id = 1000 + i;
            senders.add(CompletableFuture.runAsync(() -> byId.put(id, client.send(HOST, server.port(), request(id))), work));
        }
        CompletableFuture.allOf(senders.toArray(CompletableFuture[]::new)).get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(allArrived.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(server.openConnections()).isEqualTo(1);

        // answer in reverse order of ids, from a thread of the "handler's executor"
        List<Long> ids = new ArrayList<>(held.keySet());
        ids.sort(Collections.reverseOrder());
        CompletableFuture.runAsync(() -> {
            for (long id : ids) {
                held.get(id).complete(id % 5 == 0
                        ? new ShardRunFailure(id, "w" + id, ErrorCode.GUEST_TRAP.code(), true, "trap " + id)
                        : new ShardRunResult(id, "w" + id, 3, 5, 10, 1, 1, 1, List.of(new Partial("id", id))));
            }
        }, work);

        for (var e : byId.entrySet()) {
            long id = e.getKey();
            WireMessage reply = e.getValue().get(WAIT_SECONDS, TimeUnit.SECONDS);
            if (id % 5 == 0) {
                assertThat(reply).isEqualTo(new ShardRunFailure(id, "w" + id, ErrorCode.GUEST_TRAP.code(), true, "trap " + id));
            } else {
                assertThat(reply).isInstanceOfSatisfying(ShardRunResult.class, r -> {
                    assertThat(r.requestId()).isEqualTo(id);
                    assertThat(r.wireId()).isEqualTo("w" + id);
                    assertThat(r.partials()).containsExactly(new Partial("id", id));
                });
            }
        }
        assertThat(wrongThread.get()).isNull();
        assertThat(server.openConnections()).isEqualTo(1);
    }

    @Test
    void handlerExceptionsBecomeTypedFailureReplies() throws Exception {
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> switch ((int) request.requestId()) {
            case 1 -> CompletableFuture.failedFuture(new ThresherException(ErrorCode.TARGET_STALE, "epoch moved"));
            case 2 -> throw new IllegalStateException("handler bug");
            default -> CompletableFuture.supplyAsync(() -> {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "budget spent");
            });
        });
        WireClient client = client(Limits.DEFAULTS);
        assertThat(client.send(HOST, server.port(), request(1)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(new ShardRunFailure(1, "w1", ErrorCode.TARGET_STALE.code(), false, "epoch moved"));
        assertThat(client.send(HOST, server.port(), request(2)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOfSatisfying(ShardRunFailure.class, f -> {
                    assertThat(f.code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
                    assertThat(f.guestStarted()).isTrue();
                });
        assertThat(client.send(HOST, server.port(), request(3)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOfSatisfying(ShardRunFailure.class, f -> {
                    assertThat(f.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
                    assertThat(f.message()).isEqualTo("budget spent");
                });
    }

    @Test
    void serverClosedMidRequestIsAnUnknownOutcome() throws Exception {
        CountDownLatch arrived = new CountDownLatch(1);
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> {
            arrived.countDown();
            return new CompletableFuture<>(); // never answers
        });
        WireClient client = client(Limits.DEFAULTS);
        CompletableFuture<WireMessage> reply = client.send(HOST, server.port(), request(7));
        assertThat(arrived.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        server.close();
        assertFailsWith(reply, ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
    }

    @Test
    void nothingListeningIsHostUnreachable() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            port = probe.getLocalPort();
        }
        WireClient client = client(Limits.DEFAULTS);
        assertFailsWith(client.send(HOST, port, request(1)), ErrorCode.HOST_UNREACHABLE);
        // the failed connection left the pool: the next send tries again, and fails the same way
        assertFailsWith(client.send(HOST, port, request(2)), ErrorCode.HOST_UNREACHABLE);
    }

    @Test
    void peerThatClosesDuringTheHandshakeIsHostUnreachable() throws Exception {
        ServerSocket silent = new ServerSocket(0, 1, InetAddress.getByName(HOST));
        closeables.add(silent);
        Thread acceptor = Thread.ofVirtual().start(() -> {
            try (Socket s = silent.accept()) {
                s.getInputStream().read(); // the first byte of Hello arrived; hang up without answering
            } catch (IOException ignored) {
                // the test ends either way
            }
        });
        WireClient client = client(Limits.DEFAULTS);
        assertFailsWith(client.send(HOST, silent.getLocalPort(), request(1)), ErrorCode.HOST_UNREACHABLE);
        acceptor.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
    }

    @Test
    void oversizedFrameIsRejectedByTheServer() throws Exception {
        Limits small = WireFixtures.smallFrames(8192);
        CountDownLatch called = new CountDownLatch(1);
        WireServer server = server(small, (request, receivedNanos) -> {
            called.countDown();
            return CompletableFuture.completedFuture(
                    new ShardRunResult(request.requestId(), request.wireId(), 0, 0, 0, 0, 0, 0, List.of()));
        });
        WireClient client = client(Limits.DEFAULTS);
        assertThat(client.send(HOST, server.port(), request(1)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOf(ShardRunResult.class);
        ShardRunRequest big = new ShardRunRequest(2, "c", "w", "t", "b", "d", 1, 0, 0, 0, 1_000, 0, "x".repeat(10_000));
        // the request left whole, so the client cannot know whether the server acted on it
        assertFailsWith(client.send(HOST, server.port(), big), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
        // a fresh connection serves the next request
        assertThat(client.send(HOST, server.port(), request(3)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOf(ShardRunResult.class);
    }

    @Test
    void oversizedRequestIsRefusedBeforeItIsSent() throws Exception {
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> CompletableFuture.completedFuture(
                new ShardRunResult(request.requestId(), request.wireId(), 0, 0, 0, 0, 0, 0, List.of())));
        WireClient client = client(WireFixtures.smallFrames(8192));
        ShardRunRequest big = new ShardRunRequest(2, "c", "w", "t", "b", "d", 1, 0, 0, 0, 1_000, 0, "x".repeat(10_000));
        assertFailsWith(client.send(HOST, server.port(), big), ErrorCode.PAYLOAD_TOO_LARGE);
        assertThat(client.send(HOST, server.port(), request(3)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOf(ShardRunResult.class);
        assertThat(server.openConnections()).isEqualTo(1);
    }

    @Test
    void duplicateRequestIdInFlightIsRefused() throws Exception {
        CountDownLatch arrived = new CountDownLatch(1);
        CompletableFuture<WireMessage> hold = new CompletableFuture<>();
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> {
            arrived.countDown();
            return hold;
        });
        WireClient client = client(Limits.DEFAULTS);
        CompletableFuture<WireMessage> first = client.send(HOST, server.port(), request(5));
        assertThat(arrived.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertFailsWith(client.send(HOST, server.port(), request(5)), ErrorCode.INTERNAL_ERROR);
        hold.complete(new ShardRunResult(5, "w5", 0, 0, 0, 0, 0, 0, List.of()));
        assertThat(first.get(WAIT_SECONDS, TimeUnit.SECONDS)).isInstanceOf(ShardRunResult.class);
    }

    @Test
    void closedClientRefusesToSend() throws Exception {
        WireClient client = new WireClient("node-a", Limits.DEFAULTS);
        client.close();
        assertFailsWith(client.send(HOST, 1, request(1)), ErrorCode.HOST_UNREACHABLE);
    }

    private WireServer server(Limits limits, ShardRunHandler handler) throws InterruptedException {
        WireServer server = WireServer.start(HOST, 0, "node-b", limits, handler);
        closeables.add(server);
        return server;
    }

    private WireClient client(Limits limits) {
        WireClient client = new WireClient("node-a", limits);
        closeables.add(client);
        return client;
    }

    private static ShardRunRequest request(long id) {
        return new ShardRunRequest(id, "call", "w" + id, "tenant", "sum", "sha256:00", 1, 0, 3, 5, 2_000_000, 1, "{}");
    }

    private static void assertFailsWith(CompletableFuture<WireMessage> future, ErrorCode code) {
        assertThatThrownBy(() -> future.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).as(e.toString()).isEqualTo(code));
    }
}
