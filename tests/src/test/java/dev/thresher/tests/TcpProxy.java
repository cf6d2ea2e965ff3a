package dev.thresher.tests;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy on loopback in front of one node's wire server: the node advertises the proxy's port
 * ({@code node.wireAdvertisedPort}), so every other node's traffic to it passes here, where a test can add latency
 * or blackhole it, per direction, at run time.
 *
 * <p>{@link Direction#TO_NODE} is what peers send the node (host run requests, stops), {@link Direction#FROM_NODE} its
 * replies. A delayed direction holds each chunk it read for the delay, in order, then writes it (latency, nothing
 * lost). A blackholed direction reads and discards (accepted connections stay open, new ones are accepted and their
 * bytes discarded too): what a peer sends is lost as in a network partition. A connection that lost bytes has a broken
 * stream; {@link #heal()} closes it, as TCP would give up on it, and the peers connect again.
 *
 * <p>Blocking sockets, two virtual threads per direction of each connection (a reader and a writer).
 */
final class TcpProxy implements AutoCloseable {
    enum Direction { TO_NODE, FROM_NODE }

    private final String name;
    private final ServerSocket server;
    private volatile int targetPort;
    private final AtomicLong[] delayMs = {new AtomicLong(), new AtomicLong()};
    private final AtomicBoolean[] blackhole = {new AtomicBoolean(), new AtomicBoolean()};
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong discardedBytes = new AtomicLong();
    private volatile boolean closed;

    TcpProxy(String name) throws IOException {
        this.name = name;
        this.server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        Thread.ofVirtual().name("proxy-" + name + "-accept").start(this::acceptLoop);
    }

    /** The port peers connect to: what the node advertises. */
    int port() {
        return server.getLocalPort();
    }

    /** The node's real wire port, where accepted connections are forwarded (set again when the node restarts). */
    void target(int port) {
        this.targetPort = port;
    }

    void delay(Direction d, long ms) {
        delayMs[d.ordinal()].set(ms);
    }

    void blackhole(Direction d, boolean on) {
        blackhole[d.ordinal()].set(on);
    }

    long accepted() {
        return accepted.get();
    }

    long discardedBytes() {
        return discardedBytes.get();
    }

    /** Forward everything at once again; connections that lost bytes while blackholed are closed. */
    void heal() {
        for (Direction d : Direction.values()) {
            delay(d, 0);
            blackhole(d, false);
        }
        for (Link l : links) {
            if (l.damaged.get()) {
                l.close();
            }
        }
    }

    /** Closes every proxied connection (the listener stays). */
    void dropAll() {
        links.forEach(Link::close);
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                continue;
            }
            accepted.incrementAndGet();
            Thread.ofVirtual().name("proxy-" + name + "-open").start(() -> open(client));
        }
    }

    private void open(Socket client) {
        Socket upstream = new Socket();
        try {
            client.setTcpNoDelay(true);
            upstream.setTcpNoDelay(true);
            upstream.connect(new InetSocketAddress("127.0.0.1", targetPort), 2_000);
        } catch (IOException e) {
            closeQuietly(client);
            closeQuietly(upstream);
            return;
        }
        Link link = new Link(client, upstream);
        links.add(link);
        if (closed) {
            link.close();
            return;
        }
        link.pump(Direction.TO_NODE, client, upstream);
        link.pump(Direction.FROM_NODE, upstream, client);
    }

    private record Chunk(byte[] bytes, long dueNanos) {
        static final Chunk EOF = new Chunk(null, 0);
    }

    /** One proxied connection: a client socket and its upstream socket to the node. */
    private final class Link {
        final Socket client;
        final Socket upstream;
        final AtomicBoolean damaged = new AtomicBoolean();
        final AtomicBoolean done = new AtomicBoolean();

        Link(Socket client, Socket upstream) {
            this.client = client;
            this.upstream = upstream;
        }

        void pump(Direction d, Socket from, Socket to) {
            LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
            Thread.ofVirtual().name("proxy-" + name + "-" + d + "-read").start(() -> {
                byte[] buffer = new byte[64 * 1024];
                try (InputStream in = from.getInputStream()) {
                    int n;
                    while ((n = in.read(buffer)) >= 0) {
                        if (blackhole[d.ordinal()].get()) {
                            damaged.set(true);
                            discardedBytes.addAndGet(n);
                            continue;
                        }
                        long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMs[d.ordinal()].get());
                        queue.add(new Chunk(Arrays.copyOf(buffer, n), due));
                    }
                } catch (IOException e) {
                    // closed: the other side or a heal
                }
                queue.add(Chunk.EOF);
            });
            Thread.ofVirtual().name("proxy-" + name + "-" + d + "-write").start(() -> {
                try {
                    OutputStream out = to.getOutputStream();
                    while (true) {
                        Chunk c = queue.take();
                        if (c == Chunk.EOF) {
                            break;
                        }
                        long wait = c.dueNanos() - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                        out.write(c.bytes());
                        out.flush();
                    }
                } catch (IOException | InterruptedException e) {
                    // closed
                }
                close();
            });
        }

        void close() {
            if (done.compareAndSet(false, true)) {
                closeQuietly(client);
                closeQuietly(upstream);
                links.remove(this);
            }
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        dropAll();
    }

    @Override
    public String toString() {
        return "proxy " + name + " :" + port() + " -> :" + targetPort;
    }

    /** A port free on loopback at the moment of asking (for a node's real wire port behind its proxy). */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        }
    }
}
