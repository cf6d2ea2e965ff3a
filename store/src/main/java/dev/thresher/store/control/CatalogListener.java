package dev.thresher.store.control;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The push half of a {@link ControlCache}: a thread holding a dedicated connection that listens on
 * {@value ControlCache#CHANNEL} and hands each notification to the cache. When the connection breaks it logs once,
 * reconnects with bounded backoff and, once listening again, tells the cache (notifications may have been lost
 * meanwhile). A quiet connection is checked now and then, so a silently dead one is replaced. Logs as the cache.
 */
final class CatalogListener {
    private static final Logger log = LoggerFactory.getLogger(ControlCache.class);

    /** One wait for notifications; bounds how long the listener takes to notice the cache's close. */
    private static final int LISTEN_WAIT_MS = 250;
    /** A quiet listen connection is checked this often, so a silently dead one is replaced. */
    private static final long LISTEN_CHECK_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final int LISTEN_CHECK_TIMEOUT_S = 5;
    private static final long BACKOFF_MIN_MS = 50;
    private static final long BACKOFF_MAX_MS = 5_000;

    /** What the cache makes of one notification: whether it says the topology changed. */
    interface Notified {
        boolean handle(String payload);
    }

    private final Callable<Connection> listenConnections;
    private final String nodeName;
    private final long pollNanos;
    private final Notified notified;
    private final Runnable onListeningAgain;
    private final Runnable onTopologyChanged;
    private final BooleanSupplier closed;
    private final LongAdder reconnects = new LongAdder();
    private volatile Connection listening; // owned by the listener thread once it runs
    private Thread thread;

    CatalogListener(Callable<Connection> listenConnections, String nodeName, long pollNanos, Notified notified,
                    Runnable onListeningAgain, Runnable onTopologyChanged, BooleanSupplier closed) {
        this.listenConnections = listenConnections;
        this.nodeName = nodeName;
        this.pollNanos = pollNanos;
        this.notified = notified;
        this.onListeningAgain = onListeningAgain;
        this.onTopologyChanged = onTopologyChanged;
        this.closed = closed;
    }

    /** Opens the listen connection, once at start; false when it cannot yet (the listener thread retries). */
    boolean open() {
        try {
            listening = openListening();
            return true;
        } catch (Exception e) {
            log.warn("{}: cannot listen on {} yet ({}); retrying, the {} ms poll keeps the cache current meanwhile",
                    nodeName, ControlCache.CHANNEL, e.toString(), TimeUnit.NANOSECONDS.toMillis(pollNanos));
            return false;
        }
    }

    /** Starts the listener thread; {@code broken} when {@link #open} failed. */
    void start(boolean broken) {
        thread = Thread.ofPlatform().daemon().name("control-cache-listen-" + nodeName).start(() -> listenLoop(broken));
    }

    /** The listener thread; null before {@link #start}. */
    Thread thread() {
        return thread;
    }

    /** Closes the listen connection if the listener thread did not (it did not stop in time). */
    void closeConnection() {
        Connection c = listening;
        if (c != null) {
            closeQuietly(c);
        }
    }

    /** Times the listen connection was established again after it broke (or could not be opened at start). */
    long reconnects() {
        return reconnects.sum();
    }

    private Connection openListening() throws Exception {
        Connection c = listenConnections.call();
        try {
            c.setAutoCommit(true);
            try (Statement s = c.createStatement()) {
                s.execute("LISTEN " + ControlCache.CHANNEL);
            }
            c.unwrap(PGConnection.class); // fail here, not later, on a connection that cannot listen
            return c;
        } catch (Exception e) {
            closeQuietly(c);
            throw e;
        }
    }

    private void listenLoop(boolean broken) {
        long backoffMs = BACKOFF_MIN_MS;
        Connection c = listening;
        long lastHeard = System.nanoTime();
        while (!closed.getAsBoolean()) {
            if (c == null) {
                try {
                    c = openListening();
                    listening = c;
                    lastHeard = System.nanoTime();
                    backoffMs = BACKOFF_MIN_MS;
                    reconnects.increment();
                    // Listening again: whatever changed while we were not is no longer announced.
                    onListeningAgain.run();
                    if (broken) {
                        log.info("{}: listening on {} again; the cache was invalidated", nodeName, ControlCache.CHANNEL);
                    }
                    broken = false;
                } catch (Exception e) {
                    if (closed.getAsBoolean()) {
                        break;
                    }
                    if (!broken) {
                        log.warn("{}: cannot listen on {} ({}); retrying with backoff, the poll covers the gap",
                                nodeName, ControlCache.CHANNEL, e.toString());
                        broken = true;
                    }
                    backoffMs = pause(backoffMs);
                    continue;
                }
            }
            try {
                PGNotification[] got = c.unwrap(PGConnection.class).getNotifications(LISTEN_WAIT_MS);
                if (got != null && got.length > 0) {
                    lastHeard = System.nanoTime();
                    boolean topologyChanged = false;
                    for (PGNotification n : got) {
                        topologyChanged |= notified.handle(n.getParameter());
                    }
                    if (topologyChanged) {
                        onTopologyChanged.run();
                    }
                } else if (System.nanoTime() - lastHeard > LISTEN_CHECK_NANOS) {
                    lastHeard = System.nanoTime();
                    if (!c.isValid(LISTEN_CHECK_TIMEOUT_S)) {
                        throw new SQLException("the listen connection stopped answering");
                    }
                }
            } catch (SQLException | RuntimeException e) {
                if (closed.getAsBoolean()) {
                    break;
                }
                if (!broken) {
                    log.warn("{}: the connection listening on {} broke ({}); reconnecting, the poll covers the gap",
                            nodeName, ControlCache.CHANNEL, e.toString());
                    broken = true;
                }
                closeQuietly(c);
                c = null;
                listening = null;
                backoffMs = pause(backoffMs);
            }
        }
        closeQuietly(c);
        listening = null;
    }

    /** Sleeps for the backoff (less when closing); returns the next, doubled up to its bound. */
    private long pause(long backoffMs) {
        try {
            Thread.sleep(backoffMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return Math.min(BACKOFF_MAX_MS, backoffMs * 2);
    }

    private static void closeQuietly(Connection c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (SQLException | RuntimeException e) {
            // nothing to do: the connection is being dropped
        }
    }
}
