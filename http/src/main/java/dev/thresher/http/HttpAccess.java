package dev.thresher.http;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;
import java.util.Optional;

/**
 * Who may use which HTTP route of a node.
 *
 * <ul>
 *   <li>{@code /livez}, {@code /readyz} and {@code /metrics} are open to the peers {@link #openEndpoints} names
 *       ({@code loopback} by default: only connections from the node's own machine); from other peers they need
 *       the token too.</li>
 *   <li>{@code /admin/*} and HTTP handler routes ({@code /v1/http/*}) need {@code Authorization: Bearer <token>}
 *       with the node's {@code http.adminToken}; a node without one refuses them to everyone.</li>
 *   <li>The direct call route {@code POST /v1/bindings/{name}/call} runs as the node's tenant and needs no token
 *       (users and grants are a separate, later layer).</li>
 * </ul>
 *
 * A missing, malformed or wrong token is one answer, {@code AUTHENTICATION_FAILED} (401, with
 * {@code WWW-Authenticate: Bearer}); tokens are compared by their SHA-256 digests in constant time.
 *
 * @param adminToken the token, when the node has one
 * @param openEndpoints who may use the health and metrics routes without the token
 */
public record HttpAccess(Optional<String> adminToken, OpenEndpoints openEndpoints) {
    /** The shortest token a node accepts in its configuration. */
    public static final int MIN_TOKEN_LENGTH = 16;

    /** Who may use {@code /livez}, {@code /readyz} and {@code /metrics} without the token. */
    public enum OpenEndpoints {
        /** Connections from a loopback address. */
        LOOPBACK,
        /** Anyone. */
        ANYWHERE,
        /** No one: the token always. */
        NOWHERE;

        /** {@code loopback}, {@code anywhere} or {@code nowhere}, any case. */
        public static OpenEndpoints parse(String s) {
            try {
                return valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("http.openEndpoints must be loopback, anywhere or nowhere, was '" + s + "'");
            }
        }
    }

    /** No token: only the open routes and the direct call route are served. */
    public static final HttpAccess NO_TOKEN = new HttpAccess(Optional.empty(), OpenEndpoints.LOOPBACK);

    public HttpAccess {
        adminToken = adminToken.filter(t -> !t.isEmpty());
        adminToken.ifPresent(t -> {
            if (t.length() < MIN_TOKEN_LENGTH) {
                throw new IllegalArgumentException("http.adminToken must be at least " + MIN_TOKEN_LENGTH
                        + " characters long, was " + t.length());
            }
            for (int i = 0; i < t.length(); i++) {
                char c = t.charAt(i);
                if (c <= ' ' || c > '~') {
                    throw new IllegalArgumentException("http.adminToken must be printable ASCII without spaces");
                }
            }
        });
        java.util.Objects.requireNonNull(openEndpoints, "openEndpoints");
    }

    /** Never the token itself: configurations get logged. */
    @Override
    public String toString() {
        return "HttpAccess[adminToken=" + (adminToken.isPresent() ? "(set)" : "(none)") + ", openEndpoints="
                + openEndpoints.name().toLowerCase(Locale.ROOT) + "]";
    }

    /** A node with {@code token}, the health and metrics routes open on loopback. */
    public static HttpAccess withToken(String token) {
        return new HttpAccess(Optional.of(token), OpenEndpoints.LOOPBACK);
    }

    /** The routes that need the token from every peer. */
    static boolean isGuarded(String path) {
        return path.equals("/admin") || path.startsWith("/admin/") || path.startsWith("/v1/http/");
    }

    /** The routes open without a token to some peers. */
    static boolean isOpenEndpoint(String path) {
        return path.equals("/livez") || path.equals("/readyz") || path.equals("/metrics");
    }

    /**
     * Refuses the request when its route needs the token and {@code authorization} does not carry it.
     *
     * @param directCall whether the path is the direct call route
     * @throws ThresherException {@code AUTHENTICATION_FAILED}
     */
    void check(String path, boolean directCall, SocketAddress peer, String authorization) {
        if (directCall || !(isOpenEndpoint(path) || isGuarded(path))) {
            return; // the direct call route; an unknown path is answered 404 whoever asks
        }
        if (isOpenEndpoint(path) && (openEndpoints == OpenEndpoints.ANYWHERE
                || (openEndpoints == OpenEndpoints.LOOPBACK && isLoopback(peer)))) {
            return;
        }
        if (adminToken.isEmpty()) {
            throw new ThresherException(ErrorCode.AUTHENTICATION_FAILED, "this node has no admin token"
                    + " (http.adminToken), so it serves " + path + " to no one");
        }
        if (authorization == null || !matches(bearer(authorization), adminToken.get())) {
            // one answer for a missing, malformed and wrong token
            throw new ThresherException(ErrorCode.AUTHENTICATION_FAILED, "authentication required: send"
                    + " 'Authorization: Bearer <token>' with this node's admin token (http.adminToken)");
        }
    }

    private static String bearer(String authorization) {
        String a = authorization.trim();
        int space = a.indexOf(' ');
        if (space < 0 || !a.substring(0, space).equalsIgnoreCase("Bearer")) {
            return "";
        }
        return a.substring(space + 1).trim();
    }

    private static boolean matches(String presented, String expected) {
        return MessageDigest.isEqual(sha256(presented), sha256(expected));
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean isLoopback(SocketAddress peer) {
        if (peer instanceof InetSocketAddress isa) {
            InetAddress a = isa.getAddress();
            return a != null && a.isLoopbackAddress();
        }
        return false;
    }
}
