package dev.thresher.server.node;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.PgTls;
import dev.thresher.pgwire.TlsMode;
import io.netty.handler.ssl.SslContext;
import java.nio.file.Path;
import java.util.Objects;

/**
 * A node's TLS: {@code tls.certFile} and {@code tls.keyFile} (one PEM certificate chain and its private key, shared
 * by pgwire and HTTP), {@code pgwire.tls} and {@code http.tls}. Certificates are read once, at start.
 *
 * @param certFile the PEM certificate chain, the node's certificate first; null without TLS
 * @param keyFile the PEM private key of its first certificate; null without TLS
 * @param pgwire whether pgwire connections may or must use TLS
 * @param https whether the HTTP port speaks HTTPS only (else plain HTTP only)
 */
public record TlsSettings(Path certFile, Path keyFile, TlsMode pgwire, boolean https) {
    /** No certificate: pgwire answers SSLRequest {@code 'N'}, HTTP is plain. */
    public static final TlsSettings NONE = new TlsSettings(null, null, TlsMode.DISABLED, false);

    public TlsSettings {
        Objects.requireNonNull(pgwire, "pgwire");
        if ((certFile == null) != (keyFile == null)) {
            throw new IllegalArgumentException("tls.certFile and tls.keyFile go together: set both or neither");
        }
        if (certFile == null && (pgwire != TlsMode.DISABLED || https)) {
            throw new IllegalArgumentException("pgwire.tls=" + pgwire + " and http.tls=" + (https ? "enabled" : "disabled")
                    + " need tls.certFile and tls.keyFile");
        }
    }

    /** The certificate and key for both listeners, pgwire's TLS as {@code pgwire} asks. */
    public static TlsSettings of(Path certFile, Path keyFile, TlsMode pgwire, boolean https) {
        return new TlsSettings(certFile, keyFile, pgwire, https);
    }

    /** What the listeners are given: pgwire's TLS (null when disabled) and HTTP's server context (null for plain HTTP). */
    public record Loaded(PgTls pgwire, SslContext http) {
    }

    /**
     * Reads the certificate and key, and tries them (PgTls.load's in-memory handshake) whenever they are configured,
     * whichever listener uses them.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} naming the file and what is wrong with it
     */
    public Loaded load() {
        if (certFile == null) {
            return new Loaded(null, null);
        }
        try {
            PgTls tls = PgTls.load(certFile, keyFile);
            SslContext http = https ? PgTls.serverContext(certFile, keyFile, "http/1.1") : null;
            return new Loaded(pgwire == TlsMode.DISABLED ? null : tls, http);
        } catch (ThresherException e) {
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "tls.certFile, tls.keyFile: " + e.getMessage(), e);
        }
    }
}
