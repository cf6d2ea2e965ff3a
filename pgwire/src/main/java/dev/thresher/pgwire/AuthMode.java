package dev.thresher.pgwire;

/** How a pgwire connection authenticates. */
public enum AuthMode {
    /**
     * Any user name is admitted without a password ({@code AuthenticationOk} right after the startup
     * message), as PostgreSQL's trust method does: meant for loopback development clusters.
     */
    TRUST,
    /**
     * {@code AuthenticationCleartextPassword}, then the password is compared with the configured one.
     * The password crosses the socket in clear text: meant for loopback until TLS and SCRAM exist.
     */
    PASSWORD
}
