package dev.thresher.pgwire;

import dev.thresher.limits.Limits;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The connections of one {@link PgWireServer}, counted against {@code limits.pgwireMaxConnections} (every accepted
 * socket, from its accept to its close) and {@code limits.pgwireConnectionsPerUser} (sessions by the startup's user
 * name, from their authentication to their close). Thread-safe: sockets are admitted on the acceptor thread, sessions
 * on the connections' event loops.
 */
final class PgConnections {
    private final int maxConnections;
    private final int perUser;
    private final AtomicInteger open = new AtomicInteger();
    private final ConcurrentHashMap<String, Integer> sessions = new ConcurrentHashMap<>();
    private final LongAdder refusedForNode = new LongAdder();
    private final LongAdder refusedForUser = new LongAdder();

    PgConnections(Limits limits) {
        this.maxConnections = limits.pgwireMaxConnections();
        this.perUser = limits.pgwireConnectionsPerUser();
    }

    int maxConnections() {
        return maxConnections;
    }

    int perUser() {
        return perUser;
    }

    /** Counts a socket just accepted, or refuses it (counted as refused) when the node holds its cap already. */
    boolean admitSocket() {
        if (open.incrementAndGet() <= maxConnections) {
            return true;
        }
        open.decrementAndGet();
        refusedForNode.increment();
        return false;
    }

    /**
     * Refused sockets left open for their client to read the refusal and close first, at most
     * {@link PgWireServer#REFUSALS_LINGERING_MAX}: a flood's descriptors are bounded by the caps, not the connect rate.
     */
    private final java.util.concurrent.atomic.AtomicInteger refusalsLingering = new java.util.concurrent.atomic.AtomicInteger();

    /** Whether a refused socket may linger for its client to close first; if so, {@link #refusalClosed} follows. */
    boolean lingerRefusal() {
        if (refusalsLingering.incrementAndGet() <= PgWireServer.REFUSALS_LINGERING_MAX) {
            return true;
        }
        refusalsLingering.decrementAndGet();
        return false;
    }

    /** A lingering refused socket closed. */
    void refusalClosed() {
        refusalsLingering.decrementAndGet();
    }

    /** Refused sockets open now, waiting for their client to close. */
    int refusalsLingering() {
        return refusalsLingering.get();
    }

    /**
     * Sockets of one client address not yet authenticated, at most {@link #awaitingPerAddress()}: one address cannot
     * hold every place of the node with connections that never log in (each may wait the authentication timeout).
     */
    private final java.util.concurrent.ConcurrentHashMap<String, Integer> awaiting = new java.util.concurrent.ConcurrentHashMap<>();

    /** A quarter of the node's cap, at least 8. */
    int awaitingPerAddress() {
        return Math.max(8, maxConnections / 4);
    }

    /** Counts a socket of {@code address} awaiting authentication, or refuses it when the address holds its share. */
    boolean admitAwaiting(String address) {
        boolean[] admitted = new boolean[1];
        awaiting.compute(address, (a, n) -> {
            int held = n == null ? 0 : n;
            admitted[0] = held < awaitingPerAddress();
            return admitted[0] ? held + 1 : n;
        });
        return admitted[0];
    }

    /** Sockets of {@code address} awaiting authentication now. */
    int awaiting(String address) {
        return awaiting.getOrDefault(address, 0);
    }

    /** A socket of {@code address} authenticated or closed. */
    void awaitingEnded(String address) {
        awaiting.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
    }

    /** An admitted socket closed. */
    void socketClosed() {
        open.decrementAndGet();
    }

    /** Counts an authenticated session of {@code user}, or refuses it when the user holds its cap already. */
    boolean admitSession(String user) {
        boolean[] admitted = new boolean[1];
        sessions.compute(user, (name, n) -> {
            int held = n == null ? 0 : n;
            admitted[0] = held < perUser;
            return admitted[0] ? held + 1 : n;
        });
        if (!admitted[0]) {
            refusedForUser.increment();
        }
        return admitted[0];
    }

    /** An admitted session of {@code user} closed. */
    void sessionClosed(String user) {
        sessions.computeIfPresent(user, (name, n) -> n <= 1 ? null : n - 1);
    }

    /** Sockets open now (admitted, not yet closed). */
    int open() {
        return open.get();
    }

    /** Sockets refused because the node held {@code limits.pgwireMaxConnections}. */
    long refusedForNode() {
        return refusedForNode.sum();
    }

    /** Sessions refused because their user held {@code limits.pgwireConnectionsPerUser}. */
    long refusedForUser() {
        return refusedForUser.sum();
    }
}
