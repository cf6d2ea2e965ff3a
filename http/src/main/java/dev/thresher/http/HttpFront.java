package dev.thresher.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.BindingService;
import dev.thresher.bindings.TableService;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallOutcomes;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.IdempotentRequests;
import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.handler.ssl.SslContext;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ChannelInboundHandlerAdapter;
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
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.GlobalEventExecutor;
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
import java.util.ArrayDeque;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP front door of a node.
 *
 * <pre>
 * /admin/* needs "Authorization: Bearer &lt;token&gt;" with the node's admin token, and /livez, /readyz and
 * /metrics need it from peers other than loopback ({@link HttpAccess}); 401 otherwise.
 *
 * GET  /ui/                          the page for people (recent invocations, one call's timeline)
 * GET  /livez                         200 while the process serves
 * GET  /readyz                        200 once the node leads its partitions and serves calls, else 503
 * GET  /admin/topology                the node's view of the topology, byte-stable JSON (sorted keys)
 * GET  /admin/topology/replicas       this node's leader replicas: each partition in memory or not, rows, bytes, lag
 * GET  /metrics                       the node's metrics, Prometheus text or OpenMetrics ({@link MetricsRoute})
 * POST /v1/bindings/{name}/call       body: the JSON arguments; header Thresher-Deadline-Ms optional
 *      200 {"call_id": "...", "result": &lt;the reduced JSON&gt;}
 *      4xx/5xx {"error": {"code": 1003, "name": "UNKNOWN_BINDING", "category": "...", "retry": "TERMINAL",
 *               "guestCodeRan": false, "message": "..."}}
 * ANY  /v1/http/{binding}/...         an HTTP handler binding's routes ({@link HandlerRoutes}), once handlers are served
 * </pre>
 *
 * Requests are decoded on the event loop; calls complete on the coordinator's executor and the
 * response is written when the future completes, so nothing blocks the loop. One request per
 * connection is answered at a time, so pipelined requests are answered in order; a request must
 * arrive within {@code limits.httpRequestTimeoutMs}; a node holds at most
 * {@code limits.httpMaxConnections} connections: one more is answered 503 {@code TOO_MANY_CONNECTIONS} as soon as it
 * is accepted, before its request is read, and closed. Binding names are at most {@value #MAX_NAME_BYTES} bytes; what
 * an error echoes of a path or name goes through {@link dev.thresher.errors.Quoted}. See docs/operations.md, HTTP.
 */
