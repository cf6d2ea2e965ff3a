package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import io.netty.util.concurrent.EventExecutor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A pgwire session's idle timeout ({@code limits.pgwireIdleSessionTimeoutMs}, PostgreSQL's idle_session_timeout):
 * from authentication on, the session is closed with FATAL {@code 57P05} once it has waited for its client that long
 * with nothing of its own running: no call, write or lookup in flight and not in COPY (which
 * {@link PgCopyIn#IDLE_TIMEOUT_MS} bounds). Inside a transaction block too: Thresher's blocks hold nothing. The check
 * runs once per timeout at most, re-armed for the time left. Touched on the connection's event loop only.
 */
final class PgIdleTimeout {
    /** What the timeout reads and ends of its connection. */
    interface Connection {
        /** Whether the session serves queries (authenticated, not closed). */
        boolean ready();

        /** Whether the session runs something of its own: a call, write or lookup in flight, or COPY. */
        boolean busy();

        /** Whether the client reads what it is sent (the channel is writable). */
        boolean clientReading();

        /** Closes a session whose client stopped reading its answers: it could not read the FATAL either. */
        void closeUnread();

        void fatal(PgError error);
    }

    private final long timeoutMs;
    private final Connection connection;
    private EventExecutor executor;
    private ScheduledFuture<?> timer;
    /** Since when (System.nanoTime) the session has waited for its client: the last message, answer or write progress. */
    private long idleSinceNanos;

    PgIdleTimeout(long timeoutMs, Connection connection) {
        this.timeoutMs = timeoutMs;
        this.connection = connection;
    }

    /** The session waits for its client from now. */
    void waiting() {
        idleSinceNanos = System.nanoTime();
    }

    /** Starts counting, on the connection's event loop, once the session is authenticated. */
    void start(EventExecutor loop) {
        executor = loop;
        arm(TimeUnit.MILLISECONDS.toNanos(timeoutMs));
    }

    /** Stops counting: the connection closed. */
    void stop() {
        if (timer != null) {
            timer.cancel(false);
        }
    }

    private void arm(long delayNanos) {
        timer = executor.schedule(this::check, delayNanos, TimeUnit.NANOSECONDS);
    }

    private void check() {
        if (!connection.ready()) {
            return;
        }
        long timeout = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        long now = System.nanoTime();
        if (connection.busy()) {
            idleSinceNanos = now; // busy: idle at the earliest from here
            arm(timeout);
            return;
        }
        long idle = now - idleSinceNanos;
        if (idle < timeout) {
            arm(timeout - idle);
            return;
        }
        if (!connection.clientReading()) {
            // a client that stopped reading its answers cannot read the FATAL either; its write would never end
            connection.closeUnread();
            return;
        }
        connection.fatal(PgError.fatal(ErrorCode.IDLE_SESSION_TIMEOUT, "terminating connection due to idle-session"
                + " timeout (limits.pgwireIdleSessionTimeoutMs is " + timeoutMs + ")"));
    }
}
