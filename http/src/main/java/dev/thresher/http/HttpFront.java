package dev.thresher.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.thresher.bindings.CallRequest;
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
import io.netty.handler.codec.http.DefaultFullHttpResponse;
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
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
    private static final Pattern CALL = Pattern.compile("^/v1/bindings/([A-Za-z_][A-Za-z0-9_]*)/call$");

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
                                    // Slack over the payload limit so an oversized body gets a typed 413 from us.
                                    new HttpObjectAggregator(limits.directCallPayloadBytes() + 1024),
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
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            String path = req.uri().split("\\?", 2)[0];
            if (req.method().equals(HttpMethod.GET) && path.equals("/livez")) {
                send(ctx, keepAlive, HttpResponseStatus.OK, "{\"status\":\"live\"}");
                return;
            }
            if (req.method().equals(HttpMethod.GET) && path.equals("/readyz")) {
                boolean r = ready.getAsBoolean();
                send(ctx, keepAlive, r ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                        r ? "{\"status\":\"ready\"}" : "{\"status\":\"starting\"}");
                return;
            }
            Matcher m = CALL.matcher(path);
            if (!m.matches()) {
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND,
                        error(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + req.method() + " " + path)));
                return;
            }
            if (!req.method().equals(HttpMethod.POST)) {
                send(ctx, keepAlive, HttpResponseStatus.METHOD_NOT_ALLOWED,
                        error(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "calls are POST requests")));
                return;
            }
            if (req.content().readableBytes() > limits.directCallPayloadBytes()) {
                ThresherException e = new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "arguments are "
                        + req.content().readableBytes() + " bytes; the limit is " + limits.directCallPayloadBytes());
                send(ctx, keepAlive, HttpStatuses.of(e.code()), error(e));
                return;
            }
            Optional<Long> deadline;
            try {
                String header = req.headers().get("Thresher-Deadline-Ms");
                deadline = header == null ? Optional.empty() : Optional.of(Long.parseLong(header.trim()));
            } catch (NumberFormatException nfe) {
                ThresherException e = new ThresherException(ErrorCode.INVALID_DEADLINE, "Thresher-Deadline-Ms must be an integer");
                send(ctx, keepAlive, HttpStatuses.of(e.code()), error(e));
                return;
            }
            String body = req.content().toString(StandardCharsets.UTF_8);
            calls.call(new CallRequest(tenant, "http", m.group(1), body.isBlank() ? "{}" : body, deadline))
                    .whenComplete((result, failure) -> {
                        if (failure == null) {
                            send(ctx, keepAlive, HttpResponseStatus.OK, "{\"call_id\":\"" + result.callId()
                                    + "\",\"result\":" + result.resultJson() + "}");
                        } else {
                            ThresherException e = ThresherException.of(failure);
                            send(ctx, keepAlive, HttpStatuses.of(e.code()), error(e));
                        }
                    });
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
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                    Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
            res.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
            HttpUtil.setContentLength(res, res.content().readableBytes());
            if (keepAlive) {
                res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
                ctx.writeAndFlush(res);
            } else {
                ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE);
            }
        }
    }
}
