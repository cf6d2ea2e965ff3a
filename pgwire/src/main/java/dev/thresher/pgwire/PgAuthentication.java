package dev.thresher.pgwire;

import dev.thresher.bindings.access.AccessService;
import dev.thresher.bindings.access.Account;
import dev.thresher.bindings.access.Scram;
import dev.thresher.bindings.access.ScramExchange;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.channel.ChannelHandlerContext;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection's startup and authentication phases, before its session is ready: SSLRequest and GSSENCRequest
 * answered (the TLS handshake itself is {@link PgTls}'s), CancelRequest accepted and ignored, the startup packet
 * checked (protocol version, TLS required, user name, its settings), the login throttle's admission and wait, then
 * the configured method: trust, a cleartext password, or SCRAM-SHA-256 (and -PLUS over TLS). A connection that does
 * not finish within {@code limits.pgwireAuthTimeoutMs} is closed. Touched on the connection's event loop only.
 *
 * <p>It ends in one of two ways: {@link Connection#authenticated} with who logged in, once the method's last
 * message is written (not flushed), or {@link Connection#fatal} with the error that closes the connection.
 */
final class PgAuthentication {
    private static final Logger log = LoggerFactory.getLogger(PgAuthentication.class);

    /** A per-process secret for unknown users' mock SCRAM salts: stable while the process runs, unknown outside it. */
    private static final byte[] MOCK_SECRET = new java.security.SecureRandom().generateSeed(32);

    /** Who logged in: the user, the database named in the startup packet (the user's name when none was), the tenant. */
    record Authenticated(String user, String database, String tenant) {
    }

    /** What the authentication needs of its connection. */
    interface Connection {
        /**
         * Takes the startup packet's parameters as the session's settings.
         *
         * @throws ThresherException for a value a kept setting does not take, or malformed options
         */
        void startupSettings(Map<String, String> parameters);

        /** The login succeeded; the session begins (or is refused by its own bounds). */
        void authenticated(Authenticated who);

        /** Reports {@code error} and closes the connection. */
        void fatal(PgError error);

        /** Closes the connection without a word (after a CancelRequest). */
        void closeQuietly();

        /** Whether the connection is closed. */
        boolean closed();

        /** Whether messages that arrived after the one being handled wait in the connection's queue. */
        boolean queued();
    }

    /** FAILING: the attempt failed and its answer is held for the throttle's wait ({@link AuthThrottle#failed}). */
    private enum Step { STARTUP, PASSWORD, SASL, FAILING, DONE }

    private final PgWireConfig config;
    private final AccessService access;
    private final AuthThrottle throttle;
    private final ChannelHandlerContext ctx;
    private final Connection connection;
    private Step step = Step.STARTUP;
    private String user;
    private String database;
    /** The account being authenticated (empty: an unknown name, failed at the end like a wrong password). */
    private Optional<Account> account = Optional.empty();
    /** The SCRAM exchange in progress in the SASL step. */
    private ScramExchange scram;
    private boolean saslStarted;
    /** Whether this connection sent its SSLRequest (there may be one only). */
    private boolean sslRequested;
    private ScheduledFuture<?> timeout;

    PgAuthentication(PgWireConfig config, AccessService access, AuthThrottle throttle, ChannelHandlerContext ctx,
                     Connection connection) {
        this.config = config;
        this.access = access;
        this.throttle = throttle;
        this.ctx = ctx;
        this.connection = connection;
        // A connection that has not authenticated in time is closed, as PostgreSQL's authentication_timeout does.
        timeout = ctx.executor().schedule(() -> {
            if (step != Step.DONE && step != Step.FAILING && !connection.closed()) {
                connection.fatal(PgError.fatal(ErrorCode.AUTHENTICATION_TIMEOUT, "authentication did not finish"
                        + " within " + config.limits().pgwireAuthTimeoutMs() + " ms (limits.pgwireAuthTimeoutMs)"));
            }
        }, config.limits().pgwireAuthTimeoutMs(), TimeUnit.MILLISECONDS);
    }

    /** Handles a message of the startup and authentication phases. */
    void handle(FrontendMessage message) {
        switch (step) {
            case STARTUP -> startupStep(message);
            case PASSWORD -> passwordStep(message);
            case SASL -> saslStep(message);
            case FAILING -> { } // its answer is on its way; nothing the client sends meanwhile is read
            case DONE -> throw new IllegalStateException("authentication already ended");
        }
    }

    /** The connection closed: the timeout is cancelled. */
    void closed() {
        timeout.cancel(false);
    }

    private void startupStep(FrontendMessage message) {
        switch (message) {
            case FrontendMessage.SslRequest r -> sslRequest();
            case FrontendMessage.GssEncRequest r -> ctx.writeAndFlush(new BackendMessage.EncryptionRefused());
            case FrontendMessage.CancelRequest r -> {
                // The call contract has no caller cancellation: accepted, ignored, and the connection closed.
                log.debug("{} ignoring CancelRequest for process {}", ctx.channel(), r.processId());
                connection.closeQuietly();
            }
            case FrontendMessage.Startup s -> startup(s);
            default -> connection.fatal(PgError.fatal(ErrorCode.PROTOCOL_VIOLATION,
                    "expected a startup message, got " + message.getClass().getSimpleName()));
        }
    }

    /**
     * {@code 'N'} without TLS; with it {@code 'S'}, then the TLS handler takes the head of the pipeline and the
     * handshake follows ({@link PgTls}). One SSLRequest per connection, as in PostgreSQL.
     */
    private void sslRequest() {
        if (sslRequested || PgTls.startedTls(ctx.channel())) {
            connection.fatal(PgError.fatal(ErrorCode.PROTOCOL_VIOLATION, "unexpected SSLRequest: this connection"
                    + " already negotiated encryption"));
            return;
        }
        sslRequested = true;
        if (config.tls() == null) {
            ctx.writeAndFlush(new BackendMessage.EncryptionRefused());
            return;
        }
        if (connection.queued()) {
            // What the client sent before the answer was not encrypted (the startup decoder refuses it when it
            // arrives with the SSLRequest; this is for bytes that arrived while the request waited).
            connection.fatal(PgError.fatal(ErrorCode.PROTOCOL_VIOLATION, "received unencrypted data after SSL request"));
            return;
        }
        ctx.writeAndFlush(new BackendMessage.EncryptionAccepted());
        config.tls().startTls(ctx);
    }

    private void startup(FrontendMessage.Startup s) {
        if (config.tlsMode() == TlsMode.REQUIRED && !PgTls.isEncrypted(ctx.channel())) {
            // As PostgreSQL refuses a connection only hostssl lines of pg_hba.conf would admit: 28000, not 28P01.
            String name = s.parameters().getOrDefault("user", "");
            connection.fatal(new PgError(true, ErrorCode.AUTHENTICATION_FAILED,
                    SqlStates.INVALID_AUTHORIZATION_SPECIFICATION, "connection without TLS refused for user \"" + name
                            + "\": this server requires TLS (connect with sslmode=require or stronger)"));
            return;
        }
        if (s.majorVersion() != 3) {
            connection.fatal(PgError.fatal(ErrorCode.PROTOCOL_VIOLATION, "unsupported frontend protocol "
                    + s.majorVersion() + "." + s.minorVersion() + ": server supports 3.0"));
            return;
        }
        List<String> unrecognized = s.parameters().keySet().stream().filter(k -> k.startsWith("_pq_.")).sorted().toList();
        if (s.minorVersion() > 0 || !unrecognized.isEmpty()) {
            ctx.write(new BackendMessage.NegotiateProtocolVersion(0, unrecognized));
        }
        user = s.parameters().get("user");
        if (user == null || user.isEmpty()) {
            connection.fatal(PgError.fatal(ErrorCode.AUTHENTICATION_FAILED, "no user name specified in startup packet"));
            return;
        }
        database = s.parameters().getOrDefault("database", "");
        if (database.isEmpty()) {
            database = user;
        }
        try {
            connection.startupSettings(s.parameters());
        } catch (ThresherException e) {
            connection.fatal(PgError.fatal(e.code(), e.getMessage()));
            return;
        }
        long waitMs = throttle.admit(clientAddress());
        if (waitMs >= config.limits().pgwireAuthTimeoutMs()) {
            connection.fatal(PgError.fatal(ErrorCode.AUTHENTICATION_FAILED, "too many failed authentication attempts"
                    + " from this address; try again later"));
            return;
        }
        step = Step.PASSWORD; // authenticating: an early password message is checked against no request yet
        if (waitMs > 0) {
            // the throttle's wait runs on the event loop's timer; the connection takes nothing meanwhile
            step = Step.SASL;
            saslStarted = true; // anything the client sends before it is asked is refused
            ctx.executor().schedule(this::authenticate, waitMs, TimeUnit.MILLISECONDS);
        } else {
            authenticate();
        }
    }

    /** Looks the user up and starts the configured method (after the throttle's wait, if any). */
    private void authenticate() {
        if (connection.closed()) {
            return;
        }
        saslStarted = false;
        try {
            account = access.account(user);
        } catch (ThresherException e) {
            connection.fatal(PgError.fatal(e.code(), "cannot authenticate now: " + e.getMessage()));
            return;
        }
        switch (config.authMode()) {
            // Trust admits an existing user without a password, as PostgreSQL's trust method does; for loopback.
            case TRUST -> {
                if (account.isEmpty()) {
                    authenticationFailed();
                    return;
                }
                succeeded();
            }
            case PASSWORD -> {
                // The user name is checked with the password, so a wrong name is not told apart from a wrong password.
                step = Step.PASSWORD;
                ctx.writeAndFlush(new BackendMessage.AuthenticationCleartextPassword());
            }
            case SCRAM -> {
                byte[] binding = channelBindingData();
                scram = new ScramExchange(account.map(Account::verifier)
                        .orElseGet(() -> ScramExchange.mockVerifier(user, MOCK_SECRET)), account.isPresent(), binding);
                step = Step.SASL;
                ctx.writeAndFlush(new BackendMessage.AuthenticationSasl(ScramExchange.mechanisms(binding != null)));
            }
        }
    }

    /**
     * The connection's {@code tls-server-end-point} channel-binding data (RFC 5929), or null when it is not TLS:
     * SCRAM-SHA-256-PLUS is offered only with it.
     */
    private byte[] channelBindingData() {
        return config.tls() == null ? null : config.tls().tlsServerEndPoint(ctx.channel()).orElse(null);
    }

    private String clientAddress() {
        return PgAdmission.clientAddress(ctx);
    }

    private void passwordStep(FrontendMessage message) {
        if (!(message instanceof FrontendMessage.AuthResponse p) || config.authMode() != AuthMode.PASSWORD) {
            connection.fatal(PgError.fatal(ErrorCode.PROTOCOL_VIOLATION,
                    "expected a password message in answer to the server's request, got "
                            + message.getClass().getSimpleName()));
            return;
        }
        byte[] body = p.body();
        if (body.length == 0 || body[body.length - 1] != 0) {
            connection.fatal(PgError.fatal(ErrorCode.PROTOCOL_VIOLATION, "invalid password packet: no terminator"));
            return;
        }
        String password = new String(body, 0, body.length - 1, StandardCharsets.UTF_8);
        boolean matches = Scram.matches(account.map(Account::verifier)
                .orElseGet(() -> ScramExchange.mockVerifier(user, MOCK_SECRET)), password);
        if (!matches || account.isEmpty()) {
            authenticationFailed();
            return;
        }
        succeeded();
    }

    /** SASLInitialResponse, then SASLResponse: SCRAM-SHA-256's two client messages. */
    private void saslStep(FrontendMessage message) {
        if (!(message instanceof FrontendMessage.AuthResponse r) || scram == null) {
            connection.fatal(PgError.fatal(ErrorCode.PROTOCOL_VIOLATION,
                    "expected SASL response, got " + message.getClass().getSimpleName()));
            return;
        }
        try {
            byte[] body = r.body();
            if (!saslStarted) {
                saslStarted = true;
                int nul = -1;
                for (int i = 0; i < body.length; i++) {
                    if (body[i] == 0) {
                        nul = i;
                        break;
                    }
                }
                if (nul < 0 || body.length < nul + 5
                        || ByteBuffer.wrap(body).getInt(nul + 1) != body.length - nul - 5) {
                    throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "malformed SASLInitialResponse message");
                }
                String mechanism = new String(body, 0, nul, StandardCharsets.UTF_8);
                byte[] data = java.util.Arrays.copyOfRange(body, nul + 5, body.length);
                ctx.writeAndFlush(new BackendMessage.AuthenticationSaslContinue(scram.first(mechanism, data)));
                return;
            }
            byte[] serverFinal = scram.last(body);
            ctx.write(new BackendMessage.AuthenticationSaslFinal(serverFinal));
            succeeded();
        } catch (ThresherException e) {
            if (e.code() == ErrorCode.AUTHENTICATION_FAILED) {
                authenticationFailed();
            } else {
                throttle.failed(clientAddress(), user);
                connection.fatal(PgError.fatal(e.code(), e.getMessage()));
            }
        }
    }

    private void succeeded() {
        step = Step.DONE;
        timeout.cancel(false);
        connection.authenticated(new Authenticated(user, database,
                account.map(a -> a.principal().tenant()).orElse(config.tenant())));
    }

    /**
     * A failed authentication: counted against the address and the user, and answered with the same message
     * whatever failed (an unknown user, a wrong password or proof, a channel binding that does not match).
     */
    private void authenticationFailed() {
        long holdMs = throttle.failed(clientAddress(), user);
        PgError failed = PgError.fatal(ErrorCode.AUTHENTICATION_FAILED, "password authentication failed for user \""
                + Quoted.of(user) + "\"");
        if (holdMs <= 0) {
            connection.fatal(failed);
            return;
        }
        // Answered late, as PostgreSQL's auth_delay does: a guess learns it was wrong no sooner than the user's recent
        // failures allow, while a right password (never held) is answered at once.
        step = Step.FAILING;
        ctx.executor().schedule(() -> {
            if (!connection.closed()) {
                connection.fatal(failed);
            }
        }, holdMs, TimeUnit.MILLISECONDS);
    }
}
