package dev.thresher.http;

import dev.thresher.bindings.access.AccessService;
import dev.thresher.bindings.access.Principal;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
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
 *   <li>{@code /admin/*}, HTTP handler routes ({@code /v1/http/*}) and the direct call route
 *       ({@code POST /v1/bindings/{name}/call}) need {@code Authorization: Bearer <token>}: a user's token
 *       ({@code thresher user token NAME}; the request then runs as that user, in its tenant, with its grants) or the
 *       node's {@code http.adminToken} (an admin of the node's {@code tenant}).</li>
 *   <li>What the token's user may do is checked per route: {@code /admin/*} needs {@code admin} (and the topology
 *       routes an admin of the node's tenant, the operator's), a call or a handler route {@code call} on its binding;
 *       otherwise {@code PERMISSION_DENIED} (403).</li>
 * </ul>
 *
 * A missing, malformed or wrong token is one answer, {@code AUTHENTICATION_FAILED} (401, with
 * {@code WWW-Authenticate: Bearer}); tokens are compared by their SHA-256 digests in constant time.
 *
 * @param adminToken the token, when the node has one
 * @param openEndpoints who may use the health and metrics routes without the token
 */
public record HttpAccess(Optional<String> adminToken, OpenEndpoints openEndpoints, AccessService users,
                         boolean unauthenticated) {
    /** Only the admin token: no user tokens. */
    public HttpAccess(Optional<String> adminToken, OpenEndpoints openEndpoints) {
        this(adminToken, openEndpoints, null, false);
    }

    /** The same, with users' bearer tokens and grants from {@code users}. */
    public HttpAccess withUsers(AccessService users) {
        return new HttpAccess(adminToken, openEndpoints, users, false);
    }

    /**
     * No authentication at all: every request runs as an admin of the front's tenant. Only for a front door started
     * on its own, without users: the default of {@link HttpFront#builder} (protocol tests); a node never uses it.
     */
    public static final HttpAccess UNAUTHENTICATED = new HttpAccess(Optional.empty(), OpenEndpoints.ANYWHERE, null, true);

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
     * Who the request is, when its route needs someone: null for a route open to this peer and for an unknown path
     * (answered 404 whoever asks).
     *
     * @param directCall whether the path is the direct call route
     * @param nodeTenant the node's tenant, whose admin the admin token stands for
     * @throws ThresherException {@code AUTHENTICATION_FAILED} when the route needs a token and {@code authorization}
     *     carries none this node knows
     */
    Principal authenticate(String path, boolean directCall, SocketAddress peer, String authorization, String nodeTenant) {
        if (!directCall && !(isOpenEndpoint(path) || isGuarded(path))) {
            return null;
        }
        if (unauthenticated) {
            return Principal.admin("http", nodeTenant);
        }
        if (!directCall && isOpenEndpoint(path) && (openEndpoints == OpenEndpoints.ANYWHERE
                || (openEndpoints == OpenEndpoints.LOOPBACK && isLoopback(peer)))) {
            return null;
        }
        String token = authorization == null ? "" : bearer(authorization);
        if (adminToken.isPresent() && matches(token, adminToken.get())) {
            return Principal.admin(ADMIN_TOKEN_USER, nodeTenant);
        }
        if (users != null && !token.isEmpty()) {
            Optional<Principal> user = users.byToken(token);
            if (user.isPresent()) {
                return user.get();
            }
        }
        if (adminToken.isEmpty() && users == null) {
            throw new ThresherException(ErrorCode.AUTHENTICATION_FAILED, "this node has no admin token"
                    + " (http.adminToken) and no users, so it serves " + Quoted.of(path) + " to no one");
        }
        // one answer for a missing, malformed and wrong token
        throw new ThresherException(ErrorCode.AUTHENTICATION_FAILED, "authentication required: send"
                + " 'Authorization: Bearer <token>' with a user's token (thresher user token NAME)"
                + (adminToken.isPresent() ? " or this node's admin token (http.adminToken)" : ""));
    }

    /**
     * What the request's user may do, by route: the admin routes need {@code admin} (the topology routes an admin of
     * the node's tenant), a call and a handler route {@code call} on their binding — checked before the binding is
     * looked up, so the answer is the same whether it exists.
     *
     * @param principal who {@link #authenticate} found, null for no one (nothing is checked)
     * @param directCall the binding of the direct call route, when the path is that route
     * @throws ThresherException {@code PERMISSION_DENIED}
     */
    static void authorize(Principal principal, String path, Optional<String> directCall, String nodeTenant) {
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
        } else if (directCall.isPresent()) {
            principal.checkCall(directCall.get());
        } else if (HandlerRoutes.claims(path)) {
            HandlerRoutes.bindingOf(path).ifPresent(principal::checkCall);
        }
    }

    /** The user name requests made with the node's admin token run as. */
    public static final String ADMIN_TOKEN_USER = "http-admin";

    /** {@link #authenticate} for tests of the token alone. */
    void check(String path, boolean directCall, SocketAddress peer, String authorization) {
        authenticate(path, directCall, peer, authorization, "default");
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
