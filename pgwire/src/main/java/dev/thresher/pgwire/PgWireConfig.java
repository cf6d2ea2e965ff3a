package dev.thresher.pgwire;

import dev.thresher.limits.Limits;
import java.util.Objects;

/**
 * Configuration of one {@link PgWireServer}.
 *
 * @param host the address to listen on, e.g. {@code 127.0.0.1}
 * @param port the TCP port to listen on; 0 picks an ephemeral port (read it back with {@link PgWireServer#port()})
 * @param authMode how connections authenticate
 * @param user the one user name accepted; it becomes the call's principal
 * @param password the password checked in {@link AuthMode#PASSWORD} mode; ignored in {@link AuthMode#TRUST} mode
 * @param tenant the tenant every call of this front door runs as
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
        if (authMode == AuthMode.PASSWORD && (password == null || password.isEmpty())) {
            throw new IllegalArgumentException("authMode PASSWORD needs a non-empty password");
        }
    }

    @Override
    public String toString() {
        // The password stays out of logs.
        return "PgWireConfig[host=" + host + ", port=" + port + ", authMode=" + authMode + ", user=" + user
                + ", tenant=" + tenant + "]";
    }
}
