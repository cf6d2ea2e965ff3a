package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.limits.Limits;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepts wire connections, answers host-run requests with a {@link HostRunHandler} and hands it
 * the stops of calls ({@link HostRunHandler#stop}, no answer).
 *
 * <p>Threads: one accept thread ({@code thresher-wire-accept-*}), an I/O event-loop group
 * ({@code thresher-wire-server-*}, one thread per core by Netty's default) that frames, decodes,
 * answers handshakes and encodes replies, and a virtual thread per request or stop
 * ({@code thresher-wire-dispatch-*}) that calls the handler. Nothing blocks an event loop. A stop
 * that arrives while the server is shutting down is dropped.
 */
public final class WireServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WireServer.class);

    private final EventLoopGroup acceptGroup;
    private final EventLoopGroup ioGroup;
    private final ExecutorService dispatch;
    private final ChannelGroup channels;
    private final Channel serverChannel;
    private final int port;
    private final AtomicBoolean closed = new AtomicBoolean();

    private WireServer(EventLoopGroup acceptGroup, EventLoopGroup ioGroup, ExecutorService dispatch,
            ChannelGroup channels, Channel serverChannel) {
        this.acceptGroup = acceptGroup;
        this.ioGroup = ioGroup;
        this.dispatch = dispatch;
        this.channels = channels;
        this.serverChannel = serverChannel;
        this.port = ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /**
     * Binds and starts serving.
     *
     * @param port the port to listen on, 0 for an ephemeral one (see {@link #port()})
     * @param nodeId this node's id, sent in the handshake
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when the address cannot be bound
     */
    public static WireServer start(String host, int port, String nodeId, Limits limits, HostRunHandler handler)
            throws InterruptedException {
        return start(host, port, nodeId, limits, handler, Failpoints.disabled());
    }

    /**
     * Binds and starts serving, with the node's failpoints: {@code wire.receive} is hit once per
     * slot of every request, in slot order, before its handler runs, with the slot's
     * {@link dev.thresher.failpoints.Site}; the first hit the failpoint selects decides for the whole
     * request (a drop closes the connection without an answer; a failure answers every slot with that
     * code and {@code guestStarted = false}, and the handler is not called).
     */
    public static WireServer start(String host, int port, String nodeId, Limits limits, HostRunHandler handler,
                                   Failpoints failpoints) throws InterruptedException {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(failpoints, "failpoints");
        Objects.requireNonNull(nodeId, "nodeId");
        Objects.requireNonNull(handler, "handler");
        int maxFrameBytes = limits.wireMaxFrameBytes();
        EventLoopGroup acceptGroup = new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory("thresher-wire-accept"), NioIoHandler.newFactory());
        EventLoopGroup ioGroup = new MultiThreadIoEventLoopGroup(
                0, new DefaultThreadFactory("thresher-wire-server"), NioIoHandler.newFactory());
        ExecutorService dispatch = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("thresher-wire-dispatch-", 0).factory());
        ChannelGroup channels = new DefaultChannelGroup("thresher-wire-server", GlobalEventExecutor.INSTANCE);
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(acceptGroup, ioGroup)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        channels.add(ch);
                        ServerConnection.configure(ch.pipeline(), nodeId, maxFrameBytes, handler, dispatch, failpoints);
                    }
                });
        ChannelFuture bound = bootstrap.bind(host, port).await();
        if (!bound.isSuccess()) {
            shutdown(acceptGroup, ioGroup, dispatch);
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION,
                    "wire server cannot listen on " + host + ":" + port + ": " + bound.cause(), bound.cause());
        }
        channels.add(bound.channel());
        WireServer server = new WireServer(acceptGroup, ioGroup, dispatch, channels, bound.channel());
        log.info("wire server {} listening on {}:{} (protocol versions {}..{}, frames up to {} bytes)",
                nodeId, host, server.port, WireCodec.MIN_VERSION, WireCodec.MAX_VERSION, maxFrameBytes);
        return server;
    }

    /** The port the server listens on. */
    public int port() {
        return port;
    }

    /** Client connections open right now. */
    int openConnections() {
        return (int) channels.stream().filter(ch -> ch != serverChannel).count();
    }

    /**
     * Stops listening and closes every connection; clients see requests in flight end with
     * {@code TRANSPORT_OUTCOME_UNKNOWN}. Handler futures that complete later are dropped.
     * Must not be called from an event loop.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        serverChannel.close().syncUninterruptibly();
        channels.close().awaitUninterruptibly();
        shutdown(acceptGroup, ioGroup, dispatch);
        log.info("wire server on port {} closed", port);
    }

    private static void shutdown(EventLoopGroup acceptGroup, EventLoopGroup ioGroup, ExecutorService dispatch) {
        dispatch.shutdown();
        acceptGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        ioGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        acceptGroup.terminationFuture().awaitUninterruptibly();
        ioGroup.terminationFuture().awaitUninterruptibly();
    }
}