public final class HttpFront implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Admin answers: records as objects, instants as ISO-8601 text. */
    private static final ObjectMapper ADMIN_JSON = new ObjectMapper().registerModule(new com.fasterxml.jackson.databind.module.SimpleModule()
            .addSerializer(java.time.Instant.class, com.fasterxml.jackson.databind.ser.std.ToStringSerializer.instance));
    private static final Logger log = LoggerFactory.getLogger(HttpFront.class);
    private static final Pattern CALL = Pattern.compile("^/v1/bindings/([^/]+)/call$");
    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    static final String IDEMPOTENT_REPLAYED = "Idempotent-Replayed";
    private static final Pattern BINDING_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    /** The longest binding name, in bytes: PostgreSQL's identifier length, as over pgwire. */
    static final int MAX_NAME_BYTES = 63;

    /** {@link ErrorCode#NAME_TOO_LONG} for a binding name of the path, shown cut short. */
    static ThresherException nameTooLong(String name) {
        return new ThresherException(ErrorCode.NAME_TOO_LONG, "a binding name is at most " + MAX_NAME_BYTES
                + " bytes: '" + Quoted.of(name) + "'");
    }

    private final EventLoopGroup group;
    private final Channel channel;
    private final ChannelGroup connections;
    private final HandlerRoutes handlerRoutes;
    private final boolean https;
    private boolean closed;
    /** The pipeline's first handler when the front speaks HTTPS. */
    static final String TLS_HANDLER = "http-tls";

    /** Threads the admin routes' blocking work runs on. */
    static final int ADMIN_THREADS = 2;

    /** The table service and the threads its work runs on; {@code journal} answers {@code /admin/invocations}. */
    record Admin(TableService tables, BindingService bindings, dev.thresher.bindings.TopologyService topologyChanges,
                 java.util.concurrent.Executor executor, dev.thresher.bindings.JournalService journal) {
    }

    private final java.util.concurrent.ExecutorService adminThreads;
    private final MetricsRoute metrics;

    private HttpFront(EventLoopGroup group, Channel channel, ChannelGroup connections,
                      java.util.concurrent.ExecutorService adminThreads, MetricsRoute metrics, HandlerRoutes handlerRoutes,
                      boolean https) {
        this.https = https;
        this.handlerRoutes = handlerRoutes;
        this.adminThreads = adminThreads;
        this.metrics = metrics;
        this.group = group;
        this.channel = channel;
        this.connections = connections;
    }

    /** A front door to start: what it serves, named; {@link Builder#start} binds it. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * What a front door serves. {@code host}, {@code port}, {@code tenant}, {@code limits} and {@code calls} are
     * needed; the rest has defaults: always ready, no authentication ({@link HttpAccess#UNAUTHENTICATED}: a front door
     * of its own, for protocol tests), and no table, binding, topology or journal administration, no
     * {@code Idempotency-Key} journal (such calls are refused), plain HTTP.
     */
    public static final class Builder {
        private String host;
        private int port;
        private String tenant;
        private Limits limits;
        private CallService calls;
        private java.util.function.Supplier<Optional<String>> readiness = Optional::empty;
        private TableService tables;
        private BindingService bindings;
        private java.util.function.Supplier<String> topology;
        private dev.thresher.bindings.TopologyService topologyChanges;
        private HttpAccess access = HttpAccess.UNAUTHENTICATED;
        private IdempotentRequests idempotency;
        private CallOutcomes outcomes;
        private dev.thresher.bindings.JournalService journal;
        private SslContext tls;

        private Builder() {
        }

        /** The address to listen on; port 0 picks a free one ({@link HttpFront#port}). */
        public Builder listen(String host, int port) {
            this.host = host;
            this.port = port;
            return this;
        }

        /** The tenant requests run in when no user's token says otherwise: the admin token's. */
        public Builder tenant(String tenant) {
            this.tenant = tenant;
            return this;
        }

        public Builder limits(Limits limits) {
            this.limits = limits;
            return this;
        }

        /** What {@code POST /v1/bindings/{name}/call} calls. */
        public Builder calls(CallService calls) {
            this.calls = calls;
            return this;
        }

        /** Why the node is not ready, empty when it is: {@code /readyz} answers 503 with that reason. Ready by default. */
        public Builder readiness(java.util.function.Supplier<Optional<String>> readiness) {
            this.readiness = readiness;
            return this;
        }

        /**
         * Serves {@code /admin/tables} (its blocking work on {@value #ADMIN_THREADS} threads of the front's own); the
         * other admin services below are served only with it.
         */
        public Builder tables(TableService tables) {
            this.tables = tables;
            return this;
        }

        /** Serves {@code /admin/bindings} (with {@link #tables}). */
        public Builder bindings(BindingService bindings) {
            this.bindings = bindings;
            return this;
        }

        /** Serves {@code GET /admin/topology}: the node's view of the topology as a byte-stable JSON document. */
        public Builder topology(java.util.function.Supplier<String> topology) {
            this.topology = topology;
            return this;
        }

        /**
         * Serves the topology changes (with {@link #tables}): {@code /admin/partitions/...}, {@code /admin/nodes/...},
         * {@code /admin/shards}, {@code GET /admin/topology/changes} and {@code GET /admin/topology/replicas}.
         */
        public Builder topologyChanges(dev.thresher.bindings.TopologyService topologyChanges) {
            this.topologyChanges = topologyChanges;
            return this;
        }

        /** Who may use which route ({@link HttpAccess}: the admin token, users' tokens, the open endpoints). */
        public Builder access(HttpAccess access) {
            this.access = access;
            return this;
        }

        /**
         * Journals direct calls that carry an {@code Idempotency-Key} in {@code idempotency}, a request taking over the
         * key of one that died answering from its call's outcome in {@code outcomes}.
         */
        public Builder idempotency(IdempotentRequests idempotency, CallOutcomes outcomes) {
            this.idempotency = idempotency;
            this.outcomes = outcomes;
            return this;
        }

        /** Serves the journal ({@code GET /admin/invocations}, {@link JournalRoutes}; with {@link #tables}). */
        public Builder journal(dev.thresher.bindings.JournalService journal) {
            this.journal = journal;
            return this;
        }

        /**
         * Speaks HTTPS only: every connection starts with a TLS handshake with this server context (HTTP/1.1 inside);
         * null, the default, serves plain HTTP.
         */
        public Builder tls(SslContext tls) {
            this.tls = tls;
            return this;
        }

        /** Binds and serves. */
        public HttpFront start() throws InterruptedException {
            java.util.Objects.requireNonNull(host, "host");
            java.util.Objects.requireNonNull(tenant, "tenant");
            java.util.Objects.requireNonNull(limits, "limits");
            java.util.Objects.requireNonNull(calls, "calls");
            java.util.Objects.requireNonNull(readiness, "readiness");
            java.util.Objects.requireNonNull(access, "access");
            return HttpFront.start(this);
        }
    }

    private static HttpFront start(Builder b) throws InterruptedException {
        String host = b.host;
        int port = b.port;
        String tenant = b.tenant;
        Limits limits = b.limits;
        CallService calls = b.calls;
        java.util.function.Supplier<Optional<String>> readiness = b.readiness;
        TableService tables = b.tables;
        BindingService bindings = b.bindings;
        java.util.function.Supplier<String> topology = b.topology;
        dev.thresher.bindings.TopologyService topologyChanges = b.topologyChanges;
        HttpAccess access = b.access;
        IdempotentRequests idempotency = b.idempotency;
        CallOutcomes outcomes = b.outcomes;
        dev.thresher.bindings.JournalService journal = b.journal;
        SslContext tls = b.tls;
        if (tls != null && tls.isClient()) {
            throw new IllegalArgumentException("HTTPS needs a server SslContext");
        }
        java.util.concurrent.ExecutorService adminThreads = tables == null ? null : new java.util.concurrent.ThreadPoolExecutor(
                0, ADMIN_THREADS, 60, TimeUnit.SECONDS, new java.util.concurrent.ArrayBlockingQueue<>(64),
                new io.netty.util.concurrent.DefaultThreadFactory("http-admin", true));
        Admin admin = tables == null ? null : new Admin(tables, bindings, topologyChanges, adminThreads, journal);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        AtomicInteger open = new AtomicInteger();
        MetricsRoute metrics = new MetricsRoute();
        ChannelGroup connections = new DefaultChannelGroup("http-connections", GlobalEventExecutor.INSTANCE);
        HandlerRoutes handlerRoutes = new HandlerRoutes(tenant, limits, idempotency);
        try {
            Channel ch = new ServerBootstrap()
                    .group(group)
                    .channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel c) {
                            connections.add(c); // the group forgets a channel when it closes
                            if (tls != null) {
                                c.pipeline().addLast(TLS_HANDLER, tls.newHandler(c.alloc()));
                            }
                            configure(c.pipeline(), limits, new Handler(tenant, limits, calls, readiness, open, admin,
                                    topology, access, idempotency, outcomes, metrics, handlerRoutes));
                        }
                    })
                    .bind(host, port).sync().channel();
            log.info("http listening on {}:{} ({})", host, ((InetSocketAddress) ch.localAddress()).getPort(),
                    tls == null ? "plain HTTP" : "HTTPS");
            return new HttpFront(group, ch, connections, adminThreads, metrics, handlerRoutes, tls != null);
        } catch (InterruptedException | RuntimeException e) {
            if (adminThreads != null) {
                adminThreads.shutdownNow();
            }
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
            throw e;
        }
    }

    /** The pipeline of a new connection: HTTP/1.1 decoding and encoding, a request and its body whole, then {@code handler}. */
    static void configure(ChannelPipeline pipeline, Limits limits, Handler handler) {
        pipeline.addLast(new HttpServerCodec(), new Aggregator(limits.directCallPayloadBytes(), handler::owesResponses),
                handler);
    }

    /** Serves HTTP handler bindings' routes under {@code /v1/http/} through {@code handlers} from now on. */
    public void serveHandlers(dev.thresher.bindings.HandlerService handlers) {
        handlerRoutes.serve(handlers);
    }

    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /** Whether this front speaks HTTPS (every connection starts with a TLS handshake) rather than plain HTTP. */
    public boolean https() {
        return https;
    }

    /** Serves {@code GET /metrics} from now on, open like the health probes ({@link MetricsRoute}). */
    public void serveMetrics(MetricsRoute.Scrape scrape) {
        metrics.serve(scrape);
    }

    /**
     * The deadline a request asks for in {@code Thresher-Deadline-Ms}, if any.
     *
     * @throws ThresherException {@code INVALID_DEADLINE} when the header is not an integer
     */
    static Optional<Long> deadlineHeader(HttpRequest req) {
        String header = req.headers().get("Thresher-Deadline-Ms");
        try {
            return header == null ? Optional.empty() : Optional.of(Long.parseLong(header.trim()));
        } catch (NumberFormatException nfe) {
            throw new ThresherException(ErrorCode.INVALID_DEADLINE, "Thresher-Deadline-Ms must be an integer");
        }
    }

    /** {@code s} as a JSON string. */
    static String quote(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Stops accepting connections; the open ones go on being served. */
    public synchronized void stopAccepting() {
        if (!closed) {
            channel.close().awaitUninterruptibly();
        }
    }

    /**
     * Closes the listening channel, every connection and the event loop. Each connection is closed by
     * a task on its event loop, so a response already handed to the loop is written first.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        channel.close().awaitUninterruptibly();
        for (Channel c : connections) {
            c.eventLoop().execute(c::close);
        }
        for (Channel c : connections) {
            c.closeFuture().awaitUninterruptibly(2, TimeUnit.SECONDS);
        }
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        if (adminThreads != null) {
            adminThreads.shutdown();
        }
    }

    /**
     * One connection. Requests are answered one at a time, in the order they came: while one is being
     * answered (its call in flight, or its response being written) the connection is not read, and
     * requests already decoded wait in {@link #pending}. Waiting for a request is bounded by
     * {@code limits.httpRequestTimeoutMs}; waiting for a call is bounded by the call's deadline.
     */
    static final class Handler extends ChannelInboundHandlerAdapter {
        /** The node's tenant: the admin token's. */
        private final String nodeTenant;
        /** The tenant of the request being answered: its user's (a connection answers one request at a time). */
        private String tenant;
        /** The user of the request being answered: the principal of its calls. */
        private String caller = "http";
        private final Limits limits;
        private final CallService calls;
        private final java.util.function.Supplier<Optional<String>> readiness;
        private final AtomicInteger open;
        private final ArrayDeque<FullHttpRequest> pending = new ArrayDeque<>();
        private ChannelHandlerContext ctx;
        /** A request is being answered: its call is in flight or its response is being written. */
        private boolean busy;
        /** The connection closes once the response being written is; nothing more is answered. */
        private boolean closing;
        private boolean draining;
        private ScheduledFuture<?> arrival;

        private final Admin admin;
        private final HttpAccess access;
        /** Journals calls with an Idempotency-Key; null: such calls are refused. */
        private final IdempotentRequests idempotency;
        private final CallOutcomes outcomes;

        /** The routes of HTTP handler bindings, or null when not served. */
        private final HandlerRoutes handlerRoutes;

        /** The node's topology view for {@code GET /admin/topology}, or null when not served. */
        private final java.util.function.Supplier<String> topology;
        private final MetricsRoute metrics;

        Handler(String tenant, Limits limits, CallService calls, BooleanSupplier ready, AtomicInteger open) {
            this(tenant, limits, calls, () -> ready.getAsBoolean() ? Optional.empty() : Optional.of("not ready"), open,
                    null, null, HttpAccess.UNAUTHENTICATED, null, null, new MetricsRoute(), null);
        }

        Handler(String tenant, Limits limits, CallService calls, java.util.function.Supplier<Optional<String>> readiness,
                AtomicInteger open, Admin admin, java.util.function.Supplier<String> topology, HttpAccess access,
                IdempotentRequests idempotency, CallOutcomes outcomes, MetricsRoute metrics,
                HandlerRoutes handlerRoutes) {
            this.handlerRoutes = handlerRoutes;
            this.metrics = metrics;
            this.access = access;
            this.idempotency = idempotency;
            this.outcomes = outcomes;
            this.topology = topology;
            this.admin = admin;
            this.tenant = tenant;
            this.nodeTenant = tenant;
            this.limits = limits;
            this.calls = calls;
            this.readiness = readiness;
            this.open = open;
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
                fail(ctx, false, new ThresherException(ErrorCode.TOO_MANY_CONNECTIONS, "this node already serves "
                        + limits.httpMaxConnections() + " HTTP connections (limits.httpMaxConnections); retry later"));
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

        /** Answers one request, now or once its call completes; every path writes exactly one response. */
        private void handle(ChannelHandlerContext ctx, FullHttpRequest req) {
            if (!req.decoderResult().isSuccess()) {
                refuseUndecodable(ctx, req.decoderResult().cause());
                return;
            }
            boolean keepAlive = HttpUtil.isKeepAlive(req);
            String path = req.uri().split("\\?", 2)[0];
            HttpMethod method = req.method();
            Matcher directCall = CALL.matcher(path);
            dev.thresher.bindings.access.Principal principal;
            try {
                principal = access.authenticate(path, directCall.matches(), ctx.channel().remoteAddress(),
                        req.headers().get(HttpHeaderNames.AUTHORIZATION), nodeTenant);
            } catch (ThresherException e) {
                unauthorized(ctx, keepAlive, e);
                return;
            }
            tenant = principal == null ? nodeTenant : principal.tenant();
            caller = principal == null ? "http" : principal.user();
            try {
                authorize(principal, path, directCall);
            } catch (ThresherException e) {
                fail(ctx, keepAlive, e);
                return;
            }
            if (path.equals("/livez") || path.equals("/readyz")) {
                if (!method.equals(HttpMethod.GET)) {
                    wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
                } else if (path.equals("/livez")) {
                    send(ctx, keepAlive, HttpResponseStatus.OK, "{\"status\":\"live\"}");
                } else {
                    Optional<String> why = readiness.get();
                    send(ctx, keepAlive, why.isEmpty() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                            why.isEmpty() ? "{\"status\":\"ready\"}" : "{\"status\":\"not ready\",\"reason\":"
                                    + quote(why.get()) + "}");
                }
                return;
            }
            if (path.equals(MetricsRoute.PATH) && metrics.served()) {
                if (!method.equals(HttpMethod.GET)) {
                    wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
                } else {
                    write(ctx, keepAlive, metrics.answer(req.headers().get(HttpHeaderNames.ACCEPT)));
                }
                return;
            }
            if (UiAssets.isUiPath(path)) {
                if (!method.equals(HttpMethod.GET)) {
                    wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
                    return;
                }
                Optional<FullHttpResponse> file = UiAssets.get(path);
                if (file.isPresent()) {
                    write(ctx, keepAlive, file.get());
                } else {
                    send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                            ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + method + " " + Quoted.of(path))));
                }
                return;
            }
            if (path.equals("/admin/topology/changes") || path.equals("/admin/topology/replicas")
                    || path.startsWith("/admin/partitions/")
                    || path.startsWith("/admin/nodes/") || path.equals("/admin/shards") || path.startsWith("/admin/shards/")) {
                adminTopology(ctx, keepAlive, method, path, req);
                return;
            }
            if (path.equals("/admin/topology") && topology != null) {
                if (!method.equals(HttpMethod.GET)) {
                    wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
                } else {
                    send(ctx, keepAlive, HttpResponseStatus.OK, topology.get());
                }
                return;
            }
            if (path.equals("/admin/tables") || path.startsWith("/admin/tables/")) {
                adminTables(ctx, keepAlive, method, path, req);
                return;
            }
            if (path.equals("/admin/bindings") || path.startsWith("/admin/bindings/")) {
                adminBindings(ctx, keepAlive, method, path, req);
                return;
            }
            if (JournalRoutes.serves(path)) {
                adminJournal(ctx, keepAlive, method, path, req);
                return;
            }
            if (handlerRoutes != null && HandlerRoutes.claims(path)) {
                handlerRoutes.handle(ctx, req, path, tenant, caller, res -> write(ctx, keepAlive, res));
                return;
            }
            Matcher m = CALL.matcher(path);
            if (!m.matches()) {
                // A routing failure, not a call's: HTTP's own 404, with the code of a request Thresher does not serve.
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + method + " " + Quoted.of(path))));
                return;
            }
            if (!method.equals(HttpMethod.POST)) {
                wrongMethod(ctx, keepAlive, method, path, HttpMethod.POST);
                return;
            }
            String name = m.group(1);
            if (!BINDING_NAME.matcher(name).matches()) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.UNKNOWN_BINDING, "no binding can be named '"
                        + Quoted.of(name) + "': a name is a letter or '_', then letters, digits or '_'"));
                return;
            }
            if (name.length() > MAX_NAME_BYTES) { // the pattern admits ASCII only: a character is a byte
                fail(ctx, keepAlive, nameTooLong(name));
                return;
            }
            if (req.content().readableBytes() > limits.directCallPayloadBytes()) {
                fail(ctx, keepAlive, tooLarge());
                return;
            }
            Optional<Long> deadline;
            try {
                deadline = deadlineHeader(req);
            } catch (ThresherException e) {
                fail(ctx, keepAlive, e);
                return;
            }
            Optional<String> decoded = Utf8.decode(req.content().nioBuffer());
            if (decoded.isEmpty()) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.INVALID_TEXT_ENCODING, "the body is not valid UTF-8"));
                return;
            }
            String body = decoded.get();
            if (body.isBlank()) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                        "the body is empty; it must be the call's JSON arguments, e.g. {}"));
                return;
            }
            String idempotencyKey = req.headers().get(IDEMPOTENCY_KEY);
            if (idempotencyKey != null) {
                idempotentCall(ctx, keepAlive, name, body, deadline, idempotencyKey, req.content());
                return;
            }
            CompletableFuture<CallResult> future;
            try {
                future = calls.call(new CallRequest(tenant, caller, name, body, deadline));
            } catch (RuntimeException e) {
                future = CompletableFuture.failedFuture(e);
            }
            if (future == null) {
                future = CompletableFuture.failedFuture(
                        new ThresherException(ErrorCode.INTERNAL_ERROR, "the call service returned no future"));
            }
            future.whenComplete((result, failure) -> {
                try {
                    ctx.executor().execute(() -> callDone(ctx, keepAlive, result, failure));
                } catch (RejectedExecutionException e) {
                    log.debug("event loop shut down; dropping the result of a call of {}", name);
                }
            });
        }

        /**
         * {@code /admin/tables}: GET lists, POST creates ({@code {"name", "key", "columns", "partitions", "shards"}});
         * {@code /admin/tables/{name}}: GET shows, DELETE drops; {@code /admin/tables/{name}/migrations}: POST
         * {@code {"addColumn": "..."}} or {@code {"dropColumn": "..."}} alters; {@code /admin/tables/{name}/migrate}:
         * POST applies pending and failed migrations again. Answers are the tables as JSON.
         */
        private void adminTables(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                                 FullHttpRequest req) {
            if (admin == null) {
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "this node serves no table administration")));
                return;
            }
            AdminRequest r = adminRequest(ctx, keepAlive, method, path, req, "/admin/tables", Set.of("migrations", "migrate"),
                    (name, sub) -> name == null ? (method.equals(HttpMethod.GET) ? HttpMethod.GET : HttpMethod.POST)
                            : sub == null ? (method.equals(HttpMethod.DELETE) ? HttpMethod.DELETE : HttpMethod.GET)
                            : HttpMethod.POST);
            if (r == null) {
                return;
            }
            String name = r.name();
            String sub = r.sub();
            String body = r.body();
            TableService tables = admin.tables();
            java.util.function.Supplier<Object> work = () -> {
                if (name == null && method.equals(HttpMethod.GET)) {
                    return tables.list(tenant);
                }
                if (name == null) {
                    com.fasterxml.jackson.databind.JsonNode spec = json(body);
                    java.util.List<Integer> shards = new java.util.ArrayList<>();
                    spec.path("shards").forEach(n -> shards.add(n.asInt()));
                    return tables.create(tenant, new TableService.TableSpec(text(spec, "name"), text(spec, "key"),
                            text(spec, "columns"), spec.path("partitions").asInt(16), shards));
                }
                if (sub == null && method.equals(HttpMethod.GET)) {
                    return tables.show(tenant, name);
                }
                if (sub == null) {
                    tables.drop(tenant, name);
                    return java.util.Map.of("dropped", name);
                }
                if (sub.equals("migrate")) {
                    return tables.migrate(tenant, name);
                }
                com.fasterxml.jackson.databind.JsonNode change = json(body);
                if (change.hasNonNull("addColumn") == change.hasNonNull("dropColumn")) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                            "a migration is {\"addColumn\": \"name type\"} or {\"dropColumn\": \"name\"}");
                }
                return tables.alter(tenant, name, change.hasNonNull("addColumn")
                        ? new TableService.Change.AddColumn(change.get("addColumn").asText())
                        : new TableService.Change.DropColumn(change.get("dropColumn").asText()));
            };
            HttpResponseStatus ok = name == null && method.equals(HttpMethod.POST) ? HttpResponseStatus.CREATED : HttpResponseStatus.OK;
            runAdmin(ctx, keepAlive, method, path, ok, work);
        }

        /**
         * {@code /admin/bindings}: GET lists each binding's current version, POST deploys
         * ({@code {"manifest": {...}, "module": "<base64>"}}); {@code /admin/bindings/{name}}: GET shows the current
         * version with its manifest; {@code /admin/bindings/{name}/history}: GET every version;
         * {@code /admin/bindings/{name}/rollback}: POST {@code {"to": n}}.
         */
        private void adminBindings(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                                   FullHttpRequest req) {
            if (admin == null || admin.bindings() == null) {
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "this node serves no binding administration")));
                return;
            }
            AdminRequest r = adminRequest(ctx, keepAlive, method, path, req, "/admin/bindings", Set.of("history", "rollback"),
                    (name, sub) -> name == null ? (method.equals(HttpMethod.GET) ? HttpMethod.GET : HttpMethod.POST)
                            : "rollback".equals(sub) ? HttpMethod.POST : HttpMethod.GET);
            if (r == null) {
                return;
            }
            String name = r.name();
            String sub = r.sub();
            String body = r.body();
            BindingService bindings = admin.bindings();
            java.util.function.Supplier<Object> work = () -> {
                if (name == null && method.equals(HttpMethod.GET)) {
                    return bindings.list(tenant);
                }
                if (name == null) {
                    com.fasterxml.jackson.databind.JsonNode d = json(body);
                    com.fasterxml.jackson.databind.JsonNode manifest = d.get("manifest");
                    if (manifest == null || !(manifest.isObject() || manifest.isTextual())) {
                        throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"manifest\" (the manifest object) is missing");
                    }
                    byte[] module;
                    try {
                        module = java.util.Base64.getDecoder().decode(text(d, "module"));
                    } catch (IllegalArgumentException e) {
                        throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"module\" is not base64: " + e.getMessage());
                    }
                    byte[] manifestBytes = (manifest.isTextual() ? manifest.asText() : manifest.toString())
                            .getBytes(StandardCharsets.UTF_8);
                    return bindings.deploy(tenant, "http", manifestBytes, module);
                }
                if ("rollback".equals(sub)) {
                    com.fasterxml.jackson.databind.JsonNode to = json(body).get("to");
                    if (to == null || !to.isInt()) {
                        throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"to\" (a version number) is missing");
                    }
                    return bindings.rollback(tenant, name, to.asInt(), "http");
                }
                java.util.List<BindingService.Version> history = bindings.history(tenant, name);
                if ("history".equals(sub)) {
                    return history;
                }
                BindingService.Version current = history.get(history.size() - 1);
                java.util.Map<String, Object> shown = new java.util.LinkedHashMap<>();
                shown.put("version", current);
                shown.put("manifest", bindings.manifest(current.manifestDigest()).map(m -> {
                    try {
                        return (Object) JSON.readTree(m);
                    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                        return m;
                    }
                }).orElse(null));
                return shown;
            };
            HttpResponseStatus ok = name == null && method.equals(HttpMethod.POST) ? HttpResponseStatus.CREATED : HttpResponseStatus.OK;
            runAdmin(ctx, keepAlive, method, path, ok, work);
        }

        /**
         * Topology changes, each answered with its audited change ({@code changeId}, {@code command}, {@code dryRun},
         * {@code outcome}, {@code steps}); a body's {@code "dryRun": true} plans without changing anything:
         * {@code POST /admin/partitions/{id}/split} ({@code {"at": slot}}), {@code POST /admin/partitions/{id}/move}
         * ({@code {"to": "shard"}}), {@code POST /admin/partitions/{id}/leader} ({@code {"to": "node"}}: a leader
         * transfer), {@code POST /admin/nodes/{id}/drain} and {@code .../undrain}, {@code POST /admin/shards}
         * ({@code {"url", "name"}}), {@code POST /admin/shards/{id}/remove}; {@code GET /admin/topology/changes}
         * ({@code ?limit=n}) lists the audit, newest first.
         */
        private void adminTopology(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                                   FullHttpRequest req) {
            if (admin == null || admin.topologyChanges() == null) {
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "this node serves no topology administration")));
                return;
            }
            dev.thresher.bindings.TopologyService t = admin.topologyChanges();
            if (path.equals("/admin/topology/replicas")) {
                if (!method.equals(HttpMethod.GET)) {
                    wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
                    return;
                }
                runAdmin(ctx, keepAlive, method, path, HttpResponseStatus.OK, t::replicas);
                return;
            }
            if (path.equals("/admin/topology/changes")) {
                if (!method.equals(HttpMethod.GET)) {
                    wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
                    return;
                }
                int limit = 100;
                String query = req.uri().contains("?") ? req.uri().substring(req.uri().indexOf('?') + 1) : "";
                for (String kv : query.split("&")) {
                    if (kv.startsWith("limit=")) {
                        try {
                            limit = Integer.parseInt(kv.substring(6));
                        } catch (NumberFormatException e) {
                            fail(ctx, keepAlive, new ThresherException(ErrorCode.INVALID_ARGUMENTS, "limit is a number"));
                            return;
                        }
                    }
                }
                int n = limit;
                runAdmin(ctx, keepAlive, method, path, HttpResponseStatus.OK, () -> t.changes(n));
                return;
            }
            String prefix = path.startsWith("/admin/partitions/") ? "/admin/partitions"
                    : path.startsWith("/admin/nodes/") ? "/admin/nodes" : "/admin/shards";
            Set<String> subs = switch (prefix) {
                case "/admin/partitions" -> Set.of("split", "move", "leader");
                case "/admin/nodes" -> Set.of("drain", "undrain");
                default -> Set.of("remove");
            };
            AdminRequest r = adminRequest(ctx, keepAlive, method, path, req, prefix, subs, (name, s) -> HttpMethod.POST);
            if (r == null) {
                return;
            }
            if ((r.name() == null) != prefix.equals("/admin/shards") || (r.name() != null && r.sub() == null)) {
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + method + " " + Quoted.of(path))));
                return;
            }
            String by = "http";
            java.util.function.Supplier<Object> work = () -> {
                com.fasterxml.jackson.databind.JsonNode d = r.body().isBlank() ? JSON.createObjectNode() : json(r.body());
                boolean dryRun = d.path("dryRun").asBoolean(false);
                if (prefix.equals("/admin/shards") && r.name() == null) {
                    return t.addShard(by, text(d, "url"), Optional.ofNullable(d.path("name").isTextual()
                            ? d.path("name").asText() : null), dryRun);
                }
                if (prefix.equals("/admin/shards")) {
                    return t.removeShard(by, r.name(), dryRun);
                }
                if (prefix.equals("/admin/nodes")) {
                    return r.sub().equals("drain") ? t.drainNode(by, r.name(), dryRun) : t.undrainNode(by, r.name(), dryRun);
                }
                int id;
                try {
                    id = Integer.parseInt(r.name());
                } catch (NumberFormatException e) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a partition id is a number, was '"
                            + Quoted.of(r.name()) + "'");
                }
                return switch (r.sub()) {
                    case "split" -> t.splitPartition(by, id, d.path("at").isInt() ? java.util.OptionalInt.of(d.path("at")
                            .asInt()) : java.util.OptionalInt.empty(), dryRun);
                    case "move" -> t.movePartition(by, id, d.path("to").asText(null), dryRun);
                    default -> t.transferLeader(by, id, text(d, "to"), dryRun);
                };
            };
            runAdmin(ctx, keepAlive, method, path, HttpResponseStatus.OK, work);
        }

        /** {@code GET /admin/invocations} and {@code GET /admin/invocations/{id}}: {@link JournalRoutes}. */
        private void adminJournal(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                                  FullHttpRequest req) {
            if (admin == null || admin.journal() == null || !JournalRoutes.routable(path)) {
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + method + " " + Quoted.of(path))));
            } else if (!method.equals(HttpMethod.GET)) {
                wrongMethod(ctx, keepAlive, method, path, HttpMethod.GET);
            } else {
                runAdmin(ctx, keepAlive, method, path, HttpResponseStatus.OK,
                        JournalRoutes.route(admin.journal(), tenant, req.uri()));
            }
        }

        /** An admin path taken apart: {@code <prefix>[/name[/sub]]}, and the body as text. */
        private record AdminRequest(String name, String sub, String body) {
        }

        /**
         * Takes an admin request apart, or answers it (404 for an unknown path, 405 for a method the path does not
         * serve, an error for a body that is not UTF-8) and returns null.
         */
        private AdminRequest adminRequest(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                                          FullHttpRequest req, String prefix, Set<String> subs,
                                          java.util.function.BiFunction<String, String, HttpMethod> allowedFor) {
            String[] parts = path.substring(prefix.length()).split("/", -1);
            String name = parts.length > 1 ? parts[1] : null;
            String sub = parts.length > 2 ? parts[2] : null;
            if (parts.length > 3 || (name != null && name.isEmpty()) || (sub != null && !subs.contains(sub))) {
                send(ctx, keepAlive, HttpResponseStatus.NOT_FOUND, error(new ThresherException(
                        ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + method + " " + Quoted.of(path))));
                return null;
            }
            HttpMethod allowed = allowedFor.apply(name, sub);
            if (!method.equals(allowed)) {
                wrongMethod(ctx, keepAlive, method, path, allowed);
                return null;
            }
            String body = Utf8.decode(req.content().nioBuffer()).orElse(null);
            if (body == null) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.INVALID_TEXT_ENCODING, "the body is not valid UTF-8"));
                return null;
            }
            return new AdminRequest(name, sub, body);
        }

        /** Runs an admin request's blocking work on the admin threads and answers with its result as JSON. */
        private void runAdmin(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                              HttpResponseStatus ok, java.util.function.Supplier<Object> work) {
            CompletableFuture<String> future;
            try {
                future = CompletableFuture.supplyAsync(() -> {
                    try {
                        return ADMIN_JSON.writeValueAsString(work.get());
                    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                        throw new ThresherException(ErrorCode.INTERNAL_ERROR, "cannot write the answer: " + e.getMessage(), e);
                    }
                }, admin.executor());
            } catch (RejectedExecutionException e) {
                future = CompletableFuture.failedFuture(new ThresherException(ErrorCode.CELL_UNAVAILABLE,
                        "too many table administration requests waiting on this node; retry"));
            }
            future.whenComplete((json, failure) -> {
                try {
                    ctx.executor().execute(() -> {
                        if (!ctx.channel().isActive()) {
                            return;
                        }
                        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                                ? failure.getCause() : failure;
                        if (cause == null) {
                            send(ctx, keepAlive, ok, json);
                        } else {
                            fail(ctx, keepAlive, ThresherException.of(cause));
                        }
                    });
                } catch (RejectedExecutionException e) {
                    log.debug("event loop shut down; dropping the answer of {} {}", method, path);
                }
            });
        }

        private static com.fasterxml.jackson.databind.JsonNode json(String body) {
            try {
                com.fasterxml.jackson.databind.JsonNode n = JSON.readTree(body);
                if (n == null || !n.isObject()) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the body must be a JSON object");
                }
                return n;
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the body is not JSON: " + e.getOriginalMessage());
            }
        }

        private static String text(com.fasterxml.jackson.databind.JsonNode n, String field) {
            if (!n.hasNonNull(field) || !n.get(field).isTextual()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"" + field + "\" (a string) is missing");
            }
            return n.get(field).asText();
        }

        /**
         * A direct call with an {@code Idempotency-Key}: run once per (tenant, key) and journaled with a fingerprint of
         * the route and body; a repeat is answered the journaled response with {@code Idempotent-Replayed: true}.
         */
        private void idempotentCall(ChannelHandlerContext ctx, boolean keepAlive, String name, String body,
                                    Optional<Long> deadline, String key, io.netty.buffer.ByteBuf content) {
            if (idempotency == null) {
                fail(ctx, keepAlive, new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                        "this node does not journal Idempotency-Keys"));
                return;
            }
            byte[] fingerprint = fingerprint("POST /v1/bindings/" + name + "/call", content);
            long waitMs = deadline.filter(d -> d > 0).orElse(limits.callDeadlineMs());
            CompletableFuture<IdempotentRequests.Answer> answer;
            try {
                answer = idempotency.once(tenant, key, fingerprint, Math.min(waitMs, limits.maxCallDeadlineMs()),
                        run -> directCallOutcome(name, body, deadline, run));
            } catch (RuntimeException e) {
                answer = CompletableFuture.failedFuture(e);
            }
            answer.whenComplete((a, failure) -> {
                try {
                    ctx.executor().execute(() -> answered(ctx, keepAlive, a, failure));
                } catch (RejectedExecutionException e) {
                    log.debug("event loop shut down; dropping the answer of an idempotent call of {}", name);
                }
            });
        }

        /**
         * Runs the call, or answers from the call an earlier owner of the key recorded when that one succeeded (it
         * was published once; it is not run again). A success is kept with the key, a failure as {@link #keeps} says.
         */
        private CompletableFuture<IdempotentRequests.Outcome> directCallOutcome(String name, String body,
                                                                             Optional<Long> deadline,
                                                                             IdempotentRequests.Run run) {
            if (run.previousCall().isPresent() && outcomes != null) {
                Optional<dev.thresher.bindings.CallOutcome> earlier = outcomes.lookup(tenant, run.previousCall().get());
                if (earlier.isPresent() && "succeeded".equals(earlier.get().state())) {
                    return CompletableFuture.completedFuture(new IdempotentRequests.Outcome(new IdempotentRequests.Response(
                            200, success(earlier.get().callId().toString(), earlier.get().resultJson())), true));
                }
            }
            CompletableFuture<CallResult> call;
            try {
                call = calls.call(new CallRequest(tenant, caller, name, body, deadline).onRecorded(run.onRecorded()));
            } catch (RuntimeException e) {
                call = CompletableFuture.failedFuture(e);
            }
            if (call == null) {
                call = CompletableFuture.failedFuture(new ThresherException(ErrorCode.INTERNAL_ERROR,
                        "the call service returned no future"));
            }
            return call.handle((result, failure) -> {
                if (failure == null && result != null) {
                    return new IdempotentRequests.Outcome(new IdempotentRequests.Response(200,
                            success(result.callId(), result.resultJson())), true);
                }
                ThresherException e = failure == null ? new ThresherException(ErrorCode.INTERNAL_ERROR,
                        "the call service completed with no result") : ThresherException.of(failure);
                return new IdempotentRequests.Outcome(new IdempotentRequests.Response(HttpStatuses.statusOf(e.code()),
                        error(e)), keeps(e));
            });
        }

        /**
         * Whether a failed call's answer is kept under its key: only a terminal failure after guest code ran (the
         * same request fails the same way). A failure before any guest, a retryable or ambiguous one, or a deadline
         * releases the key: nothing was published, and the same key may run again.
         */
        static boolean keeps(ThresherException e) {
            return e.retryClass() == dev.thresher.errors.RetryClass.TERMINAL && e.guestCodeRan()
                    && e.code().category() != dev.thresher.errors.Category.DEADLINE;
        }

        private void answered(ChannelHandlerContext ctx, boolean keepAlive, IdempotentRequests.Answer a, Throwable failure) {
            if (!ctx.channel().isActive()) {
                log.debug("{} closed before its call completed; dropping the answer", ctx.channel());
                return;
            }
            if (failure != null || a == null) {
                fail(ctx, keepAlive, failure == null ? new ThresherException(ErrorCode.INTERNAL_ERROR,
                        "the idempotency journal completed with no answer") : ThresherException.of(failure));
                return;
            }
            FullHttpResponse res = response(HttpResponseStatus.valueOf(a.response().status()), a.response().body());
            if (a.replayed()) {
                res.headers().set(IDEMPOTENT_REPLAYED, "true");
            }
            write(ctx, keepAlive, res);
        }

        /** SHA-256 of the route and the body's bytes: what makes two requests with one key the same request. */
        static byte[] fingerprint(String route, io.netty.buffer.ByteBuf body) {
            try {
                java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-256");
                d.update(route.getBytes(StandardCharsets.UTF_8));
                d.update((byte) 0);
                d.update(body.nioBuffer());
                return d.digest();
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        private static String success(String callId, String resultJson) {
            return "{\"call_id\":\"" + callId + "\",\"result\":" + resultJson + "}";
        }

        private void callDone(ChannelHandlerContext ctx, boolean keepAlive, CallResult result, Throwable failure) {
            if (!ctx.channel().isActive()) {
                log.debug("{} closed before its call completed; dropping the result", ctx.channel());
                return;
            }
            if (failure == null && result == null) {
                failure = new ThresherException(ErrorCode.INTERNAL_ERROR, "the call service completed with no result");
            }
            if (failure == null) {
                send(ctx, keepAlive, HttpResponseStatus.OK, success(result.callId(), result.resultJson()));
            } else {
                fail(ctx, keepAlive, ThresherException.of(failure));
            }
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

        private void wrongMethod(ChannelHandlerContext ctx, boolean keepAlive, HttpMethod method, String path,
                                        HttpMethod allowed) {
            FullHttpResponse res = response(HttpResponseStatus.METHOD_NOT_ALLOWED, error(new ThresherException(
                    ErrorCode.UNSUPPORTED_STATEMENT, Quoted.of(path) + " serves " + allowed + ", not " + method)));
            res.headers().set(HttpHeaderNames.ALLOW, allowed.name());
            write(ctx, keepAlive, res);
        }

        private void fail(ChannelHandlerContext ctx, boolean keepAlive, ThresherException e) {
            send(ctx, keepAlive, HttpStatuses.of(e.code()), error(e));
        }

        /** 401 with the challenge a client needs to know what to send. */
        /**
         * What the request's user may do, by route: the admin routes need {@code admin} (the topology routes an admin of
         * the node's tenant), a call and a handler route {@code call} on their binding — checked before the binding is
         * looked up, so the answer is the same whether it exists.
         *
         * @throws ThresherException {@code PERMISSION_DENIED}
         */
        private void authorize(dev.thresher.bindings.access.Principal principal, String path, Matcher directCall) {
            if (principal == null) {
                return;
            }
            if (path.equals("/admin") || path.startsWith("/admin/")) {
                principal.checkAdmin("use the admin routes");
                if ((path.equals("/admin/topology") || path.startsWith("/admin/topology/") || path.startsWith("/admin/shards")
                        || path.startsWith("/admin/partitions") || path.startsWith("/admin/nodes")
                        || path.startsWith("/admin/leaders")) && !principal.tenant().equals(nodeTenant)) {
                    throw new ThresherException(ErrorCode.PERMISSION_DENIED, "permission denied: the topology is the"
                            + " cluster's; only admins of tenant '" + nodeTenant + "' change or read it here");
                }
            } else if (directCall.matches()) {
                principal.checkCall(directCall.group(1));
            } else if (HandlerRoutes.claims(path)) {
                HandlerRoutes.bindingOf(path).ifPresent(principal::checkCall);
            }
        }

        private void unauthorized(ChannelHandlerContext ctx, boolean keepAlive, ThresherException e) {
            FullHttpResponse res = response(HttpStatuses.of(e.code()), error(e));
            res.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"thresher\"");
            write(ctx, keepAlive, res);
        }

        private static String error(ThresherException e) {
            return ErrorJson.of(e);
        }

        private void send(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status, String json) {
            write(ctx, keepAlive, response(status, json));
        }

        private static FullHttpResponse response(HttpResponseStatus status, String json) {
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                    Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
            res.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
            HttpUtil.setContentLength(res, res.content().readableBytes());
            return res;
        }

        /**
         * Writes the answer to the request being answered; once written, the next one is. A client that
         * does not read its answer within {@code limits.httpRequestTimeoutMs} loses the connection.
         */
        private void write(ChannelHandlerContext ctx, boolean keepAlive, FullHttpResponse res) {
            if (!keepAlive) {
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
                if (!f.isSuccess() || closing) {
                    f.channel().close();
                    return;
                }
                busy = false;
                drain();
            });
        }
    }

    /**
     * Aggregates a request and its body up to the payload limit. A request over it is not answered here
     * with Netty's bare 413: it goes on to the handler as a request whose decoding failed with
     * {@link TooLongHttpContentException}, answered there in turn with a typed error. Nothing is answered here out of
     * turn either: {@code 100 Continue} only when no earlier request is owed its response (else none, and the client
     * sends its body when it stops waiting, as it may) and the request was decoded, and no bare {@code 417} for an
     * expectation other than {@code 100-continue}, which is ignored (the request is answered as any other).
     */
    private static final class Aggregator extends HttpObjectAggregator {
        private final java.util.function.BooleanSupplier owesResponses;

        Aggregator(int maxContentLength, java.util.function.BooleanSupplier owesResponses) {
            super(maxContentLength);
            this.owesResponses = owesResponses;
        }

        @Override
        protected Object newContinueResponse(HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
            if (start.decoderResult().isFailure() || !HttpUtil.is100ContinueExpected(start)
                    || owesResponses.getAsBoolean()) {
                return null; // an undecodable request (a Content-Length that is no number) is refused by the handler
            }
            if (HttpUtil.getContentLength(start, -1L) > maxContentLength) {
                return null; // refused by handleOversizedMessage, which the declared length leads to next
            }
            // Not Netty's own, which answers 417 when another expectation comes with this one.
            start.headers().remove(HttpHeaderNames.EXPECT);
            return new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER);
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
