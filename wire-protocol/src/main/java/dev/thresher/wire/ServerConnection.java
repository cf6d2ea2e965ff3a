package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;
import dev.thresher.errors.ThresherException;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.EncoderException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server end of one connection. On the event loop it answers the handshake and hands each
 * request to {@code dispatch}; the dispatch thread calls the {@link ShardRunHandler}, and the
 * reply is written from whichever thread completes the handler's future (Netty moves the write
 * onto the event loop).
 */
final class ServerConnection extends SimpleChannelInboundHandler<WireMessage> {
    private static final Logger log = LoggerFactory.getLogger(ServerConnection.class);

    private final String nodeId;
    private final int maxFrameBytes;
    private final ShardRunHandler handler;
    private final Executor dispatch;
    private final Failpoints failpoints;

    private ServerConnection(String nodeId, int maxFrameBytes, ShardRunHandler handler, Executor dispatch,
                             Failpoints failpoints) {
        super(WireMessage.class);
        this.failpoints = failpoints;
        this.nodeId = nodeId;
        this.maxFrameBytes = maxFrameBytes;
        this.handler = handler;
        this.dispatch = dispatch;
    }

    /** Installs the codec and a server end on a freshly accepted channel. */
    static void configure(ChannelPipeline pipeline, String nodeId, int maxFrameBytes, ShardRunHandler handler,
            Executor dispatch, Failpoints failpoints) {
        WirePipeline.addCodec(pipeline, maxFrameBytes);
        pipeline.addLast("wire-server", new ServerConnection(nodeId, maxFrameBytes, handler, dispatch, failpoints));
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, WireMessage message) {
        long receivedNanos = System.nanoTime();
        switch (message) {
            case Hello m -> onHello(ctx, m);
            case ShardRunRequest m -> onRequest(ctx.channel(), m, receivedNanos);
            case HelloAck m -> unexpected(ctx, m);
            case HelloReject m -> unexpected(ctx, m);
            case ShardRunResult m -> unexpected(ctx, m);
            case ShardRunFailure m -> unexpected(ctx, m);
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

    private void onRequest(Channel ch, ShardRunRequest request, long receivedNanos) {
        try {
            dispatch.execute(() -> invoke(ch, request, receivedNanos));
        } catch (RejectedExecutionException e) {
            write(ch, request, new ShardRunFailure(request.requestId(), request.wireId(),
                    ErrorCode.CELL_UNAVAILABLE.code(), false, "node " + nodeId + " is shutting down"), false);
        }
    }

    private void invoke(Channel ch, ShardRunRequest request, long receivedNanos) {
        try {
            Site site = new Site(nodeId, request.partitionId(), request.slotIndex(), request.wireId());
            if (failpoints.hit(Failpoint.WIRE_RECEIVE, site) == Failpoints.Outcome.DROP) {
                // As if the connection broke after the request arrived: the sender cannot tell whether it ran.
                ch.close();
                return;
            }
        } catch (ThresherException e) {
            write(ch, request, ShardRunFailure.of(request, e, false), false);
            return;
        }
        CompletableFuture<WireMessage> future;
        try {
            future = handler.handle(request, receivedNanos);
            if (future == null) {
                future = CompletableFuture.failedFuture(
                        new ThresherException(ErrorCode.INTERNAL_ERROR, "ShardRunHandler returned no future"));
            }
        } catch (Throwable t) {
            future = CompletableFuture.failedFuture(t);
        }
        future.whenComplete((reply, error) -> write(ch, request, replyFor(request, reply, error), true));
    }

    static WireMessage replyFor(ShardRunRequest request, WireMessage reply, Throwable error) {
        if (error != null) {
            Throwable cause = error;
            while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                    && cause.getCause() != null) {
                cause = cause.getCause();
            }
            ThresherException te = ThresherException.of(cause);
            boolean guestStarted = te.code().retryClass() != RetryClass.RETRYABLE;
            return ShardRunFailure.of(request, te, guestStarted);
        }
        return switch (reply) {
            case null -> misfit(request, "no reply");
            case ShardRunResult m -> m.requestId() == request.requestId() ? m : misfit(request, m.toString());
            case ShardRunFailure m -> m.requestId() == request.requestId() ? m : misfit(request, m.toString());
            case Hello m -> misfit(request, m.toString());
            case HelloAck m -> misfit(request, m.toString());
            case HelloReject m -> misfit(request, m.toString());
            case ShardRunRequest m -> misfit(request, m.toString());
        };
    }

    private static ShardRunFailure misfit(ShardRunRequest request, String what) {
        log.error("ShardRunHandler answered request {} with {}", request.requestId(), what);
        return new ShardRunFailure(request.requestId(), request.wireId(), ErrorCode.INTERNAL_ERROR.code(), true,
                "the shard-run handler answered with " + what);
    }

    /**
     * Writes a reply. A reply the encoder refuses (a frame above the cap) is replaced, once, by a
     * failure with the encoder's code; nothing of the refused reply was sent.
     */
    private void write(Channel ch, ShardRunRequest request, WireMessage reply, boolean mayReplace) {
        if (!ch.isActive()) {
            // the client already sees TRANSPORT_OUTCOME_UNKNOWN for this request
            log.debug("dropping reply to shard-run request {}: {} is closed", request.requestId(), ch);
            return;
        }
        ch.writeAndFlush(reply).addListener(f -> {
            if (f.isSuccess()) {
                return;
            }
            if (mayReplace && f.cause() instanceof EncoderException
                    && WirePipeline.findThresher(f.cause()) instanceof ThresherException te) {
                log.warn("reply to shard-run request {} not sent: {}", request.requestId(), te.getMessage());
                write(ch, request, ShardRunFailure.of(request, te, true), false);
            } else {
                log.debug("reply to shard-run request {} not written on {}: {}", request.requestId(), ch,
                        f.cause().toString());
            }
        });
    }

    private void unexpected(ChannelHandlerContext ctx, WireMessage message) {
        WirePipeline.closeOnError(ctx, new ThresherException(ErrorCode.PROTOCOL_VIOLATION,
                MessageType.of(message) + " is not a message a wire client sends here"), maxFrameBytes, log);
    }
}
