package dev.thresher.pgwire;

import java.util.Locale;

/** Whether pgwire connections may, or must, be encrypted with TLS ({@link PgTls}). */
public enum TlsMode {
    /** An SSLRequest is answered {@code 'N'}; a connection that starts with a TLS handshake is not understood. */
    DISABLED,
    /**
     * An SSLRequest is answered {@code 'S'} and the TLS handshake follows; a connection may also start with the
     * handshake itself (PostgreSQL 17's {@code sslnegotiation=direct}). Cleartext connections are still served.
     */
    ENABLED,
    /**
     * As {@link #ENABLED}, and a StartupMessage that did not arrive over TLS is refused: FATAL {@code 28000},
     * as PostgreSQL refuses a connection no {@code hostssl} line of {@code pg_hba.conf} admits.
     */
    REQUIRED;

    /**
     * The mode named {@code disabled}, {@code enabled} or {@code required} (any case, surrounding blanks ignored).
     *
     * @throws IllegalArgumentException naming the three for any other text
     */
    public static TlsMode parse(String text) {
        for (TlsMode mode : values()) {
            if (mode.name().equalsIgnoreCase(text.strip())) {
                return mode;
            }
        }
        throw new IllegalArgumentException("pgwire.tls must be disabled, enabled or required, was '" + text + "'");
    }

    /** The name a configuration file spells: {@code disabled}, {@code enabled}, {@code required}. */
    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
