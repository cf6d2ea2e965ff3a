package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import io.netty.channel.ChannelHandlerContext;
import java.util.Optional;

/**
 * Where one pgwire connection is counted among its server's ({@link PgConnections}): from its start among its client
 * address's sockets awaiting authentication, then, once authenticated, among its user's sessions until it closes. One
 * past a count's bound is refused FATAL {@code 53300}, as a socket past the node's cap is. Touched on the connection's
 * event loop only.
 */
final class PgAdmission {
    private final PgConnections counts;
    /** The client address this socket is counted under while it awaits authentication; null once it is not. */
    private String awaitingAddress;
    /** The user this session is counted under once authenticated; null until then and once closed. */
    private String sessionUser;

    PgAdmission(PgConnections counts) {
        this.counts = counts;
    }

    /** The client's IP address as text, the key the login throttle and the per-address share count under. */
    static String clientAddress(ChannelHandlerContext ctx) {
        java.net.SocketAddress remote = ctx.channel().remoteAddress();
        return remote instanceof java.net.InetSocketAddress inet && inet.getAddress() != null
                ? inet.getAddress().getHostAddress() : String.valueOf(remote);
    }

    /**
     * Counts the socket among its address's sockets awaiting authentication; one past the address's share is refused.
     *
     * @return the error refusing it, or empty when it is counted
     */
    Optional<PgError> admitAwaiting(String address) {
        if (!counts.admitAwaiting(address)) {
            return Optional.of(PgError.fatal(ErrorCode.TOO_MANY_CONNECTIONS, "too many connections awaiting"
                    + " authentication from this address (at most " + counts.awaitingPerAddress()
                    + ", a quarter of limits.pgwireMaxConnections)"));
        }
        awaitingAddress = address;
        return Optional.empty();
    }

    /** Ends the socket's count among those awaiting authentication (once). */
    void awaitingEnded() {
        if (awaitingAddress != null) {
            counts.awaitingEnded(awaitingAddress);
            awaitingAddress = null;
        }
    }

    /**
     * Counts the authenticated session under its user: PostgreSQL's role connection limit, checked once the user is
     * known to be who it says ({@code limits.pgwireConnectionsPerUser}).
     *
     * @return the error refusing it, or empty when it is counted
     */
    Optional<PgError> admitSession(String user) {
        if (!counts.admitSession(user)) {
            return Optional.of(PgError.fatal(ErrorCode.TOO_MANY_CONNECTIONS, "too many connections for role \""
                    + Quoted.of(user) + "\" (limits.pgwireConnectionsPerUser is " + counts.perUser() + ")"));
        }
        sessionUser = user;
        return Optional.empty();
    }

    /** The connection closed: whatever it is counted under ends (once). */
    void closed() {
        awaitingEnded();
        if (sessionUser != null) {
            counts.sessionClosed(sessionUser);
            sessionUser = null;
        }
    }
}
