package dev.thresher.pgwire;

/** How a pgwire connection authenticates. */
public enum AuthMode {
    /**
     * SCRAM-SHA-256 (RFC 7677), as PostgreSQL's {@code scram-sha-256} method: the password never crosses the socket,
     * the server keeps only a verifier, and over TLS the client may bind the exchange to the server's certificate
     * ({@code SCRAM-SHA-256-PLUS}). The default.
     */
    SCRAM,
    /**
     * Any existing user name is admitted without a password ({@code AuthenticationOk} right after the startup
     * message), as PostgreSQL's trust method does: for loopback development only (a node refuses it on any other
     * address).
     */
    TRUST,
    /**
     * {@code AuthenticationCleartextPassword}, then the password is checked against the user's verifier, as
     * PostgreSQL's {@code password} method: the password crosses the socket, so only over TLS or loopback.
     */
    PASSWORD
}
