package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.wire.WireMessage.CallStop;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoop;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.EncoderException;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client end of one pooled connection: connects, handshakes once, then carries any number
 * of concurrent requests, matching replies to callers by {@code requestId}, and one-way
 * {@link CallStop}s. A reply must carry one outcome per slot of its request, in the request's
 * order; any other reply, or a message a server does not send, is a protocol violation that
 * closes the connection.
 *
 * <p>Frames are written in the order {@link #send} and {@link #stop} were called (calls made one
 * after the other, by one thread or ordered between threads), the handshake included: calls that
 * come before it ends wait in a list and go, in that order, when it ends.
 *
 * <p>State changes happen on the channel's event loop: the request write (after checking the
 * connection is still open), reply completion and the close sweep. That ordering is what makes
 * the outcome classification exact: a request not yet registered when the close sweep runs is
 * refused with {@code HOST_UNREACHABLE}; one registered before it gets {@code TRANSPORT_OUTCOME_UNKNOWN}.
 */
final class ClientConnection extends SimpleChannelInboundHandler<WireMessage> {
    private static final Logger log = LoggerFactory.getLogger(ClientConnection.class);

    private final String peer;
    private final String nodeId;
    private final int maxFrameBytes;
    private final long handshakeTimeoutMs;
    private final String host;
    private final int port;
    private final Consumer<ClientConnection> onClosed;
    private final CompletableFuture<Void> ready = new CompletableFuture<>();
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private volatile Channel channel;
    private volatile boolean closed;
    /** Why the connection is being closed, when an error closed it; event loop only. */
    private Throwable closeCause;
    private ScheduledFuture<?> handshakeTimeout;
    /** Guards {@link #waiting}. */
    private final Object order = new Object();
    /**
     * Writes waiting for the handshake to end, in call order, each given the handshake's error
     * ({@code null}: done); {@code null} once they have all been run.
     */
    private List<Consumer<Throwable>> waiting = new ArrayList<>();

    /** A request written (or being written) and the caller's future for its reply. */
    private record Pending(HostRequest request, CompletableFuture<HostReply> result) {}

    ClientConnection(String host, int port, String nodeId, int maxFrameBytes, long handshakeTimeoutMs,
            Consumer<ClientConnection> onClosed) {
        super(WireMessage.class);
        this.peer = host + ":" + port;
        this.host = host;
        this.port = port;
        this.nodeId = nodeId;
        this.maxFrameBytes = maxFrameBytes;
        this.handshakeTimeoutMs = handshakeTimeoutMs;
        this.onClosed = onClosed;
        ready.whenComplete((ignored, handshakeError) -> runWaiting(handshakeError));
    }

