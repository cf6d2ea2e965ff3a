package dev.thresher.http;

import dev.thresher.bindings.BindingService;
import dev.thresher.bindings.CallOutcomes;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.IdempotentRequests;
import dev.thresher.bindings.TableService;
import dev.thresher.limits.Limits;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpContentException;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP front door of a node: a pipeline per connection (TLS when asked, Netty's HTTP/1.1 codec, the
 * {@link Aggregator}, one {@link HttpConnection}), and one {@link RouteTable} of the routes, registered in
 * {@link Builder#routes}, each family a class of its own:
 *
 * <pre>
 * /livez, /readyz                      {@link HealthRoutes}
 * /metrics                             {@link MetricsRoute}, once a scrape is served
 * /, /ui, /ui/...                      {@link UiAssets}: the page for people
 * /admin/topology..., /admin/partitions/..., /admin/nodes/..., /admin/shards...   {@link TopologyRoutes}
 * /admin/tables...                     {@link TableRoutes}
 * /admin/bindings...                   {@link BindingRoutes}: deploys, history, rollback
 * /admin/invocations...                {@link JournalRoutes}
 * /v1/http/{binding}/...               {@link HandlerRoutes}, once handlers are served
 * POST /v1/bindings/{name}/call        {@link CallRoutes}
 * </pre>
 *
 * A request is authenticated and authorized first ({@link HttpAccess}: 401, 403), then routed: a path no route has is
 * 404, a method the path does not have 405 with {@code Allow} naming the methods it has; failures are the error JSON
 * of {@link ErrorJson} with the status of {@link HttpStatuses} ({@link Responses}).
 *
 * <p>Requests are decoded on the event loop; calls complete on the coordinator's executor, admin work on the front's
 * admin threads, and the response is written when that completes ({@link Exchange#finish}), so nothing blocks the
 * loop. One request per connection is answered at a time, so pipelined requests are answered in order; a request must
 * arrive within {@code limits.httpRequestTimeoutMs}; a node holds at most {@code limits.httpMaxConnections}
 * connections: one more is answered 503 {@code TOO_MANY_CONNECTIONS} as soon as it is accepted, before its request is
 * read, and closed. Binding names are at most {@value CallRoutes#MAX_NAME_BYTES} bytes; what an error echoes of a path
 * or name goes through {@link dev.thresher.errors.Quoted}. See docs/operations.md, HTTP.
 */
public final class HttpFront implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HttpFront.class);

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
        private dev.thresher.bindings.access.UserService users;
        private HttpAccess access = HttpAccess.UNAUTHENTICATED;
        private IdempotentRequests idempotency;
        private CallOutcomes outcomes;
        private dev.thresher.bindings.JournalService journal;
        private SslContext tls;
        /** Where the admin routes' blocking work runs; null: {@value #ADMIN_THREADS} threads of the front's own. */
        private Executor adminExecutor;

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

        /** Serves {@code /admin/users} and {@code /admin/grants} (with {@link #tables}). */
        public Builder users(dev.thresher.bindings.access.UserService users) {
            this.users = users;
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

        /** Runs the admin routes' blocking work on {@code executor} instead of threads of the front's own (tests). */
        Builder adminExecutor(Executor executor) {
            this.adminExecutor = executor;
            return this;
        }

        /** Binds and serves. */
        public HttpFront start() throws InterruptedException {
            java.util.Objects.requireNonNull(host, "host");
            check();
            return HttpFront.start(this);
        }

        private void check() {
            java.util.Objects.requireNonNull(tenant, "tenant");
            java.util.Objects.requireNonNull(limits, "limits");
            java.util.Objects.requireNonNull(calls, "calls");
            java.util.Objects.requireNonNull(readiness, "readiness");
            java.util.Objects.requireNonNull(access, "access");
            if (tls != null && tls.isClient()) {
                throw new IllegalArgumentException("HTTPS needs a server SslContext");
            }
        }

        /**
         * One connection's handler, as a front would make it but without one (no socket, no TLS): for tests of the
         * pipeline. {@code metrics} is served when given a scrape; {@code handlers}, when not null, routes
         * {@code /v1/http/}; the admin routes run on {@link #adminExecutor} (or are not served without it).
         */
        HttpConnection connection(AtomicInteger open, MetricsRoute metrics, HandlerRoutes handlers) {
            check();
            return new HttpConnection(tenant, limits, open, access, routes(metrics, handlers,
                    adminExecutor == null ? null : new AdminWork(adminExecutor)));
        }

        /** As above, without handler routes and with metrics not served. */
        HttpConnection connection(AtomicInteger open) {
            return connection(open, new MetricsRoute(), null);
        }

        /**
         * Every route of the front door, registered here and nowhere else; {@code admin} is null when no admin route
         * is served (no {@link #tables}).
         */
        RouteTable<Exchange.Route> routes(MetricsRoute metrics, HandlerRoutes handlers, AdminWork admin) {
            RouteTable<Exchange.Route> routes = new RouteTable<>();
            HealthRoutes.register(routes, readiness);
            metrics.register(routes);
            UiAssets.register(routes);
            AdminWork served = tables == null ? null : admin;
            TopologyRoutes.register(routes, topology, topologyChanges, served);
            TableRoutes.register(routes, tables, served);
            BindingRoutes.register(routes, bindings, served);
            JournalRoutes.register(routes, journal, served, tenant);
            UserRoutes.register(routes, users, served, tenant);
            if (handlers != null) {
                handlers.register(routes);
            }
            CallRoutes.register(routes, limits, calls, idempotency, outcomes);
            return routes;
        }
    }

    /**
     * Binds and serves: every connection gets a handler of its own ({@link HttpConnection}) answering through one
     * table of routes.
     */
    private static HttpFront start(Builder b) throws InterruptedException {
        java.util.concurrent.ExecutorService adminThreads = b.tables == null || b.adminExecutor != null ? null
                : new java.util.concurrent.ThreadPoolExecutor(0, ADMIN_THREADS, 60, TimeUnit.SECONDS,
                new java.util.concurrent.ArrayBlockingQueue<>(64),
                new io.netty.util.concurrent.DefaultThreadFactory("http-admin", true));
        Executor adminExecutor = b.adminExecutor != null ? b.adminExecutor : adminThreads;
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        AtomicInteger open = new AtomicInteger();
        MetricsRoute metrics = new MetricsRoute();
        ChannelGroup connections = new DefaultChannelGroup("http-connections", GlobalEventExecutor.INSTANCE);
        HandlerRoutes handlerRoutes = new HandlerRoutes(b.limits, b.idempotency);
        RouteTable<Exchange.Route> routes = b.routes(metrics, handlerRoutes,
                adminExecutor == null ? null : new AdminWork(adminExecutor));
        SslContext tls = b.tls;
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
                            configure(c.pipeline(), b.limits, new HttpConnection(b.tenant, b.limits, open, b.access,
                                    routes));
                        }
                    })
                    .bind(b.host, b.port).sync().channel();
            log.info("http listening on {}:{} ({})", b.host, ((InetSocketAddress) ch.localAddress()).getPort(),
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

    /**
     * The pipeline of a new connection: HTTP/1.1 decoding and encoding, an upload's body as it arrives or any other
     * request with its body whole, then {@code handler}.
     */
    static void configure(ChannelPipeline pipeline, Limits limits, HttpConnection handler) {
        pipeline.addLast(new HttpServerCodec(), new UploadRequests(limits.httpRequestTimeoutMs(), handler::owesResponses),
                new Aggregator(limits.directCallPayloadBytes(), handler::owesResponses), handler);
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
