package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.AlgorithmParameters;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PSSParameterSpec;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * TLS for pgwire: the server's {@link SslContext} (JDK provider, TLS 1.2 and 1.3 only, ALPN {@value #ALPN_PROTOCOL})
 * and its certificate, shared by every connection of a {@link PgWireServer} whose {@link PgWireConfig#tlsMode()} is
 * not {@link TlsMode#DISABLED}.
 *
 * <p>A connection becomes encrypted in one of two ways, both as PostgreSQL 17 does:
 * <ul>
 *   <li>an SSLRequest ({@code 00 00 00 08 04 d2 16 2f}) answered {@code 'S'}: the TLS handshake follows on the same
 *       socket, and the StartupMessage and everything after it flow through TLS. Bytes the client sent after the
 *       SSLRequest without waiting for the answer are refused (FATAL {@code 08P01}, "received unencrypted data after
 *       SSL request"): they were not encrypted and a man in the middle may have put them there;</li>
 *   <li>a connection whose first byte is {@code 0x16} (a TLS handshake record, which no startup packet can begin with:
 *       its length would exceed 10,000 bytes) is a direct TLS connection ({@code sslnegotiation=direct}); it must
 *       negotiate ALPN {@value #ALPN_PROTOCOL}, or it is closed once the handshake completes.</li>
 * </ul>
 * A second SSLRequest on a connection (inside TLS or after {@code 'N'}) is a protocol violation; GSSENCRequest is
 * always answered {@code 'N'}.
 *
 * <p>API for authentication: once the handshake of a connection completed, {@link #isEncrypted(Channel)} is true and
 * {@link #tlsServerEndPoint(Channel)} gives the {@code tls-server-end-point} channel-binding data of RFC 5929 (the
 * hash of the DER encoding of this server's certificate, with SHA-256 when its signature algorithm uses MD5 or SHA-1,
 * else with that algorithm's hash), which SCRAM-SHA-256-PLUS compares with the {@code c=} attribute of the client's
 * final message. Both are cheap: the bytes are computed once, when this object is built. The data is empty when the
 * connection is not encrypted, or when the certificate's signature algorithm names no hash (Ed25519, Ed448): then
 * channel binding cannot be offered, as in PostgreSQL.
 */
public final class PgTls {
    private static final Logger log = LoggerFactory.getLogger(PgTls.class);

    /** The ALPN protocol of PostgreSQL 17; required for direct TLS connections. */
    public static final String ALPN_PROTOCOL = "postgresql";
    /** The protocol versions served. */
    public static final List<String> PROTOCOLS = List.of("TLSv1.3", "TLSv1.2");

    static final String SSL_HANDLER = "pgwire-tls";
    static final String DIRECT_DETECTOR = "pgwire-tls-detect";
    static final String ALPN_GATE = "pgwire-tls-alpn";
    /** The content type of a TLS handshake record, the first byte of a ClientHello. */
    static final int TLS_HANDSHAKE_RECORD = 0x16;

    private final SslContext context;
    private final X509Certificate certificate;
    /** The tls-server-end-point data; null when the certificate's signature algorithm names no hash. */
    private final byte[] serverEndPoint;

    /**
     * TLS with {@code context}, a server context whose certificate chain starts with {@code certificate}.
     *
     * @throws IllegalArgumentException when {@code context} is a client context
     */
    public PgTls(SslContext context, X509Certificate certificate) {
        this.context = Objects.requireNonNull(context, "context");
        this.certificate = Objects.requireNonNull(certificate, "certificate");
        if (context.isClient()) {
            throw new IllegalArgumentException("a server SslContext is needed");
        }
        this.serverEndPoint = serverEndPoint(certificate).orElse(null);
    }

    /**
     * TLS with the PEM certificate chain in {@code certFile} (the server's certificate first, then its intermediates)
     * and the PEM private key of its first certificate in {@code keyFile} (PKCS#8 {@code BEGIN PRIVATE KEY}; PKCS#1
     * {@code BEGIN RSA PRIVATE KEY} and SEC 1 {@code BEGIN EC PRIVATE KEY} too when BouncyCastle's bcpkix is on the
     * class path, as it is in a node). The pair is tried with a TLS handshake in memory, so a key that does not belong
     * to the certificate is refused here rather than failing every client's handshake.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} naming the file and what is wrong with it
     */
    public static PgTls load(Path certFile, Path keyFile) {
        List<X509Certificate> chain = certificates(certFile);
        SslContext context = serverContext(certFile, keyFile, ALPN_PROTOCOL);
        selfTest(context, certFile, keyFile);
        return new PgTls(context, chain.get(0));
    }

    /** The certificates of a PEM file, in file order; at least one. */
    static List<X509Certificate> certificates(Path certFile) {
        if (!Files.isRegularFile(certFile) || !Files.isReadable(certFile)) {
            throw invalid("certificate file " + certFile + " does not exist or is not readable");
        }
        try (InputStream in = Files.newInputStream(certFile)) {
            List<X509Certificate> chain = CertificateFactory.getInstance("X.509").generateCertificates(in).stream()
                    .map(X509Certificate.class::cast).toList();
            if (chain.isEmpty()) {
                throw invalid("certificate file " + certFile + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
            }
            return chain;
        } catch (IOException | CertificateException e) {
            throw invalid("certificate file " + certFile + " is not a PEM certificate chain: " + e.getMessage(), e);
        }
    }

    /**
     * A server context for the certificate chain and key files: JDK provider, {@link #PROTOCOLS} only, and when
     * {@code alpn} names protocols, ALPN selecting among them (a client offering none of them goes on without ALPN).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when either file cannot be read or used
     */
    public static SslContext serverContext(Path certFile, Path keyFile, String... alpn) {
        certificates(certFile);
        if (!Files.isRegularFile(keyFile) || !Files.isReadable(keyFile)) {
            throw invalid("key file " + keyFile + " does not exist or is not readable");
        }
        try {
            SslContextBuilder builder = SslContextBuilder.forServer(certFile.toFile(), keyFile.toFile())
                    .sslProvider(SslProvider.JDK)
                    .protocols(PROTOCOLS);
            if (alpn.length > 0) {
                builder.applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                        ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                        ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT, alpn));
            }
            return builder.build();
        } catch (SSLException | IllegalArgumentException e) {
            throw invalid("cannot use certificate file " + certFile + " with key file " + keyFile + ": "
                    + messages(e) + " (the key must be an unencrypted PEM private key: PKCS#8, -----BEGIN PRIVATE KEY-----)", e);
        }
    }

    /**
     * Completes a TLS handshake in memory between a server engine of {@code context} and a client that accepts any
     * certificate: the client checks the server's signature with the certificate's public key, so a key that does not
     * belong to the certificate fails here.
     */
    static void selfTest(SslContext context, Path certFile, Path keyFile) {
        try {
            SSLContext clientContext = SSLContext.getInstance("TLS");
            clientContext.init(null, new TrustManager[] {ACCEPT_ANY}, null);
            SSLEngine client = clientContext.createSSLEngine("localhost", 0);
            client.setUseClientMode(true);
            SSLParameters parameters = client.getSSLParameters();
            parameters.setProtocols(PROTOCOLS.toArray(String[]::new));
            client.setSSLParameters(parameters);
            SSLEngine server = context.newEngine(ByteBufAllocator.DEFAULT);
            try {
                int packet = Math.max(client.getSession().getPacketBufferSize(), server.getSession().getPacketBufferSize());
                int application = Math.max(client.getSession().getApplicationBufferSize(),
                        server.getSession().getApplicationBufferSize());
                ByteBuffer toServer = ByteBuffer.allocate(4 * packet);
                ByteBuffer toClient = ByteBuffer.allocate(4 * packet);
                ByteBuffer plain = ByteBuffer.allocate(4 * application);
                client.beginHandshake();
                server.beginHandshake();
                for (int step = 0; step < 64; step++) {
                    boolean clientDone = advance(client, toClient, toServer, plain);
                    boolean serverDone = advance(server, toServer, toClient, plain);
                    if (clientDone && serverDone) {
                        return;
                    }
                }
                throw new SSLException("the handshake did not complete");
            } finally {
                ReferenceCountUtil.release(server);
            }
        } catch (GeneralSecurityException | SSLException e) {
            throw invalid("certificate file " + certFile + " and key file " + keyFile
                    + " do not make a working TLS server (does the key belong to the first certificate?): " + messages(e), e);
        }
    }

    /** One step of an engine's handshake; whether it has finished. */
    private static boolean advance(SSLEngine engine, ByteBuffer in, ByteBuffer out, ByteBuffer plain) throws SSLException {
        switch (engine.getHandshakeStatus()) {
            case NEED_TASK -> {
                Runnable task;
                while ((task = engine.getDelegatedTask()) != null) {
                    task.run();
                }
            }
            case NEED_WRAP -> check(engine.wrap(ByteBuffer.allocate(0), out));
            case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
                in.flip();
                try {
                    check(engine.unwrap(in, plain));
                } finally {
                    in.compact();
                }
                plain.clear();
            }
            case FINISHED, NOT_HANDSHAKING -> {
                return true;
            }
        }
        return false;
    }

    private static void check(SSLEngineResult result) throws SSLException {
        if (result.getStatus() == SSLEngineResult.Status.CLOSED || result.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
            throw new SSLException("the handshake stopped: " + result.getStatus());
        }
    }

    /** Trusts any server: the self-test checks that the key signs for the certificate, not who issued it. */
    private static final X509ExtendedTrustManager ACCEPT_ANY = new X509ExtendedTrustManager() {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    };

    /** The server context every encrypted connection uses. */
    public SslContext context() {
        return context;
    }

    /** The server's certificate: the first of the chain it presents. */
    public X509Certificate certificate() {
        return certificate;
    }

    /**
     * The {@code tls-server-end-point} channel-binding data of {@code channel}: present once its TLS handshake
     * completed (and the certificate's signature algorithm names a hash), empty for a cleartext connection. A new
     * array on each call.
     */
    public Optional<byte[]> tlsServerEndPoint(Channel channel) {
        return isEncrypted(channel) && serverEndPoint != null ? Optional.of(serverEndPoint.clone()) : Optional.empty();
    }

    /** Whether {@code channel} speaks TLS: its handshake completed. False for cleartext connections. */
    public static boolean isEncrypted(Channel channel) {
        SslHandler ssl = channel.pipeline().get(SslHandler.class);
        return ssl != null && ssl.handshakeFuture().isSuccess();
    }

    /** Whether {@code channel} has begun TLS (its handshake may still be under way). */
    static boolean startedTls(Channel channel) {
        return channel.pipeline().get(SslHandler.class) != null;
    }

    /**
     * RFC 5929's {@code tls-server-end-point} data of {@code certificate}: the hash of its DER encoding, with the hash
     * function of its signature algorithm, SHA-256 for MD5 and SHA-1; empty when the algorithm names no hash.
     */
    public static Optional<byte[]> serverEndPoint(X509Certificate certificate) {
        String digest = endPointDigest(certificate);
        if (digest == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(MessageDigest.getInstance(digest).digest(certificate.getEncoded()));
        } catch (GeneralSecurityException e) {
            log.warn("no {} digest for the tls-server-end-point data of the certificate ({}): channel binding cannot be"
                    + " offered", digest, certificate.getSigAlgName());
            return Optional.empty();
        }
    }

    /** The digest {@link #serverEndPoint} uses for {@code certificate}, as {@link MessageDigest} names it; null for none. */
    static String endPointDigest(X509Certificate certificate) {
        String algorithm = certificate.getSigAlgName().toUpperCase(Locale.ROOT);
        String hash;
        if (algorithm.equals("RSASSA-PSS")) {
            try {
                AlgorithmParameters parameters = AlgorithmParameters.getInstance("RSASSA-PSS");
                parameters.init(certificate.getSigAlgParams());
                hash = parameters.getParameterSpec(PSSParameterSpec.class).getDigestAlgorithm().toUpperCase(Locale.ROOT);
            } catch (GeneralSecurityException | IOException e) {
                return null;
            }
        } else {
            int with = algorithm.indexOf("WITH");
            if (with <= 0) {
                return null; // Ed25519, Ed448: no separate hash
            }
            hash = algorithm.substring(0, with);
        }
        return switch (hash.replace("-", "")) {
            case "MD5", "SHA1", "SHA256" -> "SHA-256";
            case "SHA224" -> "SHA-224";
            case "SHA384" -> "SHA-384";
            case "SHA512" -> "SHA-512";
            default -> hash; // SHA3-256 and the like, as MessageDigest names them
        };
    }

    /**
     * Puts the TLS handler at the head of the pipeline after an SSLRequest was answered {@code 'S'}: from now on every
     * byte read is TLS, and every byte written.
     */
    void startTls(ChannelHandlerContext ctx) {
        ctx.pipeline().addFirst(SSL_HANDLER, context.newHandler(ctx.alloc()));
    }

    /** The first handler of a connection's pipeline: tells a direct TLS connection from a cleartext one. */
    ByteToMessageDecoder directTlsDetector() {
        return new DirectTlsDetector();
    }

    /**
     * Reads the first byte of the connection: {@code 0x16} makes it a direct TLS connection (this handler is replaced
     * by the TLS handler, followed by the {@link AlpnGate}); anything else is left to the startup decoder, as it was
     * before TLS existed (this handler removes itself, and the bytes read so far go on).
     */
    private final class DirectTlsDetector extends ByteToMessageDecoder {
        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
            if (!in.isReadable()) {
                return;
            }
            if (in.getUnsignedByte(in.readerIndex()) == TLS_HANDSHAKE_RECORD) {
                ctx.pipeline().addAfter(ctx.name(), ALPN_GATE, new AlpnGate());
                ctx.pipeline().replace(this, SSL_HANDLER, context.newHandler(ctx.alloc()));
            } else {
                ctx.pipeline().remove(this);
            }
        }
    }

    /**
     * After the handshake of a direct TLS connection: the connection goes on when ALPN selected
     * {@value #ALPN_PROTOCOL}, else it is closed and nothing it sent is read, as PostgreSQL 17 refuses "direct SSL
     * connection request without ALPN protocol negotiation extension".
     */
    private static final class AlpnGate extends ChannelInboundHandlerAdapter {
        private boolean refused;

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
            if (event instanceof SslHandshakeCompletionEvent completion && completion.isSuccess()) {
                SslHandler ssl = ctx.pipeline().get(SslHandler.class);
                if (ssl != null && ALPN_PROTOCOL.equals(ssl.applicationProtocol())) {
                    ctx.pipeline().remove(this);
                } else {
                    refused = true;
                    log.debug("{} direct TLS connection without ALPN {}: closed", ctx.channel(), ALPN_PROTOCOL);
                    ctx.close();
                }
            }
            ctx.fireUserEventTriggered(event);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (refused) {
                ReferenceCountUtil.release(msg);
            } else {
                ctx.fireChannelRead(msg);
            }
        }
    }

    private static ThresherException invalid(String message) {
        return new ThresherException(ErrorCode.INVALID_CONFIGURATION, message);
    }

    private static ThresherException invalid(String message, Throwable cause) {
        return new ThresherException(ErrorCode.INVALID_CONFIGURATION, message, cause);
    }

    /** The messages of {@code t} and its causes, for one line. */
    private static String messages(Throwable t) {
        StringBuilder s = new StringBuilder();
        for (Throwable cur = t; cur != null; cur = cur.getCause()) {
            if (cur.getMessage() != null && !s.toString().contains(cur.getMessage())) {
                s.append(s.isEmpty() ? "" : ": ").append(cur.getMessage());
            }
        }
        return s.isEmpty() ? t.toString() : s.toString();
    }

    @Override
    public String toString() {
        return "PgTls[" + certificate.getSubjectX500Principal() + "]";
    }
}