    /** Starts connecting; {@code onClosed} runs once the connection has closed or failed to open. Call once. */
    void connect(Bootstrap bootstrap) {
        ChannelFuture connect = bootstrap.clone()
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        WirePipeline.addCodec(ch.pipeline(), maxFrameBytes);
                        ch.pipeline().addLast("wire-client", ClientConnection.this);
                    }
                })
                .connect(InetSocketAddress.createUnresolved(host, port));
        this.channel = connect.channel();
        connect.addListener(f -> {
            if (f.isSuccess()) {
                // runs before channelActive, so the sweep is in place before anything can be pending
                channel.closeFuture().addListener(c -> sweep());
            } else {
                closed = true;
                ready.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                        "cannot connect to wire peer " + peer + ": " + f.cause(), f.cause()));
                onClosed.accept(this);
            }
        });
    }

    boolean isClosed() {
        return closed;
    }

    void close() {
        Channel ch = channel;
        if (ch != null) {
            ch.close();
        }
    }

    /** Sends {@code request} once the handshake is done and completes {@code result} with the reply. */
    void send(HostRequest request, CompletableFuture<HostReply> result) {
        afterHandshake(result, () -> write(request, result), "request " + request.requestId());
    }

    /**
     * Writes {@code stop} once the handshake is done, after everything sent before it on this
     * connection, and completes {@code result} when the write succeeded; nothing answers it.
     */
    void stop(CallStop stop, CompletableFuture<Void> result) {
        afterHandshake(result, () -> writeStop(stop, result), "the stop of call " + stop.callId());
    }

    /**
     * Runs {@code write} on the event loop once the handshake succeeded, in call order; fails
     * {@code result} with {@code HOST_UNREACHABLE} when the handshake failed or the loop is gone.
     */
    private void afterHandshake(CompletableFuture<?> result, Runnable write, String what) {
        whenHandshakeEnds(handshakeError -> {
            if (handshakeError != null) {
                result.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                        handshakeError.getMessage(), handshakeError));
                return;
            }
            EventLoop loop = channel.eventLoop();
            if (loop.inEventLoop()) {
                write.run();
                return;
            }
            try {
                loop.execute(write);
            } catch (RejectedExecutionException e) {
                result.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                        "wire client is closing; " + what + " to " + peer + " not sent", e));
            }
        });
    }

    /**
     * Runs {@code action} with the handshake's error ({@code null}: it succeeded) once the
     * handshake ended, after every action given before it. Unlike dependents of a
     * {@link CompletableFuture}, which run in no promised order, the waiting actions run in the
     * order they came, and one that comes while they run waits its turn.
     */
    private void whenHandshakeEnds(Consumer<Throwable> action) {
        synchronized (order) {
            if (waiting != null) {
                waiting.add(action);
                return;
            }
        }
        action.accept(handshakeError());
    }

    /** Once, when {@link #ready} completes (on the event loop): runs the waiting actions in order. */
    private void runWaiting(Throwable handshakeError) {
        while (true) {
            List<Consumer<Throwable>> batch;
            synchronized (order) {
                batch = waiting;
                if (batch.isEmpty()) {
                    waiting = null;
                    return;
                }
                waiting = new ArrayList<>();
            }
            for (Consumer<Throwable> action : batch) {
                action.accept(handshakeError);
            }
        }
    }

    /** The handshake's error once it ended, {@code null} when it succeeded. */
    private Throwable handshakeError() {
        try {
            ready.getNow(null);
            return null;
        } catch (RuntimeException e) {
            return e.getCause() != null ? e.getCause() : e;
        }
    }

    /** On the event loop. */
    private void write(HostRequest request, CompletableFuture<HostReply> result) {
        long id = request.requestId();
        if (closed || !channel.isActive()) {
            result.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                    "connection to wire peer " + peer + " closed before request " + id + " was written", closeCause));
            return;
        }
        Pending entry = new Pending(request, result);
        if (pending.putIfAbsent(id, entry) != null) {
            result.completeExceptionally(new ThresherException(ErrorCode.INTERNAL_ERROR,
                    "request id " + id + " is already in flight to " + peer));
            return;
        }
        // a caller that gives up (timeout, cancel) frees its slot; a late reply is then dropped
        result.whenComplete((m, e) -> pending.remove(id, entry));
        channel.writeAndFlush(request).addListener(f -> {
            if (f.isSuccess()) {
                return;
            }
            Throwable cause = f.cause();
            if (cause instanceof EncoderException) {
                // the encoder refused the message, so none of its bytes reached the socket
                ThresherException te = WirePipeline.findThresher(cause);
                result.completeExceptionally(te != null ? te : new ThresherException(ErrorCode.INTERNAL_ERROR,
                        "cannot encode request " + id + ": " + cause, cause));
            } else {
                result.completeExceptionally(new ThresherException(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN,
                        "writing request " + id + " to wire peer " + peer + " failed: " + cause, cause));
            }
        });
    }

    /** On the event loop. */
    private void writeStop(CallStop stop, CompletableFuture<Void> result) {
        if (closed || !channel.isActive()) {
            result.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                    "connection to wire peer " + peer + " closed before the stop of call " + stop.callId()
                            + " was written", closeCause));
            return;
        }
        channel.writeAndFlush(stop).addListener(f -> {
            if (f.isSuccess()) {
                result.complete(null);
                return;
            }
            Throwable cause = f.cause();
            ThresherException refused = cause instanceof EncoderException ? WirePipeline.findThresher(cause) : null;
            result.completeExceptionally(refused != null ? refused : new ThresherException(ErrorCode.HOST_UNREACHABLE,
                    "writing the stop of call " + stop.callId() + " to wire peer " + peer + " failed: " + cause, cause));
        });
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        ctx.writeAndFlush(new Hello(WireCodec.MIN_VERSION, WireCodec.MAX_VERSION, nodeId));
        handshakeTimeout = ctx.executor().schedule(() -> {
            if (!ready.isDone()) {
                closeCause = new ThresherException(ErrorCode.HOST_UNREACHABLE,
                        "wire peer " + peer + " did not answer the handshake within " + handshakeTimeoutMs + " ms");
                ready.completeExceptionally(closeCause);
                ctx.close();
            }
        }, handshakeTimeoutMs, TimeUnit.MILLISECONDS);
        super.channelActive(ctx);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, WireMessage message) {
        switch (message) {
            case HelloAck m -> onAck(ctx, m);
            case HelloReject m -> onReject(ctx, m);
            case HostReply m -> onReply(ctx, m);
            case Hello m -> unexpected(ctx, m);
            case HostRequest m -> unexpected(ctx, m);
            case CallStop m -> unexpected(ctx, m);
        }
    }

    private void onAck(ChannelHandlerContext ctx, HelloAck ack) {
        if (ready.isDone()) {
            unexpected(ctx, ack);
            return;
        }
        if (ack.version() < WireCodec.MIN_VERSION || ack.version() > WireCodec.MAX_VERSION) {
            failHandshake(ctx, "wire peer " + peer + " chose version " + ack.version() + ", outside ["
                    + WireCodec.MIN_VERSION + ", " + WireCodec.MAX_VERSION + "]");
            return;
        }
        WirePipeline.agree(ctx.channel(), ack.version());
        handshakeTimeout.cancel(false);
        log.debug("wire connection to {} ({}) at version {}", ack.nodeId(), peer, ack.version());
        ready.complete(null);
    }

    private void onReject(ChannelHandlerContext ctx, HelloReject reject) {
        if (ready.isDone()) {
            unexpected(ctx, reject);
            return;
        }
        failHandshake(ctx, "wire peer " + peer + " refused the handshake: " + ErrorCode.ofCode(reject.errorCode())
                + "(" + reject.errorCode() + ") " + reject.message());
    }

    private void failHandshake(ChannelHandlerContext ctx, String reason) {
        log.warn("{}", reason);
        closeCause = new ThresherException(ErrorCode.HOST_UNREACHABLE, reason);
        ready.completeExceptionally(closeCause);
        ctx.close();
    }

    private void onReply(ChannelHandlerContext ctx, HostReply reply) {
        Pending entry = pending.get(reply.requestId());
        if (entry == null) {
            log.debug("dropping reply from {} to request {}, which no caller waits for", peer, reply.requestId());
            return;
        }
        if (!answersEverySlot(entry.request().runs(), reply.runs())) {
            // left pending: the sweep ends it with TRANSPORT_OUTCOME_UNKNOWN, since the peer may have run it
            exceptionCaught(ctx, new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "wire peer " + peer
                    + " answered request " + reply.requestId() + " with outcomes for other slots than the request's"));
            return;
        }
        pending.remove(reply.requestId(), entry);
        entry.result().complete(reply);
    }

    /** Whether {@code outcomes} are one per slot of {@code slots}, same slot index and wire id, same order. */
    private static boolean answersEverySlot(List<ShardRun> slots, List<ShardRunOutcome> outcomes) {
        if (slots.size() != outcomes.size()) {
            return false;
        }
        for (int i = 0; i < slots.size(); i++) {
            if (slots.get(i).runIndex() != outcomes.get(i).runIndex()
                    || !slots.get(i).wireId().equals(outcomes.get(i).wireId())) {
                return false;
            }
        }
        return true;
    }

    private void unexpected(ChannelHandlerContext ctx, WireMessage message) {
        exceptionCaught(ctx, new ThresherException(ErrorCode.PROTOCOL_VIOLATION,
                MessageType.of(message) + " is not a message a wire server sends at this point"));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (closeCause == null) {
            closeCause = cause;
        }
        WirePipeline.closeOnError(ctx, cause, maxFrameBytes, log);
    }

    /** On the event loop, once, when the channel has closed: fails the handshake and every request in flight. */
    private void sweep() {
        closed = true;
        onClosed.accept(this);
        if (handshakeTimeout != null) {
            handshakeTimeout.cancel(false);
        }
        ready.completeExceptionally(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                "connection to wire peer " + peer + " closed during the handshake", closeCause));
        for (Long id : pending.keySet()) {
            Pending entry = pending.remove(id);
            if (entry != null) {
                entry.result().completeExceptionally(new ThresherException(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN,
                        "connection to wire peer " + peer + " closed after request " + id
                                + " was sent and before its reply", closeCause));
            }
        }
    }
}
