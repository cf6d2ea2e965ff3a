package dev.thresher.http;

import dev.thresher.bindings.access.Principal;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.TooLongHttpContentException;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection. Requests are answered one at a time, in the order they came: while one is being
 * answered (its call in flight, or its response being written) the connection is not read, and
 * requests already decoded wait in {@link #pending}. Waiting for a request is bounded by
 * {@code limits.httpRequestTimeoutMs}; waiting for a call is bounded by the call's deadline.
 */
final class HttpConnection extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(HttpConnection.class);

    /** The node's tenant: the admin token's. */
    private final String nodeTenant;
    private final Limits limits;
    private final AtomicInteger open;
    private final HttpAccess access;
    private final RouteTable<Exchange.Route> routes;
    private final ArrayDeque<FullHttpRequest> pending = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    /** A request is being answered: its call is in flight or its response is being written. */
    private boolean busy;
    /** The connection closes once the response being written is; nothing more is answered. */
    private boolean closing;
    private boolean draining;
    private ScheduledFuture<?> arrival;
    /** The body of the upload being answered, still arriving perhaps; null when the request is not an upload. */
    private Upload upload;

    /**
     * @param tenant the node's tenant: the admin token's, and the requests' when no user's token says otherwise
     * @param open the front's count of open connections
     * @param routes what answers requests, once they are authenticated and authorized
     */
    HttpConnection(String tenant, Limits limits, AtomicInteger open, HttpAccess access, RouteTable<Exchange.Route> routes) {
        this.nodeTenant = tenant;
        this.limits = limits;
        this.open = open;
        this.access = access;
        this.routes = routes;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        int n = open.incrementAndGet();
        if (n > limits.httpMaxConnections()) {
            log.debug("{} refused: {} HTTP connections open, limits.httpMaxConnections is {}",
                    ctx.channel(), n - 1, limits.httpMaxConnections());
            closing = true;
            ctx.channel().config().setAutoRead(false);
            write(ctx, false, Responses.failure(new ThresherException(ErrorCode.TOO_MANY_CONNECTIONS, "this node already serves "
                    + limits.httpMaxConnections() + " HTTP connections (limits.httpMaxConnections); retry later")));
        } else {
            arm();
        }
        ctx.fireChannelActive();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        open.decrementAndGet();
        closing = true;
        disarm();
        releasePending();
        ctx.fireChannelInactive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest req) || closing) {
            ReferenceCountUtil.release(msg);
            return;
        }
        disarm();
        pending.add(req);
        drain();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("{} closing after a failure: {}", ctx.channel(), cause.toString());
        closing = true;
        releasePending();
        ctx.close();
    }

    /**
     * Answers pending requests in order until one is in flight; then reading stops. With none in flight
     * and none pending, reading resumes and the wait for the next request is bounded again.
     */
    private void drain() {
        if (draining) {
            return; // a response written at once, inside handle(); the loop below goes on
        }
        draining = true;
        try {
            FullHttpRequest req;
            while (!busy && !closing && (req = pending.poll()) != null) {
                busy = true;
                try {
                    handle(ctx, req);
                } finally {
                    req.release();
                }
            }
        } finally {
            draining = false;
        }
        if (closing) {
            releasePending();
            ctx.channel().config().setAutoRead(false);
            return;
        }
        boolean idle = !busy && pending.isEmpty();
        ctx.channel().config().setAutoRead(idle);
        if (idle) {
            arm();
        }
    }

    /** Bounds the wait for the next request, from now to its last byte. */
    private void arm() {
        disarm();
        arrival = ctx.executor().schedule(() -> {
            if (!busy && pending.isEmpty() && ctx.channel().isActive()) {
                log.debug("{} no complete request within limits.httpRequestTimeoutMs ({} ms); closing",
                        ctx.channel(), limits.httpRequestTimeoutMs());
                closing = true;
                ctx.close();
            }
        }, limits.httpRequestTimeoutMs(), TimeUnit.MILLISECONDS);
    }

    private void disarm() {
        if (arrival != null) {
            arrival.cancel(false);
            arrival = null;
        }
    }

    /**
     * Whether requests already received are owed their responses (one is being answered, others wait), or the
     * connection answers nothing more: a response written now for a later request would overtake them.
     */
    boolean owesResponses() {
        return busy || closing || !pending.isEmpty();
    }

    private void releasePending() {
        FullHttpRequest req;
        while ((req = pending.poll()) != null) {
            req.release();
        }
    }

    /**
     * Answers one request, now or once its work completes; every path writes exactly one response. Who sends it is
     * authenticated (401 otherwise) and may use its path (403 otherwise) before it is routed: the answer to a request
     * that may not use a path is the same whether the path or its binding exists.
     */
    private void handle(ChannelHandlerContext ctx, FullHttpRequest req) {
        upload = req instanceof UploadRequests.UploadRequest u ? u.body : null;
        if (!req.decoderResult().isSuccess()) {
            refuseUndecodable(ctx, req.decoderResult().cause());
            return;
        }
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        String path = req.uri().split("\\?", 2)[0];
        Optional<String> directCall = CallRoutes.bindingOf(path);
        Principal principal;
        try {
            principal = access.authenticate(path, directCall.isPresent(), ctx.channel().remoteAddress(),
                    req.headers().get(HttpHeaderNames.AUTHORIZATION), nodeTenant);
        } catch (ThresherException e) {
            unauthorized(ctx, keepAlive, e);
            return;
        }
        Exchange x = new Exchange(ctx, req, path, principal == null ? nodeTenant : principal.tenant(),
                principal == null ? "http" : principal.user(), res -> write(ctx, keepAlive, res));
        try {
            HttpAccess.authorize(principal, path, directCall, nodeTenant);
        } catch (ThresherException e) {
            x.fail(e);
            return;
        }
        switch (routes.lookup(req.method(), path)) {
            case RouteTable.Lookup.Found<Exchange.Route> found -> found.route().answer(x.captured(found.captures()));
            case RouteTable.Lookup.WrongMethod<Exchange.Route> wrong -> x.wrongMethod(wrong.allowed());
            case RouteTable.Lookup.NotFound<Exchange.Route> none -> x.noRoute();
        }
    }

    /** 401 with the challenge a client needs to know what to send. */
    private void unauthorized(ChannelHandlerContext ctx, boolean keepAlive, ThresherException e) {
        FullHttpResponse res = Responses.failure(e);
        res.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"thresher\"");
        write(ctx, keepAlive, res);
    }

    /**
     * The request could not be decoded, or its body is over the payload limit: answered with a typed error,
     * then the connection closes, because what follows on it cannot be framed.
     */
    private void refuseUndecodable(ChannelHandlerContext ctx, Throwable cause) {
        HttpResponseStatus status;
        ThresherException e;
        if (cause instanceof TooLongHttpContentException) {
            e = CallRoutes.tooLarge(limits);
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
        write(ctx, false, Responses.json(status, ErrorJson.of(e)));
    }
    /**
     * Writes the answer to the request being answered; once written, the next one is. A client that
     * does not read its answer within {@code limits.httpRequestTimeoutMs} loses the connection.
     */
    private void write(ChannelHandlerContext ctx, boolean keepAlive, FullHttpResponse res) {
        // an upload answered before its body's end leaves bytes on the connection that frame no request
        Upload unfinished = upload != null && !upload.complete() ? upload : null;
        upload = null;
        if (!keepAlive || unfinished != null) {
            closing = true;
        }
        res.headers().set(HttpHeaderNames.CONNECTION, closing ? HttpHeaderValues.CLOSE : HttpHeaderValues.KEEP_ALIVE);
        ChannelFuture written = ctx.writeAndFlush(res);
        ScheduledFuture<?> unread = ctx.executor().schedule(() -> {
            if (!written.isDone()) {
                log.debug("{} did not read its response within limits.httpRequestTimeoutMs ({} ms); closing",
                        ctx.channel(), limits.httpRequestTimeoutMs());
                closing = true;
                ctx.close();
            }
        }, limits.httpRequestTimeoutMs(), TimeUnit.MILLISECONDS);
        written.addListener((ChannelFutureListener) f -> {
            unread.cancel(false);
            if (f.isSuccess() && unfinished != null) {
                linger(f.channel(), unfinished);
                return;
            }
            if (!f.isSuccess() || closing) {
                f.channel().close();
                return;
            }
            busy = false;
            drain();
        });
    }

    /**
     * Closes the connection once the rest of an answered upload's body has been read and dropped, or after
     * {@code limits.httpRequestTimeoutMs}: closed at once, a client still sending would be reset and could lose the
     * answer.
     */
    private void linger(io.netty.channel.Channel channel, Upload unfinished) {
        ScheduledFuture<?> bound = channel.eventLoop().schedule(() -> {
            channel.close();
        }, limits.httpRequestTimeoutMs(), TimeUnit.MILLISECONDS);
        unfinished.whenEnded(() -> {
            bound.cancel(false);
            channel.close();
        });
        channel.read();
    }
}
