package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Limits;
import dev.thresher.wire.WireMessage.CallStop;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRun;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;

/**
 * Sends host-run requests, and stops of calls, to other nodes over pooled connections: one per
 * {@code host:port}, opened on first use, handshaken once, shared by any number of concurrent
 * requests and replaced on the next {@link #send} or {@link #stop} after it closes. Thread-safe.
 *
 * <p>How the returned future ends (the coordinator relies on this):
 * <ul>
 *   <li>with the {@link HostReply} the peer answered, one outcome per slot of the request in
 *       the request's order (a reply that is not, or a message of another type, is a protocol
 *       violation: the connection closes and its requests in flight end as below); failed slots
 *       are a normal completion;</li>
 *   <li>{@link ErrorCode#HOST_UNREACHABLE} (retryable) when the connection could not be opened
 *       or handshaken, or closed, before the request was written: the request provably never left;</li>
 *   <li>{@link ErrorCode#TRANSPORT_OUTCOME_UNKNOWN} (ambiguous) when the request was written, or
 *       its write failed midway, and the connection then closed or errored before the reply: guest
 *       code may have run;</li>
 *   <li>the encoder's code, {@link ErrorCode#PAYLOAD_TOO_LARGE}, when the request's frame exceeds
 *       {@code limits.wireMaxFrameBytes}: nothing was sent and the connection stays open;</li>
 *   <li>{@link ErrorCode#INTERNAL_ERROR} when the same {@code requestId} is already in flight to
 *       that peer: nothing was sent.</li>
 * </ul>
 * The client sets no deadline of its own: the caller bounds the wait (for example with
 * {@link CompletableFuture#orTimeout}); a future completed or cancelled by the caller frees its
 * slot and a late reply is dropped.
 *
 * <p>{@link #stop} is one-way ({@link CallStop}): its future completes once the frame is written.
 * On one connection frames leave in the order they were handed over, so a stop sent after a
 * request to the same peer arrives after it.
 *
 * <p>Threads: one event-loop group owned by the client ({@code thresher-wire-client-*}). Futures
 * complete on an event loop, so callers must not block in their continuations; use the
 * {@code *Async} variants with an executor of their own for real work.
 */
public final class WireClient implements AutoCloseable {
    private final Failpoints failpoints;
    /** How long the peer may take to answer {@code Hello} ({@code limits.wireHandshakeTimeoutMs}). */
    private final long handshakeTimeoutMs;

    private final String nodeId;
    private final int maxFrameBytes;
    private final EventLoopGroup group;
    private final Bootstrap bootstrap;
    private final ConcurrentMap<Peer, ClientConnection> connections = new ConcurrentHashMap<>();
    private volatile boolean closed;

    private record Peer(String host, int port) {}

    /**
     * @param nodeId this node's id, sent in the handshake
     * @param limits {@code wireMaxFrameBytes} caps frames in both directions
     */
    public WireClient(String nodeId, Limits limits) {
        this(nodeId, limits, Failpoints.disabled());
    }

    /**
     * @param failpoints {@code wire.send} is hit once per slot of every request, in slot order and
     *     with the slot's {@link Site}, before the request is handed to its connection; the first hit
     *     that does not proceed decides for the whole request: a failure ends the future with that
     *     code and nothing is sent; a drop ends it with {@link ErrorCode#TRANSPORT_OUTCOME_UNKNOWN},
     *     as a request lost on the way would; a delay or halt holds the calling thread
     */
    public WireClient(String nodeId, Limits limits, Failpoints failpoints) {
        this.failpoints = Objects.requireNonNull(failpoints, "failpoints");
        this.handshakeTimeoutMs = limits.wireHandshakeTimeoutMs();
        this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
        this.maxFrameBytes = limits.wireMaxFrameBytes();
        this.group = new MultiThreadIoEventLoopGroup(
                0, new DefaultThreadFactory("thresher-wire-client"), NioIoHandler.newFactory());
        this.bootstrap = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.SO_KEEPALIVE, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, limits.wireConnectTimeoutMs());
    }

    /**
     * Sends {@code request} to the node at {@code host:port}; see the class comment for how the
     * future ends. Never blocks; connecting and the handshake happen in the background.
     */
    public CompletableFuture<HostReply> send(String host, int port, HostRequest request) {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(request, "request");
        CompletableFuture<HostReply> result = new CompletableFuture<>();
        if (closed) {
            result.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                    "wire client is closed; request " + request.requestId() + " not sent"));
            return result;
        }
        for (ShardRun slot : request.runs()) {
            try {
                if (failpoints.hit(Failpoint.WIRE_SEND, new Site(nodeId, slot.partitionId(), slot.runIndex(),
                        slot.wireId())) == Failpoints.Outcome.DROP) {
                    result.completeExceptionally(new ThresherException(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN,
                            "request " + request.requestId() + " to " + host + ":" + port + " was lost (failpoint)"));
                    return result;
                }
            } catch (ThresherException e) {
                result.completeExceptionally(e);
                return result;
            }
        }
        connection(host, port).send(request, result);
        return result;
    }

    /**
     * Tells the node at {@code host:port} that the coordinator of {@code callId} stopped admitting:
     * the slots of that call it has not started yet are not run ({@link CallStop}, one-way). The
     * frame goes on the pooled connection to that peer, opened and handshaken first if there is
     * none, after every request and stop handed to that connection before it. Never blocks; no
     * failpoint is hit ({@code wire.send} is about slots).
     *
     * <p>The future completes when the frame was written to the connection (handed to the
     * socket: the peer may not have read it yet); nothing waits for an answer, for none comes. It
     * completes exceptionally with {@link ErrorCode#HOST_UNREACHABLE} when the frame could not be
     * written: the connection could not be opened or handshaken, it closed first or the write
     * failed (the peer may or may not have got it), or the client is closed; with
     * {@link ErrorCode#PAYLOAD_TOO_LARGE} when the frame exceeds {@code limits.wireMaxFrameBytes}
     * (nothing was sent). A stop is idempotent, so sending it again is always safe.
     */
    public CompletableFuture<Void> stop(String host, int port, String callId) {
        Objects.requireNonNull(host, "host");
        CallStop stop = new CallStop(callId);
        CompletableFuture<Void> result = new CompletableFuture<>();
        if (closed) {
            result.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                    "wire client is closed; the stop of call " + callId + " not sent"));
            return result;
        }
        connection(host, port).stop(stop, result);
        return result;
    }

    /** The open pooled connection to {@code host:port}, or a new one, connecting. */
    private ClientConnection connection(String host, int port) {
        Peer peer = new Peer(host, port);
        ClientConnection connection = connections.get(peer);
        if (connection == null || connection.isClosed()) {
            ClientConnection fresh = new ClientConnection(host, port, nodeId, maxFrameBytes, handshakeTimeoutMs,
                    c -> connections.remove(peer, c));
            connection = connections.compute(peer, (p, old) -> old != null && !old.isClosed() ? old : fresh);
            if (connection == fresh) {
                // outside compute: a connect that fails at once removes the entry from its listener
                fresh.connect(bootstrap);
            }
        }
        return connection;
    }

    /**
     * Closes every connection and the event-loop group; requests in flight end as described in the
     * class comment. Must not be called from one of the client's event loops.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        connections.values().forEach(ClientConnection::close);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        connections.clear();
    }
}
