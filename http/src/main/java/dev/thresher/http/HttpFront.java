package dev.thresher.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.TooLongHttpContentException;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP front door of a node.
 *
 * <pre>
 * GET  /livez                         200 while the process serves
 * GET  /readyz                        200 once the node leads its partitions and serves calls, else 503
 * POST /v1/bindings/{name}/call       body: the JSON arguments; header Thresher-Deadline-Ms optional
 *      200 {"call_id": "...", "result": &lt;the reduced JSON&gt;}
 *      4xx/5xx {"error": {"code": 1003, "name": "UNKNOWN_BINDING", "category": "...", "retry": "TERMINAL",
 *               "guestCodeRan": false, "message": "..."}}
 * </pre>
 *
 * Requests are decoded on the event loop; calls complete on the coordinator's executor and the
 * response is written when the future completes, so nothing blocks the loop.
 */
public final class HttpFront implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Logger log = LoggerFactory.getLogger(HttpFront.class);
    private static final Pattern CALL = Pattern.compile("^/v1/bindings/([^/]+)/call$");
    private static final Pattern BINDING_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private final EventLoopGroup group;
    private final Channel channel;

    private HttpFront(EventLoopGroup group, Channel channel) {
        this.group = group;
        this.channel = channel;
    }

    /**
     * Binds and serves.
     *
     * @param tenant the tenant calls run as until HTTP authentication exists
     */
    public static HttpFront start(String host, int port, String tenant, Limits limits, CallService calls,
                                  BooleanSupplier ready) throws InterruptedException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            Channel ch = new ServerBootstrap()
                    .group(group)
                    .channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel c) {
                            c.pipeline().addLast(new HttpServerCodec(),
                                    new Aggregator(limits.directCallPayloadBytes()),
                                    new Handler(tenant, limits, calls, ready));
                        }
                    })
                    .bind(host, port).sync().channel();
            return new HttpFront(group, ch);
        } catch (InterruptedException | RuntimeException e) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
            throw e;
        }
    }

    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final String tenant;
        private final Limits limits;
        private final CallService calls;
        private final BooleanSupplier ready;

        Handler(String tenant, Limits limits, CallService calls, BooleanSupplier ready) {
            this.tenant = tenant;
            this.limits = limits;
            this.calls = calls;
            this.ready = ready;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            if (!req.decoderResult().isSuccess()) {
                refuseUndecodable(ctx, req.decoderResult().cause());
                return;
            }
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            String path = req.uri().split("\\?", 2)[0];
            HttpMethod method = req.method();
            if (path.equals("/livez") || path.equals("/readyz")) {
                if (!method.equals(HttpMethod.GET)) {
                    wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
                } else if (path.equals("/livez")) {
                    send(ctx, keepAlive, HttpResponseStatus.OK, "{\"status\":\"live\"}");
                } else {
                    boolean r = ready.getAsBoolean();
                    send(ctx, keepAlive, r ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                            r ? "{\"status\":\"ready\"}" : "{\"status\":\"starting\"}");
                }
                return;
            }
            Matcher m = CALL.matcher(path);
            if (!m.matches()) {
                // A routing failure, not a call's: HTTP's own 404, with the code of a request Thresher does not serve.
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + method + " " + path)));
                return;
            }
            if (!method.equals(HttpMethod.POST)) {
                wrongMethod(ctx, keepAlive, method, path, HttpMethod.POST);
                return;
            }
            String name = m.group(1);
            if (!BINDING_NAME.matcher(name).matches()) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.UNKNOWN_BINDING,
                        "no binding can be named '" + name + "': a name is a letter or '_', then letters, digits or '_'"));
                return;
            }
            if (req.content().readableBytes() > limits.directCallPayloadBytes()) {
                fail(ctx, keepAlive, tooLarge());
                return;
            }
            Optional<Long> deadline;
            try {
                String header = req.headers().get("Thresher-Deadline-Ms");
                deadline = header == null ? Optional.empty() : Optional.of(Long.parseLong(header.trim()));
            } catch (NumberFormatException nfe) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.INVALID_DEADLINE, "Thresher-Deadline-Ms must be an integer"));
                return;
            }
            String body;
            try {
                body = StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(req.content().nioBuffer())
                        .toString();
            } catch (CharacterCodingException e) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.INVALID_TEXT_ENCODING,
                        "the body is not valid UTF-8: " + e.getMessage()));
                return;
            }
            if (body.isBlank()) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                        "the body is empty; it must be the call's JSON arguments, e.g. {}"));
                return;
            }
            CompletableFuture<CallResult> future;
            try {
                future = calls.call(new CallRequest(tenant, "http", name, body, deadline));
            } catch (RuntimeException e) {
                future = CompletableFuture.failedFuture(e);
            }
            if (future == null) {
                future = CompletableFuture.failedFuture(
                        new ThresherException(ErrorCode.INTERNAL_ERROR, "the call service returned no future"));
            }
            future.whenComplete((result, failure) -> {
                        if (failure == null) {
                            send(ctx, keepAlive, HttpResponseStatus.OK, "{\"call_id\":\"" + result.callId()
                                    + "\",\"result\":" + result.resultJson() + "}");
                        } else {
                            fail(ctx, keepAlive, ThresherException.of(failure));
                        }
                    });
        }

        private ThresherException tooLarge() {
            return new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "the arguments exceed limits.directCallPayloadBytes ("
                    + limits.directCallPayloadBytes() + " bytes)");
        }

        /**
         * The request could not be decoded, or its body is over the payload limit: answered with a typed error,
         * then the connection closes, because what follows on it cannot be framed.
         */
        private void refuseUndecodable(ChannelHandlerContext ctx, Throwable cause) {
            HttpResponseStatus status;
            ThresherException e;
            if (cause instanceof TooLongHttpContentException) {
                e = tooLarge();
                status = HttpStatuses.of(e.code());
            } else if (cause instanceof TooLongHttpHeaderException) {
                status = HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE;
                e = new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "the request's header section is too large");
            } else if (cause instanceof TooLongHttpLineException) {
                status = HttpResponseStatus.REQUEST_URI_TOO_LONG;
                e = new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "the request line is too long");
            } else {
                status = HttpResponseStatus.BAD_REQUEST;
                e = new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "malformed HTTP request: " + cause.getMessage());
            }
            log.debug("{} refusing an undecodable request: {}", ctx.channel(), cause.toString());
            send(ctx, false, status, error(e));
        }

        private static void wrongMethod(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                                        HttpMethod allowed) {
            FullHttpResponse res = response(HttpResponseStatus.METHOD_NOT_ALLOWED, error(new ThresherException(
                    ErrorCode.UNSUPPORTED_STATEMENT, path + " serves " + allowed + ", not " + method)));
            res.headers().set(HttpHeaderNames.ALLOW, allowed.name());
            write(ctx, keepAlive, res);
        }

        private static void fail(ChannelHandlerContext ctx, boolean keepAlive, ThresherException e) {
            send(ctx, keepAlive, HttpStatuses.of(e.code()), error(e));
        }

        private static String error(ThresherException e) {
            ObjectNode root = JSON.createObjectNode();
            ObjectNode err = root.putObject("error");
            err.put("code", e.code().code());
            err.put("name", e.code().name());
            err.put("category", e.code().category().name());
            err.put("retry", e.code().retryClass().name());
            err.put("guestCodeRan", e.guestCodeRan());
            err.put("message", e.getMessage());
            return root.toString();
        }

        private static void send(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status, String json) {
            write(ctx, keepAlive, response(status, json));
        }

        private static FullHttpResponse response(HttpResponseStatus status, String json) {
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                    Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
            res.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
            HttpUtil.setContentLength(res, res.content().readableBytes());
            return res;
        }

        private static void write(ChannelHandlerContext ctx, boolean keepAlive, FullHttpResponse res) {
            if (keepAlive) {
                res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
                ctx.writeAndFlush(res);
            } else {
                res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE);
            }
        }
    }

    /**
     * Aggregates a request and its body up to the payload limit. A request over it is not answered here
     * with Netty's bare 413: it goes on to the handler as a request whose decoding failed with
     * {@link TooLongHttpContentException}, answered there in turn with a typed error.
     */
    private static final class Aggregator extends HttpObjectAggregator {
        Aggregator(int maxContentLength) {
            super(maxContentLength);
        }

        @Override
        protected Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
            if (HttpUtil.is100ContinueExpected(start) && HttpUtil.getContentLength(start, -1L) > maxContentLength) {
                return null; // refused by handleOversizedMessage, which the declared length leads to next
            }
            return super.newContinueResponse(start, maxContentLength, pipeline);
        }

        @Override
        protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
            if (!(oversized instanceof HttpRequest request)) {
                throw new TooLongHttpContentException("HTTP content exceeds " + maxContentLength() + " bytes");
            }
            FullHttpRequest refused = new DefaultFullHttpRequest(request.protocolVersion(), request.method(), request.uri(),
                    Unpooled.EMPTY_BUFFER);
            refused.setDecoderResult(DecoderResult.failure(
                    new TooLongHttpContentException("HTTP content exceeds " + maxContentLength() + " bytes")));
            ctx.fireChannelRead(refused);
        }
    }
}
