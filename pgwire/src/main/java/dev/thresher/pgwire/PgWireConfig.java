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
 */
public record PgWireConfig(String host, int port, AuthMode authMode, String user, String password, String tenant,
                           Limits limits) {
    public PgWireConfig {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(authMode, "authMode");
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(limits, "limits");
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
    }

    @Override
    public String toString() {
        // The password stays out of logs.
        return "PgWireConfig[host=" + host + ", port=" + port + ", authMode=" + authMode + ", user=" + user
                + ", tenant=" + tenant + "]";
    }
}
