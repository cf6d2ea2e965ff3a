package dev.thresher.pgwire;

import dev.thresher.limits.Limits;
import java.util.Objects;

/**
 * Configuration of one {@link PgWireServer}.
 *
 * @param host the address to listen on, e.g. {@code 127.0.0.1}
 * @param port the TCP port to listen on; 0 picks an ephemeral port (read it back with {@link PgWireServer#port()})
 * @param authMode how connections authenticate
 * @param user the one user accepted when the server runs without users from a control database
 * @param password that user's password (null: every name admitted without one, as in {@link AuthMode#TRUST} mode)
 * @param tenant the tenant of that user; with users from a control database, of a session whose account has none
 * @param limits the message and payload caps ({@link Limits#pgwireMaxMessageBytes()},
 *     {@link Limits#directCallPayloadBytes()})
 * @param tlsMode whether connections may or must use TLS
 * @param tls the certificate and context of TLS connections: required unless {@code tlsMode} is
 *     {@link TlsMode#DISABLED}, and then dropped (null)
 */
public record PgWireConfig(String host, int port, AuthMode authMode, String user, String password, String tenant,
                           Limits limits, TlsMode tlsMode, PgTls tls) {
    public PgWireConfig {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(authMode, "authMode");
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(tlsMode, "tlsMode");
        if (port < 0 || port > 65_535) {
            throw new IllegalArgumentException("port must be in [0, 65535], was " + port);
        }
        if (user.isEmpty()) {
            throw new IllegalArgumentException("user must not be empty");
        }
        // without a control database (users from it), SCRAM and PASSWORD check the one user's password
        if (authMode != AuthMode.TRUST && password != null && password.isEmpty()) {
            throw new IllegalArgumentException("the password must not be empty");
        }
        if (tlsMode == TlsMode.DISABLED) {
            tls = null;
        } else if (tls == null) {
            throw new IllegalArgumentException("tlsMode " + tlsMode + " needs a certificate and key (tls)");
        }
    }

    /** Without TLS: an SSLRequest is answered {@code 'N'}. */
    public PgWireConfig(String host, int port, AuthMode authMode, String user, String password, String tenant,
                        Limits limits) {
        this(host, port, authMode, user, password, tenant, limits, TlsMode.DISABLED, null);
    }

    /** This configuration with {@code tlsMode} and {@code tls} (null for {@link TlsMode#DISABLED}). */
    public PgWireConfig withTls(TlsMode tlsMode, PgTls tls) {
        return new PgWireConfig(host, port, authMode, user, password, tenant, limits, tlsMode, tls);
    }

    @Override
    public String toString() {
        // The password stays out of logs.
        return "PgWireConfig[host=" + host + ", port=" + port + ", authMode=" + authMode + ", user=" + user
                + ", tenant=" + tenant + ", tls=" + tlsMode + "]";
    }
}
