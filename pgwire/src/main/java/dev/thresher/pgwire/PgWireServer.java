package dev.thresher.pgwire;

import dev.thresher.bindings.TableService;
import dev.thresher.bindings.CallOutcomes;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.JournalService;
import dev.thresher.bindings.access.AccessService;
import dev.thresher.bindings.access.StaticAccess;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.AttributeKey;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL wire protocol front door: listens on {@link PgWireConfig#host()}:{@link PgWireConfig#port()}
 * and serves {@code CALL BINDING} to psql, pgjdbc and node-postgres through a {@link CallService}.
 * One acceptor thread and a small pool of I/O threads; calls never run on them (see the module README).
 *
 * <p>Bounds: the acceptor counts every socket it accepts against {@code limits.pgwireMaxConnections}; one past it is
 * answered FATAL {@code 53300} at once, before the client says anything, and closed (its output at once, the socket
 * once the client closes or after {@value #REFUSAL_LINGER_MS} ms, at most {@value #REFUSALS_LINGERING_MAX} of them
 * waiting so at once), so a flood of connections costs an accept and a write each and holds at most the cap plus
 * {@value #REFUSALS_LINGERING_MAX} descriptors whatever its rate, while the sessions inside the cap go on. Sessions
 * are also counted per user name once authenticated ({@code limits.pgwireConnectionsPerUser}).
 */
public final class PgWireServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PgWireServer.class);

    static final String STARTUP_DECODER = "pgwire-startup";
    static final String ENCODER = "pgwire-encoder";
    static final String HANDLER = "pgwire-connection";

    private final EventLoopGroup acceptor;
    private final EventLoopGroup io;
    private final Channel channel;
    private final ChannelGroup connections;
    private final int port;
    private boolean closed;

    private final LongAdder readPauses;

    private final Writes writes;
    private final ExecutorService lookupExecutor;
    private final PgConnections counts;

    /** Marks an accepted socket past {@code limits.pgwireMaxConnections}: it gets the refusal pipeline. */
    private static final AttributeKey<Boolean> REFUSED = AttributeKey.valueOf("pgwire-refused");
    /** How long a refused socket stays open at most for its client to read the refusal and close first. */
    static final long REFUSAL_LINGER_MS = 1_000;
    /**
     * Refused sockets that may wait for their client at once; one more refused meanwhile is closed as soon as its
     * refusal is written. A flood then holds at most the node's cap plus these descriptors, whatever its rate.
     */
    static final int REFUSALS_LINGERING_MAX = 64;

    private PgWireServer(EventLoopGroup acceptor, EventLoopGroup io, Channel channel, ChannelGroup connections,
                         LongAdder readPauses, Writes writes, ExecutorService lookupExecutor, PgConnections counts) {
        this.counts = counts;
        this.readPauses = readPauses;
        this.writes = writes;
        this.lookupExecutor = lookupExecutor;
        this.acceptor = acceptor;
        this.io = io;
        this.channel = channel;
        this.connections = connections;
        this.port = ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /**
     * Binds and returns once the server is listening.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when the address cannot be bound
     */
    public static PgWireServer start(PgWireConfig config, CallService calls) throws InterruptedException {
        return start(config, calls, null, null);
    }

    /**
     * Binds and returns once the server is listening; {@code COPY ... FROM STDIN} and {@code INSERT} write
     * through {@code tables} and binding statements through {@code bindings} (null: refused as unsupported), at most {@value #WRITERS_MAX} at once.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when the address cannot be bound
     */
    public static PgWireServer start(PgWireConfig config, CallService calls, TableService tables,
                                     dev.thresher.bindings.BindingService bindings) throws InterruptedException {
        return start(config, calls, tables, bindings, null);
    }

    /**
     * As {@link #start(PgWireConfig, CallService, TableService, dev.thresher.bindings.BindingService)}, and
     * {@code SHOW CALL 'id'} looks calls up through {@code outcomes} (null: refused as unsupported), on
     * {@value #LOOKUPS_MAX} threads with at most {@value #LOOKUPS_QUEUED} lookups waiting.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when the address cannot be bound
     */
    public static PgWireServer start(PgWireConfig config, CallService calls, TableService tables,
                                     dev.thresher.bindings.BindingService bindings, CallOutcomes outcomes)
            throws InterruptedException {
        return start(config, calls, tables, bindings, outcomes, null);
    }

    /**
     * As {@link #start(PgWireConfig, CallService, TableService, dev.thresher.bindings.BindingService, CallOutcomes)},
     * and queries of the journal views ({@code SELECT ... FROM thresher.invocations}, {@code SHOW CALLS}) are answered
     * by {@code journal} (null: refused as unsupported), on the threads of {@code SHOW CALL}.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when the address cannot be bound
     */
    public static PgWireServer start(PgWireConfig config, CallService calls, TableService tables,
                                     dev.thresher.bindings.BindingService bindings, CallOutcomes outcomes,
                                     JournalService journal) throws InterruptedException {
        return start(config, calls, tables, bindings, outcomes, journal, null);
    }

    /**
     * As {@link #start(PgWireConfig, CallService, TableService, dev.thresher.bindings.BindingService, CallOutcomes,
     * JournalService)}, with users, tenants and grants from {@code access} (null: the one user of {@code config},
     * admin of its tenant — {@link #staticAccess}).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when the address cannot be bound
     */
    public static PgWireServer start(PgWireConfig config, CallService calls, TableService tables,
                                     dev.thresher.bindings.BindingService bindings, CallOutcomes outcomes,
                                     JournalService journal, AccessService access) throws InterruptedException {
        Objects.requireNonNull(config, "config");
        AccessService users = access != null ? access : staticAccess(config);
        AuthThrottle throttle = new AuthThrottle();
        Objects.requireNonNull(calls, "calls");
        Writes writes = tables == null ? null : new Writes(tables, bindings, new ThreadPoolExecutor(0, WRITERS_MAX, 60, TimeUnit.SECONDS,
                new SynchronousQueue<>(), new DefaultThreadFactory("pgwire-writer", true)));
        ThreadPoolExecutor lookupExecutor = null;
        Lookups lookups = null;
        if (outcomes != null || journal != null) {
            lookupExecutor = new ThreadPoolExecutor(LOOKUPS_MAX, LOOKUPS_MAX, 60, TimeUnit.SECONDS,
                    new ArrayBlockingQueue<>(LOOKUPS_QUEUED), new DefaultThreadFactory("pgwire-lookup", true));
            lookupExecutor.allowCoreThreadTimeOut(true);
            lookups = new Lookups(outcomes, journal, lookupExecutor);
        }
        Lookups served = lookups;
        EventLoopGroup acceptor = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("pgwire-accept"),
                NioIoHandler.newFactory());
        EventLoopGroup io = new MultiThreadIoEventLoopGroup(0, new DefaultThreadFactory("pgwire-io"),
                NioIoHandler.newFactory());
        ChannelGroup connections = new DefaultChannelGroup("pgwire-connections", GlobalEventExecutor.INSTANCE);
        LongAdder readPauses = new LongAdder();
        PgConnections counts = new PgConnections(config.limits());
        ChannelFuture bound = new ServerBootstrap()
                .group(acceptor, io)
                .channel(NioServerSocketChannel.class)
                .handler(new Admission(counts))
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        if (Boolean.TRUE.equals(ch.attr(REFUSED).get())) {
                            ch.pipeline().addLast(ENCODER, BackendMessageEncoder.INSTANCE);
                            ch.pipeline().addLast(HANDLER, new Refusal(counts));
                            return;
                        }
                        ch.closeFuture().addListener(f -> counts.socketClosed());
                        connections.add(ch); // the group forgets a channel when it closes
                        configure(ch.pipeline(), config, calls, readPauses, writes, served, users, throttle, counts);
                    }
                })
                .bind(config.host(), config.port())
                .await();
        if (!bound.isSuccess()) {
            if (writes != null) {
                writes.executor().shutdownNow();
            }
            if (lookupExecutor != null) {
                lookupExecutor.shutdownNow();
            }
            acceptor.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            io.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION,
                    "pgwire cannot listen on " + config.host() + ":" + config.port() + ": " + bound.cause(), bound.cause());
        }
        PgWireServer server = new PgWireServer(acceptor, io, bound.channel(), connections, readPauses, writes,
                lookupExecutor, counts);
        if (config.authMode() != AuthMode.SCRAM && config.tlsMode() != TlsMode.REQUIRED && !isLoopback(config.host())) {
            log.warn("pgwire on {} authenticates with {} on a non-loopback address without requiring TLS (tls {});"
                    + " use it on loopback only, or require TLS", config.host(), config.authMode(), config.tlsMode());
        }
        log.info("pgwire listening on {}:{} (auth {}, tls {}, tenant {})", config.host(), server.port, config.authMode(),
                config.tlsMode(), config.tenant());
        return server;
    }

    /**
     * Write back-pressure: a connection whose unsent output passes the high mark becomes unwritable and
     * stops reading until the output falls under the low mark.
     */
    static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(256 * 1024, 1024 * 1024);

    /**
     * The pipeline of a new connection; after the startup message the startup decoder replaces itself. With TLS, a
     * detector of direct TLS connections comes first ({@link PgTls}), and the TLS handler takes the head of the
     * pipeline once a connection starts TLS.
     */
    static void configure(ChannelPipeline pipeline, PgWireConfig config, CallService calls) {
        configure(pipeline, config, calls, new LongAdder(), null, null, new PgConnections(config.limits()));
    }

    static void configure(ChannelPipeline pipeline, PgWireConfig config, CallService calls, Lookups lookups) {
        configure(pipeline, config, calls, new LongAdder(), null, lookups, new PgConnections(config.limits()));
    }

    static void configure(ChannelPipeline pipeline, PgWireConfig config, CallService calls, LongAdder readPauses,
                          Writes writes, Lookups lookups, PgConnections counts) {
        configure(pipeline, config, calls, readPauses, writes, lookups, staticAccess(config), new AuthThrottle(), counts);
    }

    static void configure(ChannelPipeline pipeline, PgWireConfig config, CallService calls, LongAdder readPauses,
                          Writes writes, Lookups lookups, AccessService access, AuthThrottle throttle,
                          PgConnections counts) {
        pipeline.channel().config().setWriteBufferWaterMark(WATER_MARK);
        if (config.tls() != null) {
            pipeline.addLast(PgTls.DIRECT_DETECTOR, config.tls().directTlsDetector());
        }
        pipeline.addLast(STARTUP_DECODER, new StartupDecoder(config.limits(), config.tls() != null));
        pipeline.addLast(ENCODER, BackendMessageEncoder.INSTANCE);
        pipeline.addLast(HANDLER, new PgConnectionHandler(config, calls, readPauses, writes, lookups, access, throttle, counts));
    }

    /**
     * Access without a control database: in trust mode every user name, else the configuration's one user with its
     * password; either is admin of the configuration's tenant.
     */
    static AccessService staticAccess(PgWireConfig config) {
        if (config.authMode() == AuthMode.TRUST || config.password() == null || config.password().isEmpty()) {
            return StaticAccess.anyUser(config.tenant());
        }
        return StaticAccess.of(config.user(), config.password(), config.tenant());
    }

    /**
     * On the listening channel, on the acceptor thread: counts each accepted socket, in the order they were accepted,
     * against {@code limits.pgwireMaxConnections}, and marks the ones past it for {@link Refusal}.
     */
    private static final class Admission extends ChannelInboundHandlerAdapter {
        private final PgConnections counts;

        Admission(PgConnections counts) {
            this.counts = counts;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Channel child && !counts.admitSocket()) {
                child.attr(REFUSED).set(true);
            }
            ctx.fireChannelRead(msg);
        }
    }

    /**
     * A socket past {@code limits.pgwireMaxConnections}: answered FATAL {@code 53300} (PostgreSQL's "sorry, too many
     * clients already") as soon as it is active, before reading anything, then its output is closed. What the client
     * sends meanwhile is dropped; the socket closes when the client closes its end (having read the answer: closing
     * with its startup unread would reset the connection and could lose the answer), or after
     * {@value #REFUSAL_LINGER_MS} ms. At most {@value #REFUSALS_LINGERING_MAX} wait so; past them a refused socket is
     * closed as soon as its answer is written (its client may then see a reset instead of the answer).
     */
    static final class Refusal extends ChannelInboundHandlerAdapter {
        private final PgConnections counts;
        private boolean lingering;

        Refusal(PgConnections counts) {
            this.counts = counts;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            log.debug("{} refused: limits.pgwireMaxConnections ({}) connections are open", ctx.channel(),
                    counts.maxConnections());
            PgError error = PgError.fatal(ErrorCode.TOO_MANY_CONNECTIONS, "sorry, too many clients already"
                    + " (limits.pgwireMaxConnections is " + counts.maxConnections() + ")");
            lingering = counts.lingerRefusal();
            ctx.writeAndFlush(new BackendMessage.ErrorResponse(error)).addListener(f -> {
                if (!lingering) {
                    ctx.close(); // REFUSALS_LINGERING_MAX wait already: this one's descriptor goes at once
                } else if (ctx.channel() instanceof SocketChannel socket && socket.isActive()) {
                    socket.shutdownOutput();
                }
            });
            if (lingering) {
                ctx.executor().schedule(() -> {
                    ctx.close();
                }, REFUSAL_LINGER_MS, TimeUnit.MILLISECONDS);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (lingering) {
                lingering = false;
                counts.refusalClosed();
            }
            ctx.fireChannelInactive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** {@code SHOW CALL} lookups and journal queries running at once on one server, ... */
    static final int LOOKUPS_MAX = 2;
    /** ... and waiting for a thread; one more is refused, retryably. */
    static final int LOOKUPS_QUEUED = 64;

    /**
     * Where {@code SHOW CALL} looks calls up and journal queries are answered (either may be null: not served), and
     * the threads their blocking work runs on.
     */
    record Lookups(CallOutcomes outcomes, JournalService journal, Executor executor) {
        Lookups(CallOutcomes outcomes, Executor executor) {
            this(outcomes, null, executor);
        }
    }

    /** Loads and inserts running at once on one server; one more is refused, retryably. */
    static final int WRITERS_MAX = 4;

    /** The table writer and the threads its blocking work runs on. */
    record Writes(TableService tables, dev.thresher.bindings.BindingService bindings, ExecutorService executor) {
    }

    /**
     * How many times a connection stopped reading because its client was not reading what it was sent
     * (its output passed the high water mark); once paused, a connection takes no statement until the
     * client has read enough.
     */
    public long readPauses() {
        return readPauses.sum();
    }

    /** Sockets open now, authenticated or not, counted against {@code limits.pgwireMaxConnections}. */
    public int openConnections() {
        return counts.open();
    }

    /** Sockets of a client address open now and not yet authenticated. */
    int awaitingAuthentication(String address) {
        return counts.awaiting(address);
    }

    /** Refused sockets open now, waiting for their client to read the refusal and close. */
    int refusalsLingering() {
        return counts.refusalsLingering();
    }

    /** Sockets refused (FATAL {@code 53300}) because {@code limits.pgwireMaxConnections} were open. */
    public long connectionsRefusedForNode() {
        return counts.refusedForNode();
    }

    /** Sessions refused (FATAL {@code 53300}) because their user held {@code limits.pgwireConnectionsPerUser}. */
    public long connectionsRefusedForUser() {
        return counts.refusedForUser();
    }

    /** The port the server listens on (the ephemeral one when the configured port was 0). */
    public int port() {
        return port;
    }

    /** Stops accepting connections; the open ones go on being served. */
    public synchronized void stopAccepting() {
        if (!closed) {
            channel.close().awaitUninterruptibly();
        }
    }

    /**
     * Closes the listening channel, every connection and the event loops. Calls in flight are not
     * cancelled. Each connection is closed by a task on its own event loop, so whatever was already
     * handed to that loop (an answer just completed) is written first.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        channel.close().syncUninterruptibly();
        for (Channel c : connections) {
            c.eventLoop().execute(c::close);
        }
        for (Channel c : connections) {
            c.closeFuture().awaitUninterruptibly(2, TimeUnit.SECONDS);
        }
        io.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        if (writes != null) {
            writes.executor().shutdown();
        }
        if (lookupExecutor != null) {
            lookupExecutor.shutdown();
        }
        acceptor.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        log.info("pgwire on port {} closed", port);
    }

    private static boolean isLoopback(String host) {
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
