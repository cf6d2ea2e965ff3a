package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.wire.WireMessage.CallStop;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.EncoderException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server end of one connection. On the event loop it answers the handshake and hands each
 * request to {@code dispatch}; the dispatch thread calls the {@link HostRunHandler}, and the
 * reply is written from whichever thread completes the handler's future (Netty moves the write
 * onto the event loop). A {@link CallStop} goes to {@code dispatch} too, once every request that
 * arrived before it on this connection has been handed to the handler; nothing answers it.
 */
final class ServerConnection extends SimpleChannelInboundHandler<WireMessage> {
    private static final Logger log = LoggerFactory.getLogger(ServerConnection.class);

    private final String nodeId;
    private final int maxFrameBytes;
    private final HostRunHandler handler;
    private final Executor dispatch;
    private final Failpoints failpoints;
    /**
     * One entry per request of this connection whose dispatch has not yet called the handler (or
     * ended without calling it); added on the event loop, removed on the dispatch thread.
     */
    private final Set<CompletableFuture<Void>> handing = ConcurrentHashMap.newKeySet();

    private ServerConnection(String nodeId, int maxFrameBytes, HostRunHandler handler, Executor dispatch,
                             Failpoints failpoints) {
        super(WireMessage.class);
        this.failpoints = failpoints;
        this.nodeId = nodeId;
        this.maxFrameBytes = maxFrameBytes;
        this.handler = handler;
        this.dispatch = dispatch;
    }

    /** Installs the codec and a server end on a freshly accepted channel. */
    static void configure(ChannelPipeline pipeline, String nodeId, int maxFrameBytes, HostRunHandler handler,
            Executor dispatch, Failpoints failpoints) {
        WirePipeline.addCodec(pipeline, maxFrameBytes);
        pipeline.addLast("wire-server", new ServerConnection(nodeId, maxFrameBytes, handler, dispatch, failpoints));
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, WireMessage message) {
        long receivedNanos = System.nanoTime();
        switch (message) {
            case Hello m -> onHello(ctx, m);
            case HostRequest m -> onRequest(ctx.channel(), m, receivedNanos);
            case CallStop m -> onStop(m);
            case HelloAck m -> unexpected(ctx, m);
            case HelloReject m -> unexpected(ctx, m);
            case HostReply m -> unexpected(ctx, m);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        WirePipeline.closeOnError(ctx, cause, maxFrameBytes, log);
    }

    private void onHello(ChannelHandlerContext ctx, Hello hello) {
        Channel ch = ctx.channel();
        if (WirePipeline.version(ch) != WireCodec.NO_VERSION) {
            unexpected(ctx, hello);
            return;
        }
        int high = Math.min(hello.maxVersion(), WireCodec.MAX_VERSION);
        int low = Math.max(hello.minVersion(), WireCodec.MIN_VERSION);
        if (low > high) {
            String reason = "no common protocol version: client speaks [" + hello.minVersion() + ", "
                    + hello.maxVersion() + "], server [" + WireCodec.MIN_VERSION + ", " + WireCodec.MAX_VERSION + "]";
            log.warn("rejecting wire client {} ({}): {}", hello.nodeId(), ch.remoteAddress(), reason);
            ch.writeAndFlush(new HelloReject(ErrorCode.PROTOCOL_VIOLATION.code(), reason))
                    .addListener(ChannelFutureListener.CLOSE);
            return;
        }
        // agreed before the ack leaves, so the decoder is ready for the client's first request
        WirePipeline.agree(ch, high);
        log.debug("wire client {} ({}) agreed on version {}", hello.nodeId(), ch.remoteAddress(), high);
        ch.writeAndFlush(new HelloAck(high, nodeId));
    }

    private void onRequest(Channel ch, HostRequest request, long receivedNanos) {
        CompletableFuture<Void> handed = new CompletableFuture<>();
        handing.add(handed);
        try {
            dispatch.execute(() -> {
                try {
                    invoke(ch, request, receivedNanos);
                } finally {
                    handed(handed);
                }
            });
        } catch (RejectedExecutionException e) {
            handed(handed);
            write(ch, request, HostReply.failed(request, new ThresherException(ErrorCode.CELL_UNAVAILABLE,
                    "node " + nodeId + " is shutting down"), false), false);
        }
    }

    private void handed(CompletableFuture<Void> handed) {
        handing.remove(handed);
        handed.complete(null);
    }

    /**
     * On the event loop: calls {@link HostRunHandler#stop} on a dispatch thread once every request
     * received before the stop on this connection has been handed to the handler, so a stop never
     * overtakes a request the coordinator wrote before it. No reply; dropped while shutting down.
     */
    private void onStop(CallStop stop) {
        CompletableFuture<?>[] before = handing.toArray(CompletableFuture<?>[]::new);
        if (before.length == 0) {
            dispatchStop(stop);
        } else {
            CompletableFuture.allOf(before).whenComplete((ignored, error) -> dispatchStop(stop));
        }
    }

    private void dispatchStop(CallStop stop) {
        try {
            dispatch.execute(() -> {
                try {
                    handler.stop(stop.callId());
                } catch (Throwable t) {
                    log.warn("HostRunHandler.stop failed for call {}", stop.callId(), t);
                }
            });
        } catch (RejectedExecutionException e) {
            log.debug("dropping the stop of call {}: node {} is shutting down", stop.callId(), nodeId);
        }
    }

    private void invoke(Channel ch, HostRequest request, long receivedNanos) {
        // once per slot, in slot order; the first slot the failpoint selects decides for the whole request
        for (ShardRun slot : request.runs()) {
            Site site = new Site(nodeId, slot.partitionId(), slot.runIndex(), slot.wireId());
            try {
                if (failpoints.hit(Failpoint.WIRE_RECEIVE, site) == Failpoints.Outcome.DROP) {
                    // As if the connection broke after the request arrived: the sender cannot tell whether it ran.
                    ch.close();
                    return;
                }
            } catch (ThresherException e) {
                write(ch, request, HostReply.failed(request, e, false), false);
                return;
            }
        }
        CompletableFuture<HostReply> future;
        try {
            future = handler.handle(request, receivedNanos);
            if (future == null) {
                future = CompletableFuture.failedFuture(
                        new ThresherException(ErrorCode.INTERNAL_ERROR, "HostRunHandler returned no future"));
            }
        } catch (Throwable t) {
            future = CompletableFuture.failedFuture(t);
        }
        // the reply is taken as an Object: a future completed through an unchecked cast with something
        // else must still be answered, not fail a cast inside this callback and leave the client waiting
        future.whenComplete((Object reply, Throwable error) -> write(ch, request, replyFor(request, reply, error), true));
    }

    /**
     * The reply to write for a handler outcome: the handler's own reply when it answers this
     * request's id with one outcome per slot of the request (same slot indexes and wire ids, same
     * order); otherwise a reply failing every slot.
     */
    static HostReply replyFor(HostRequest request, Object reply, Throwable error) {
        if (error != null) {
            Throwable cause = error;
            while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                    && cause.getCause() != null) {
                cause = cause.getCause();
            }
            ThresherException te = ThresherException.of(cause);
            boolean guestStarted = te.code().retryClass() != RetryClass.RETRYABLE;
            return HostReply.failed(request, te, guestStarted);
        }
        if (reply == null) {
            return misfit(request, "no reply");
        }
        if (!(reply instanceof HostReply m)) {
            return misfit(request, "a " + reply.getClass().getSimpleName() + ": " + reply);
        }
        if (m.requestId() != request.requestId()) {
            return misfit(request, "the reply to request " + m.requestId() + ": " + m);
        }
        if (!sameSlots(request.runs(), m.runs())) {
            return misfit(request, "outcomes for other slots than the request's: " + m);
        }
        return m;
    }

