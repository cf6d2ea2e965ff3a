package dev.thresher.coordinator;

import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.ShardRunRow;
import dev.thresher.topology.Host;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

/**
 * The call's leader hosts, in memory. By default a host publishes every slot it is sent (into
 * {@link FakeControl}, one partial {@code p<partition>} each) and answers at once; a test replaces
 * {@link #answer} to fail slots, fail the transport, or hold the reply until it completes it.
 */
final class FakeLeaders implements Leaders {
    /** One host request as sent, and the reply the coordinator waits for. */
    record Sent(String host, HostRequest request, CompletableFuture<HostReply> reply) {
        List<Integer> runIndexes() {
            return request.runs().stream().map(ShardRun::runIndex).toList();
        }

        List<Integer> attempts() {
            return request.runs().stream().map(ShardRun::attempt).toList();
        }
    }

    /** How a host answers one slot instead of publishing it. */
    record Failure(ErrorCode code, boolean guestStarted) {
        static Failure started(ErrorCode code) {
            return new Failure(code, true);
        }

        static Failure notStarted(ErrorCode code) {
            return new Failure(code, false);
        }
    }

    private final FakeControl control;
    final List<Sent> sent = new CopyOnWriteArrayList<>();
    /** Requests whose reply a test holds, in arrival order. */
    final BlockingQueue<Sent> held = new LinkedBlockingQueue<>();
    /** Hosts sent a {@code CallStop}, with the call id: "host callId". */
    final List<String> stops = new CopyOnWriteArrayList<>();
    final BlockingQueue<String> stoppedHosts = new LinkedBlockingQueue<>();
    /** The host's answer to a request: (host id, request) → the reply's future. */
    volatile BiFunction<String, HostRequest, CompletableFuture<HostReply>> answer =
            (host, request) -> CompletableFuture.completedFuture(reply(host, request, Map.of()));

    FakeLeaders(FakeControl control) {
        this.control = control;
    }

    @Override
    public CompletableFuture<HostReply> send(String wireHost, int port, HostRequest request) {
        String host = hostId(wireHost, port);
        CompletableFuture<HostReply> reply = answer.apply(host, request);
        sent.add(new Sent(host, request, reply));
        return reply;
    }

    @Override
    public CompletableFuture<Void> stop(String wireHost, int port, String callId) {
        String host = hostId(wireHost, port);
        stops.add(host + " " + callId);
        stoppedHosts.add(host);
        return CompletableFuture.completedFuture(null);
    }

    /** An answer that holds the reply until the test completes it (see {@link #held}). */
    CompletableFuture<HostReply> hold(String host, HostRequest request) {
        CompletableFuture<HostReply> reply = new CompletableFuture<>();
        held.add(new Sent(host, request, reply));
        return reply;
    }

    /** The next held request; fails the test when none arrives within 10 s. */
    Sent nextHeld() throws InterruptedException {
        Sent s = held.poll(10, TimeUnit.SECONDS);
        if (s == null) {
            throw new AssertionError("no host request arrived");
        }
        return s;
    }

    /** The next host told to stop; fails the test when none is within 10 s. */
    String nextStopped() throws InterruptedException {
        String h = stoppedHosts.poll(10, TimeUnit.SECONDS);
        if (h == null) {
            throw new AssertionError("no host was told to stop");
        }
        return h;
    }

    /** Completes a held request: every slot published but those in {@code failures}. */
    void complete(Sent s, Map<Integer, Failure> failures) {
        s.reply().complete(reply(s.host(), s.request(), failures));
    }

    /** The host's reply: slots in {@code failures} fail so, the others are published. */
    HostReply reply(String host, HostRequest request, Map<Integer, Failure> failures) {
        List<ShardRunOutcome> out = new ArrayList<>();
        for (ShardRun slot : request.runs()) {
            Failure f = failures.get(slot.runIndex());
            if (f != null) {
                out.add(ShardRunOutcome.failed(slot, new ThresherException(f.code(), "failed on " + host), f.guestStarted()));
                continue;
            }
            byte[] partials = PartialsCodec.encode(List.of(new Partial("p" + slot.partitionId(), slot.runIndex() + 1)));
            control.publishShardRun(UUID.fromString(request.callId()), new ShardRunRow(slot.runIndex(), slot.partitionId(),
                    slot.epoch(), slot.wireId(), host, 1, 1, 1, partials, true, slot.epoch()));
            out.add(new ShardRunOutcome(slot.runIndex(), slot.wireId(), 0, true, "", 1, 1, 10, 20));
        }
        return new HostReply(request.requestId(), 5, out);
    }

    /** The requests sent to {@code host}, in the order they were sent. */
    List<Sent> sentTo(String host) {
        return sent.stream().filter(s -> s.host().equals(host)).toList();
    }

    /** The requests carrying slot {@code runIndex}. */
    List<Sent> carrying(int runIndex) {
        return sent.stream().filter(s -> s.runIndexes().contains(runIndex)).toList();
    }

    private String hostId(String wireHost, int port) {
        for (Host h : control.dbTopology().hosts().values()) {
            if (h.wireHost().equals(wireHost) && h.wirePort() == port) {
                return h.hostId();
            }
        }
        throw new IllegalArgumentException("no host at " + wireHost + ":" + port);
    }
}
