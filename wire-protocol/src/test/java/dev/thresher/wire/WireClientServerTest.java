package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Limits;
import dev.thresher.wire.WireMessage.CallStop;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
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
        Map<Long, CompletableFuture<HostReply>> held = new ConcurrentHashMap<>();
        Map<Long, HostRequest> arrivedRequests = new ConcurrentHashMap<>();
        CountDownLatch allArrived = new CountDownLatch(n);
        AtomicReference<String> wrongThread = new AtomicReference<>();
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> {
            Thread t = Thread.currentThread();
            if (!t.isVirtual() || !t.getName().startsWith("thresher-wire-dispatch-") || receivedNanos > System.nanoTime()) {
                wrongThread.set(t + " at " + receivedNanos);
            }
            CompletableFuture<HostReply> reply = new CompletableFuture<>();
            held.put(request.requestId(), reply);
            arrivedRequests.put(request.requestId(), request);
            allArrived.countDown();
            return reply;
        });
        WireClient client = client(Limits.DEFAULTS);

        List<CompletableFuture<?>> senders = new ArrayList<>();
        Map<Long, CompletableFuture<HostReply>> byId = new ConcurrentHashMap<>();
        for (int i = 0; i < n; i++) {
            long id = 1000 + i;
            senders.add(CompletableFuture.runAsync(() -> byId.put(id, client.send(HOST, server.port(), request(id))), work));
        }
        CompletableFuture.allOf(senders.toArray(CompletableFuture[]::new)).get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(allArrived.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(server.openConnections()).isEqualTo(1);
        for (long id : arrivedRequests.keySet()) {
            assertThat(arrivedRequests.get(id)).isEqualTo(request(id));
        }

        // answer in reverse order of ids, from a thread of the "handler's executor"
        List<Long> ids = new ArrayList<>(held.keySet());
        ids.sort(Collections.reverseOrder());
        CompletableFuture.runAsync(() -> {
            for (long id : ids) {
                held.get(id).complete(expectedReply(id));
            }
        }, work);

        for (var e : byId.entrySet()) {
            long id = e.getKey();
            assertThat(e.getValue().get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(expectedReply(id));
        }
        assertThat(wrongThread.get()).isNull();
        assertThat(server.openConnections()).isEqualTo(1);
    }

    /** Every fifth request traps in its last slot; the others publish every slot. */
    private static HostReply expectedReply(long id) {
        HostRequest request = request(id);
        if (id % 5 != 0) {
            return WireFixtures.published(request);
        }
        List<ShardRunOutcome> outcomes = new ArrayList<>(WireFixtures.published(request).runs());
        ShardRun last = request.runs().getLast();
        outcomes.set(outcomes.size() - 1, new ShardRunOutcome(last.runIndex(), last.wireId(), ErrorCode.GUEST_TRAP.code(),
                true, "trap " + id, 1, 0, 2, 3));
        return new HostReply(id, 7, outcomes);
    }

    @Test
    void handlerExceptionsBecomeTypedFailureReplies() throws Exception {
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> switch ((int) request.requestId()) {
            case 1 -> CompletableFuture.failedFuture(new ThresherException(ErrorCode.TARGET_STALE, "epoch moved"));
            case 2 -> throw new IllegalStateException("handler bug");
            case 3 -> CompletableFuture.supplyAsync(() -> {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "budget spent");
            });
            case 4 -> null;
            default -> CompletableFuture.completedFuture(WireFixtures.published(request(99)));
        });
        WireClient client = client(Limits.DEFAULTS);
        assertThat(client.send(HOST, server.port(), request(1)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(HostReply.failed(request(1), new ThresherException(ErrorCode.TARGET_STALE, "epoch moved"),
                        false));
        assertEverySlot(client.send(HOST, server.port(), request(2)).get(WAIT_SECONDS, TimeUnit.SECONDS), request(2),
                o -> {
                    assertThat(o.code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
                    assertThat(o.guestStarted()).isTrue();
                    assertThat(o.message()).contains("handler bug");
                });
        assertEverySlot(client.send(HOST, server.port(), request(3)).get(WAIT_SECONDS, TimeUnit.SECONDS), request(3),
                o -> {
                    assertThat(o.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
                    assertThat(o.guestStarted()).isTrue();
                    assertThat(o.message()).isEqualTo("budget spent");
                });
        assertEverySlot(client.send(HOST, server.port(), request(4)).get(WAIT_SECONDS, TimeUnit.SECONDS), request(4),
                o -> {
                    assertThat(o.code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
                    assertThat(o.guestStarted()).isTrue();
                });
        // the handler answered for another request: every slot of this one fails
        assertEverySlot(client.send(HOST, server.port(), request(5)).get(WAIT_SECONDS, TimeUnit.SECONDS), request(5),
                o -> {
                    assertThat(o.code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
                    assertThat(o.guestStarted()).isTrue();
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
        CompletableFuture<HostReply> reply = client.send(HOST, server.port(), request(7));
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
    void aPeerThatSpeaksOnlyVersionTwoIsHostUnreachable() throws Exception {
        // a version-2 server that picks its own version: the client refuses the ack
        FakePeer acking = fakePeer(new HelloAck(2, "old-node"), null);
        WireClient client = client(Limits.DEFAULTS);
        assertFailsWith(client.send(HOST, acking.port(), request(1)), ErrorCode.HOST_UNREACHABLE);
        assertThat(acking.hello().get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(
                new WireMessage.Hello(3, 3, "node-a"));
        assertThat(acking.requests()).isEmpty();
        // a version-2 server that refuses the client's range
        FakePeer rejecting = fakePeer(new HelloReject(ErrorCode.PROTOCOL_VIOLATION.code(), "no common protocol version"),
                null);
        CompletableFuture<HostReply> refused = client.send(HOST, rejecting.port(), request(2));
        assertFailsWith(refused, ErrorCode.HOST_UNREACHABLE);
        assertThatThrownBy(refused::get).hasMessageContaining("no common protocol version");
        assertThat(rejecting.requests()).isEmpty();
    }

    @Test
    void aReplyOfAnotherTypeIsAProtocolViolationThatEndsTheRequestUnknown() throws Exception {
        FakePeer peer = fakePeer(new HelloAck(3, "odd-node"), request -> request);
        WireClient client = client(Limits.DEFAULTS);
        assertFailsWith(client.send(HOST, peer.port(), request(8)), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
        assertThat(peer.requests()).containsExactly(request(8));
    }

    @Test
    void aReplyForOtherSlotsIsAProtocolViolationThatEndsTheRequestUnknown() throws Exception {
        FakePeer peer = fakePeer(new HelloAck(3, "odd-node"), request -> {
            HostReply published = WireFixtures.published(request);
            return new HostReply(request.requestId(), 0, published.runs().subList(0, published.runs().size() - 1));
        });
        WireClient client = client(Limits.DEFAULTS);
        HostRequest twoSlots = request(10);
        assertThat(twoSlots.runs()).hasSizeGreaterThan(1);
        assertFailsWith(client.send(HOST, peer.port(), twoSlots), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
    }

    @Test
    void oversizedFrameIsRejectedByTheServer() throws Exception {
        Limits small = WireFixtures.smallFrames(8192);
        WireServer server = server(small, (request, receivedNanos) ->
                CompletableFuture.completedFuture(WireFixtures.published(request)));
        WireClient client = client(Limits.DEFAULTS);
        assertThat(client.send(HOST, server.port(), request(1)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(1)));
        HostRequest big = new HostRequest(2, "c", "t", "b", "d", 1, 1_000, "x".repeat(10_000),
                List.of(new ShardRun(0, 0, 0, "w", 1)));
        // the request left whole, so the client cannot know whether the server acted on it
        assertFailsWith(client.send(HOST, server.port(), big), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
        // a fresh connection serves the next request
        assertThat(client.send(HOST, server.port(), request(3)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(3)));
    }

    @Test
    void oversizedRequestIsRefusedBeforeItIsSent() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> {
            calls.incrementAndGet();
            return CompletableFuture.completedFuture(WireFixtures.published(request));
        });
        WireClient client = client(WireFixtures.smallFrames(8192));
        // many slots, each small: the frame, not any one field, is what exceeds the cap
        List<ShardRun> slots = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            slots.add(new ShardRun(i, i, 1, "wire-" + i, 1));
        }
        HostRequest big = new HostRequest(2, "c", "t", "b", "d", 1, 1_000, "{}", slots);
        assertFailsWith(client.send(HOST, server.port(), big), ErrorCode.PAYLOAD_TOO_LARGE);
        assertThat(client.send(HOST, server.port(), request(3)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(3)));
        assertThat(calls).hasValue(1);
        assertThat(server.openConnections()).isEqualTo(1);
    }

    @Test
    void duplicateRequestIdInFlightIsRefused() throws Exception {
        CountDownLatch arrived = new CountDownLatch(1);
        CompletableFuture<HostReply> hold = new CompletableFuture<>();
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> {
            arrived.countDown();
            return hold;
        });
        WireClient client = client(Limits.DEFAULTS);
        CompletableFuture<HostReply> first = client.send(HOST, server.port(), request(5));
        assertThat(arrived.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertFailsWith(client.send(HOST, server.port(), request(5)), ErrorCode.INTERNAL_ERROR);
        hold.complete(WireFixtures.published(request(5)));
        assertThat(first.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(WireFixtures.published(request(5)));
    }

    @Test
    void closedClientRefusesToSend() throws Exception {
        WireClient client = new WireClient("node-a", Limits.DEFAULTS);
        client.close();
        assertFailsWith(client.send(HOST, 1, request(1)), ErrorCode.HOST_UNREACHABLE);
    }

    @Test
    void wireSendIsHitOncePerSlotAndTheFirstThatDoesNotProceedDecides() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        WireServer server = server(Limits.DEFAULTS, (request, receivedNanos) -> {
            calls.incrementAndGet();
            return CompletableFuture.completedFuture(WireFixtures.published(request));
        });
        Failpoints failpoints = Failpoints.enabled();
        WireClient client = new WireClient("node-a", Limits.DEFAULTS, failpoints);
        closeables.add(client);
        HostRequest three = request(11);
        assertThat(three.runs()).hasSize(3);

        List<Site> sites = new CopyOnWriteArrayList<>();
        failpoints.arm(Failpoint.WIRE_SEND, site -> sites.add(site) && false, -1, Failpoints.Action.drop());
        assertThat(client.send(HOST, server.port(), three).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(three));
        assertThat(sites).containsExactlyElementsOf(three.runs().stream()
                .map(s -> new Site("node-a", s.partitionId(), s.runIndex(), s.wireId())).toList());
        assertThat(calls).hasValue(1);

        failpoints.reset();
        failpoints.arm(Failpoint.WIRE_SEND, site -> site.runIndex() == three.runs().get(1).runIndex(), 1,
                Failpoints.Action.fail(ErrorCode.HOST_UNREACHABLE));
        assertFailsWith(client.send(HOST, server.port(), three), ErrorCode.HOST_UNREACHABLE);
        assertThat(failpoints.hits(Failpoint.WIRE_SEND)).isEqualTo(2);

        failpoints.reset();
        failpoints.arm(Failpoint.WIRE_SEND, 1, Failpoints.Action.drop());
        assertFailsWith(client.send(HOST, server.port(), three), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
        assertThat(failpoints.hits(Failpoint.WIRE_SEND)).isEqualTo(1);
        // neither request reached the server
        assertThat(client.send(HOST, server.port(), request(12)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(12)));
        assertThat(calls).hasValue(2);
    }

    @Test
    void aWireReceiveDropIsAnUnknownOutcome() throws Exception {
        Failpoints failpoints = Failpoints.enabled();
        failpoints.arm(Failpoint.WIRE_RECEIVE, site -> site.runIndex() == 1, 1, Failpoints.Action.drop());
        WireServer server = WireServer.start(HOST, 0, "node-b", Limits.DEFAULTS,
                (request, receivedNanos) -> CompletableFuture.completedFuture(WireFixtures.published(request)),
                failpoints);
        closeables.add(server);
        WireClient client = client(Limits.DEFAULTS);
        assertFailsWith(client.send(HOST, server.port(), request(13)), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
        assertThat(client.send(HOST, server.port(), request(14)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(14)));
    }

    @Test
    void theHandlerSeesAStopAndTheConnectionCarriesOn() throws Exception {
        LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        WireServer server = server(Limits.DEFAULTS, recording(events, 0));
        WireClient client = client(Limits.DEFAULTS);
        assertThat(client.send(HOST, server.port(), request(1)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(1)));
        assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("handle 1");
        assertThat(client.stop(HOST, server.port(), "call").get(WAIT_SECONDS, TimeUnit.SECONDS)).isNull();
        assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("stop call");
        // nothing answered the stop, and the connection serves the next request
        assertThat(client.send(HOST, server.port(), request(2)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(2)));
        assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("handle 2");
        assertThat(server.openConnections()).isEqualTo(1);
        // a stop to a peer with no connection yet opens one
        WireClient fresh = client(Limits.DEFAULTS);
        assertThat(fresh.stop(HOST, server.port(), "other").get(WAIT_SECONDS, TimeUnit.SECONDS)).isNull();
        assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("stop other");
        assertThat(server.openConnections()).isEqualTo(2);
        assertThat(events).isEmpty();
    }

    @Test
    void aStopAfterARequestOnTheSameConnectionArrivesAfterIt() throws Exception {
        LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        // the handler takes its time to take each request, so a stop that overtook one would show
        WireServer server = server(Limits.DEFAULTS, recording(events, 30));
        WireClient client = client(Limits.DEFAULTS);
        // the first round goes while the handshake is still under way, the others on the open connection
        for (long id = 1; id <= 8; id++) {
            HostRequest request = request(id, "call-" + id);
            CompletableFuture<HostReply> reply = client.send(HOST, server.port(), request);
            CompletableFuture<Void> stopped = client.stop(HOST, server.port(), "call-" + id);
            assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("handle " + id);
            assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("stop call-" + id);
            assertThat(stopped.get(WAIT_SECONDS, TimeUnit.SECONDS)).isNull();
            assertThat(reply.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(WireFixtures.published(request));
        }
        // several requests of one call, then its stop: the stop comes after every one of them
        List<CompletableFuture<HostReply>> replies = new ArrayList<>();
        for (long id = 20; id < 26; id++) {
            replies.add(client.send(HOST, server.port(), request(id, "many")));
        }
        client.stop(HOST, server.port(), "many").get(WAIT_SECONDS, TimeUnit.SECONDS);
        List<String> seen = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            seen.add(events.poll(WAIT_SECONDS, TimeUnit.SECONDS));
        }
        assertThat(seen.getLast()).isEqualTo("stop many");
        assertThat(seen.subList(0, 6)).containsExactlyInAnyOrder(
                "handle 20", "handle 21", "handle 22", "handle 23", "handle 24", "handle 25");
        CompletableFuture.allOf(replies.toArray(CompletableFuture[]::new)).get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(server.openConnections()).isEqualTo(1);
    }

    @Test
    void aStopToAnUnreachablePeerIsHostUnreachable() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            port = probe.getLocalPort();
        }
        WireClient client = client(Limits.DEFAULTS);
        assertFailsWith(client.stop(HOST, port, "call"), ErrorCode.HOST_UNREACHABLE);
        assertFailsWith(client.stop(HOST, port, "call"), ErrorCode.HOST_UNREACHABLE);

        // a peer that hangs up during the handshake
        ServerSocket silent = new ServerSocket(0, 1, InetAddress.getByName(HOST));
        closeables.add(silent);
        Thread acceptor = Thread.ofVirtual().start(() -> {
            try (Socket s = silent.accept()) {
                s.getInputStream().read();
            } catch (IOException ignored) {
                // the test ends either way
            }
        });
        assertFailsWith(client.stop(HOST, silent.getLocalPort(), "call"), ErrorCode.HOST_UNREACHABLE);
        acceptor.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));

        WireClient closed = new WireClient("node-a", Limits.DEFAULTS);
        closed.close();
        assertFailsWith(closed.stop(HOST, port, "call"), ErrorCode.HOST_UNREACHABLE);
    }

    @Test
    void aStopGoesByteForByteAndNothingWaitsForAnAnswer() throws Exception {
        FakePeer peer = fakePeer(new HelloAck(3, "node-b"), WireFixtures::published);
        WireClient client = client(Limits.DEFAULTS);
        assertThat(client.stop(HOST, peer.port(), "c1").get(WAIT_SECONDS, TimeUnit.SECONDS)).isNull();
        assertThat(client.send(HOST, peer.port(), request(3)).get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isEqualTo(WireFixtures.published(request(3)));
        assertThat(peer.frames()).extracting(f -> HexFormat.of().formatHex(f)).containsExactly(
                HexFormat.of().formatHex(WireFixtures.goldenBytes("call-stop")),
                HexFormat.of().formatHex(WireFixtures.encode(request(3))));
    }

    @Test
    void aCallStopFromTheServerIsAProtocolViolationThatEndsTheRequestUnknown() throws Exception {
        FakePeer peer = fakePeer(new HelloAck(3, "odd-node"), request -> new CallStop(request.callId()));
        WireClient client = client(Limits.DEFAULTS);
        assertFailsWith(client.send(HOST, peer.port(), request(9)), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
        assertThat(peer.requests()).containsExactly(request(9));
    }

    @Test
    void aStopHitsNoFailpoint() throws Exception {
        LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        WireServer server = server(Limits.DEFAULTS, recording(events, 0));
        Failpoints failpoints = Failpoints.enabled();
        failpoints.arm(Failpoint.WIRE_SEND, -1, Failpoints.Action.fail(ErrorCode.HOST_UNREACHABLE));
        WireClient client = new WireClient("node-a", Limits.DEFAULTS, failpoints);
        closeables.add(client);
        assertThat(client.stop(HOST, server.port(), "call").get(WAIT_SECONDS, TimeUnit.SECONDS)).isNull();
        assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("stop call");
        assertThat(failpoints.hits(Failpoint.WIRE_SEND)).isZero();
        // the same client's requests do hit it: the first slot's hit fails the request
        assertFailsWith(client.send(HOST, server.port(), request(1)), ErrorCode.HOST_UNREACHABLE);
        assertThat(failpoints.hits(Failpoint.WIRE_SEND)).isEqualTo(1);
    }

    @Test
    void anOversizedStopIsRefusedBeforeItIsSent() throws Exception {
        LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
        WireServer server = server(Limits.DEFAULTS, recording(events, 0));
        WireClient client = client(WireFixtures.smallFrames(8192));
        assertFailsWith(client.stop(HOST, server.port(), "x".repeat(10_000)), ErrorCode.PAYLOAD_TOO_LARGE);
        assertThat(client.stop(HOST, server.port(), "call").get(WAIT_SECONDS, TimeUnit.SECONDS)).isNull();
        assertThat(events.poll(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo("stop call");
        assertThat(server.openConnections()).isEqualTo(1);
    }

    /**
     * A handler that records "handle id" once it has taken a request (after {@code takeMillis})
     * and answers it with every slot published, and records "stop callId".
     */
    private static HostRunHandler recording(LinkedBlockingQueue<String> events, long takeMillis) {
        return new HostRunHandler() {
            @Override
            public CompletableFuture<HostReply> handle(HostRequest request, long receivedNanos) {
                try {
                    Thread.sleep(takeMillis); // a dispatch thread (virtual): sleeping holds no event loop
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                events.add("handle " + request.requestId());
                return CompletableFuture.completedFuture(WireFixtures.published(request));
            }

            @Override
            public void stop(String callId) {
                events.add("stop " + callId);
            }
        };
    }

    private WireServer server(Limits limits, HostRunHandler handler) throws InterruptedException {
        WireServer server = WireServer.start(HOST, 0, "node-b", limits, handler);
        closeables.add(server);
        return server;
    }

    private WireClient client(Limits limits) {
        WireClient client = new WireClient("node-a", limits);
        closeables.add(client);
        return client;
    }

    /** A request of 1 to 3 slots (by {@code id % 3}), slot indexes 0, 1, 2 on partitions 3, 4, 5. */
    private static HostRequest request(long id) {
        return request(id, "call");
    }

    private static HostRequest request(long id, String callId) {
        List<ShardRun> slots = new ArrayList<>();
        for (int i = 0; i <= id % 3; i++) {
            slots.add(new ShardRun(i, 3 + i, 5, "w" + id + "-" + i, 1));
        }
        return new HostRequest(id, callId, "tenant", "sum", "sha256:00", 1, 2_000_000, "{}", slots);
    }

    private static void assertEverySlot(HostReply reply, HostRequest request,
            java.util.function.Consumer<ShardRunOutcome> check) {
        assertThat(reply.requestId()).isEqualTo(request.requestId());
        assertThat(reply.runs()).extracting(ShardRunOutcome::runIndex)
                .containsExactlyElementsOf(request.runs().stream().map(ShardRun::runIndex).toList());
        assertThat(reply.runs()).allSatisfy(check);
    }

    private static void assertFailsWith(CompletableFuture<?> future, ErrorCode code) {
        assertThatThrownBy(() -> future.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).as(e.toString()).isEqualTo(code));
    }

    /**
     * A hand-written peer on a raw socket, for what a {@link WireServer} never does: it reads the
     * client's Hello, answers {@code handshake}, then answers each request with whatever
     * {@code answer} returns (nothing when {@code answer} is null, nor to any other message), until
     * the client hangs up. Every frame after the Hello is kept, byte for byte, in {@code frames}.
     */
    private FakePeer fakePeer(WireMessage handshake, Function<HostRequest, WireMessage> answer) throws IOException {
        ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST));
        closeables.add(socket);
        FakePeer peer = new FakePeer(socket.getLocalPort(), new CompletableFuture<>(), new CopyOnWriteArrayList<>(),
                new CopyOnWriteArrayList<>());
        Thread.ofVirtual().start(() -> {
            try (Socket s = socket.accept()) {
                DataInputStream in = new DataInputStream(s.getInputStream());
                OutputStream out = s.getOutputStream();
                peer.hello().complete(WireFixtures.decode(readFrameBytes(in), WireCodec.NO_VERSION));
                out.write(WireFixtures.encode(handshake));
                out.flush();
                while (true) {
                    byte[] frame = readFrameBytes(in);
                    peer.frames().add(frame);
                    if (!(WireFixtures.decode(frame, WireCodec.MAX_VERSION) instanceof HostRequest request)) {
                        continue;
                    }
                    peer.requests().add(request);
                    if (answer != null) {
                        out.write(WireFixtures.encode(answer.apply(request)));
                        out.flush();
                    }
                }
            } catch (IOException e) {
                peer.hello().completeExceptionally(e); // the client hung up; a no-op once the Hello arrived
            }
        });
        return peer;
    }

    private record FakePeer(int port, CompletableFuture<WireMessage> hello, List<HostRequest> requests,
                            List<byte[]> frames) {}

    private static byte[] readFrameBytes(DataInputStream in) throws IOException {
        int length = in.readInt();
        byte[] frame = new byte[4 + length];
        java.nio.ByteBuffer.wrap(frame).putInt(length);
        in.readFully(frame, 4, length);
        return frame;
    }
}