    private static boolean sameSlots(List<ShardRun> asked, List<ShardRunOutcome> answered) {
        if (asked.size() != answered.size()) {
            return false;
        }
        for (int i = 0; i < asked.size(); i++) {
            ShardRun a = asked.get(i);
            ShardRunOutcome o = answered.get(i);
            if (a.runIndex() != o.runIndex() || !a.wireId().equals(o.wireId())) {
                return false;
            }
        }
        return true;
    }

    private static HostReply misfit(HostRequest request, String what) {
        log.error("HostRunHandler answered request {} with {}", request.requestId(), what);
        return HostReply.failed(request, new ThresherException(ErrorCode.INTERNAL_ERROR,
                "the host-run handler answered with " + what), true);
    }

    /**
     * Writes a reply. A reply the encoder refuses (a frame above the cap) is replaced, once, by a
     * reply failing every slot with the encoder's code; nothing of the refused reply was sent. When
     * even the replacement cannot be encoded (a request of very many slots), the connection is
     * closed, so the client sees {@code TRANSPORT_OUTCOME_UNKNOWN} instead of waiting for a reply
     * that will never come.
     */
    private void write(Channel ch, HostRequest request, HostReply reply, boolean mayReplace) {
        if (!ch.isActive()) {
            // the client already sees TRANSPORT_OUTCOME_UNKNOWN for this request
            log.debug("dropping reply to host-run request {}: {} is closed", request.requestId(), ch);
            return;
        }
        ch.writeAndFlush(reply).addListener(f -> {
            if (f.isSuccess()) {
                return;
            }
            boolean refused = f.cause() instanceof EncoderException;
            ThresherException te = refused ? WirePipeline.findThresher(f.cause()) : null;
            if (mayReplace && te != null) {
                log.warn("reply to host-run request {} not sent: {}", request.requestId(), te.getMessage());
                write(ch, request, HostReply.failed(request, te, true), false);
            } else if (refused) {
                log.warn("closing wire connection {}: no reply to host-run request {} can be encoded ({})", ch,
                        request.requestId(), f.cause().toString());
                ch.close();
            } else {
                log.debug("reply to host-run request {} not written on {}: {}", request.requestId(), ch,
                        f.cause().toString());
            }
        });
    }

    private void unexpected(ChannelHandlerContext ctx, WireMessage message) {
        WirePipeline.closeOnError(ctx, new ThresherException(ErrorCode.PROTOCOL_VIOLATION,
                MessageType.of(message) + " is not a message a wire client sends here"), maxFrameBytes, log);
    }
}
