package dev.thresher.http;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.function.BooleanSupplier;

/**
 * Sits before the aggregator and takes the requests whose body is read as it arrives ({@link TableRoutes#uploads}):
 * such a request goes on at once as an {@link UploadRequest} (headers, no content), and its body's chunks go into its
 * {@link Upload} instead of being gathered whole. Every other request passes on untouched.
 */
final class UploadRequests extends ChannelInboundHandlerAdapter {
    /** An upload's request as the routes see it: its headers, and the body that is still arriving. */
    static final class UploadRequest extends DefaultFullHttpRequest {
        final Upload body;

        UploadRequest(HttpRequest head, Upload body) {
            super(head.protocolVersion(), head.method(), head.uri(), Unpooled.EMPTY_BUFFER, head.headers(),
                    io.netty.handler.codec.http.EmptyHttpHeaders.INSTANCE);
            this.body = body;
        }
    }

    private final long waitMillis;
    private final BooleanSupplier owesResponses;
    /** The upload whose body is arriving; null between requests. */
    private Upload arriving;

    /**
     * @param waitMillis how long a reader of the body waits for its next bytes
     * @param owesResponses whether earlier requests still wait for their answers (no {@code 100 Continue} then)
     */
    UploadRequests(long waitMillis, BooleanSupplier owesResponses) {
        this.waitMillis = waitMillis;
        this.owesResponses = owesResponses;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (arriving != null && msg instanceof HttpContent content) {
            Upload upload = arriving;
            try {
                if (content.decoderResult().isFailure()) {
                    upload.fail(new IOException("the body cannot be decoded: " + content.decoderResult().cause()));
                    arriving = null;
                    ctx.close(); // what follows cannot be framed
                    return;
                }
                boolean last = msg instanceof LastHttpContent;
                upload.offer(content.content(), last);
                if (last) {
                    arriving = null;
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
            return;
        }
        if (msg instanceof HttpRequest head && !(msg instanceof FullHttpRequest) && head.decoderResult().isSuccess()
                && TableRoutes.uploads(head.method(), head.uri().split("\\?", 2)[0])) {
            if (HttpUtil.is100ContinueExpected(head)) {
                head.headers().remove(HttpHeaderNames.EXPECT);
                if (!owesResponses.getAsBoolean()) {
                    ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE,
                            Unpooled.EMPTY_BUFFER));
                }
            }
            arriving = new Upload(ctx.channel(), waitMillis);
            ctx.fireChannelRead(new UploadRequest(head, arriving));
            ctx.read(); // the connection reads on when it is told to: the body's first chunks
            return;
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (arriving != null) {
            arriving.fail(new IOException("the connection closed before the body's end"));
            arriving = null;
        }
        ctx.fireChannelInactive();
    }
}
