package dev.thresher.pgwire;

import static dev.thresher.pgwire.BackendReader.types;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.BackendReader.Message;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.MessageDigest;
import java.security.cert.X509Certificate;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.postgresql.util.PSQLException;

/**
 * TLS on pgwire: the server's pipeline on an {@link EmbeddedChannel} talking to a client {@link SslHandler} on
 * another, byte for byte; and real pgjdbc over real sockets.
 */
class PgWireTlsTest {
    private static final Map<String, String> STARTUP = Map.of("user", "thresher", "database", "thresher");
    private static final String RESULT = "{\"total\":42}";
    private static final String CALL = "CALL BINDING total_sales('{}')";

    @TempDir
    static Path dir;
    private static TestCertificates.Pem pem;
    private static PgTls tls;

    @BeforeAll
    static void certificate() throws Exception {
        pem = TestCertificates.write(dir);
        tls = PgTls.load(pem.certFile(), pem.keyFile());
    }

    private static PgWireConfig config(TlsMode mode) {
        return new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", null, "acme", Limits.DEFAULTS)
                .withTls(mode, tls);
    }

    private static SslContext client(String... alpn) throws IOException {
        SslContextBuilder b = SslContextBuilder.forClient().sslProvider(SslProvider.JDK).trustManager(pem.certFile().toFile());
        if (alpn.length > 0) {
            b.applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                    ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                    ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT, alpn));
        }
        return b.build();
    }

    /** The server's pipeline on one embedded channel; once TLS starts, a client TLS handler on another. */
    static final class Pair {
        final EmbeddedChannel server = new EmbeddedChannel();
        final PgWireProtocolTest.Calls calls = PgWireProtocolTest.Calls.returning(RESULT);
        EmbeddedChannel client;

        Pair(PgWireConfig config) {
            PgWireServer.configure(server.pipeline(), config, calls);
        }

        /** Sends {@code bytes} in clear text; what the server answered in clear text. */
        byte[] sendPlain(byte[] bytes) {
            server.writeInbound(Unpooled.wrappedBuffer(bytes));
            server.runPendingTasks();
            return drain(server, true);
        }

        /** Starts the client's TLS handshake and runs it to its end. */
        void startTls(SslContext context) {
            client = new EmbeddedChannel(context.newHandler(server.alloc(), "localhost", 5433));
            shuttle();
        }

        /** Sends {@code bytes} through TLS; what the server answered, decrypted. */
        byte[] sendTls(byte[] bytes) {
            client.writeOutbound(Unpooled.wrappedBuffer(bytes));
            shuttle();
            return drain(client, false);
        }

        /** Moves bytes between the two channels until neither has anything to send. */
        void shuttle() {
            boolean moved = true;
            while (moved) {
                moved = false;
                server.runPendingTasks();
                client.runPendingTasks();
                ByteBuf b;
                while ((b = client.readOutbound()) != null) {
                    moved = true;
                    if (server.isOpen()) {
                        server.writeInbound(b);
                    } else {
                        b.release();
                    }
                }
                while ((b = server.readOutbound()) != null) {
                    moved = true;
                    if (client.isOpen()) {
                        client.writeInbound(b);
                    } else {
                        b.release();
                    }
                }
            }
        }

        private static byte[] drain(EmbeddedChannel channel, boolean outbound) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            Object o;
            while ((o = outbound ? channel.readOutbound() : channel.readInbound()) != null) {
                ByteBuf buf = (ByteBuf) o;
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                buf.release();
                out.writeBytes(bytes);
            }
            return out.toByteArray();
        }
    }

    private static byte[] sha(String algorithm, X509Certificate certificate) {
        try {
            return MessageDigest.getInstance(algorithm).digest(certificate.getEncoded());
        } catch (java.security.GeneralSecurityException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void sslRequestIsAnsweredSAndTheStartupAndCallsFlowThroughTls() throws Exception {
        Pair p = new Pair(config(TlsMode.ENABLED));
        assertThat(p.sendPlain(new FrontendBytes().sslRequest().toByteArray())).containsExactly('S');
        assertThat(PgTls.isEncrypted(p.server)).isFalse();
        assertThat(tls.tlsServerEndPoint(p.server)).isEmpty();

        p.startTls(client());
        assertThat(PgTls.isEncrypted(p.server)).isTrue();
        List<Message> messages = BackendReader.read(p.sendTls(new FrontendBytes().startup(STARTUP).query(CALL)
                .toByteArray()), 0);
        assertThat(types(messages)).isEqualTo("R" + "S".repeat(13) + "KZTDCZ");
        assertThat(messages.get(messages.size() - 3).firstColumn()).isEqualTo(RESULT);
        assertThat(p.calls.requests).hasSize(1);

        // The channel-binding data: SHA-256 of the certificate's DER (signed SHA256withECDSA), as the client sees it.
        X509Certificate seen = (X509Certificate) p.client.pipeline().get(SslHandler.class).engine().getSession()
                .getPeerCertificates()[0];
        assertThat(tls.tlsServerEndPoint(p.server)).hasValueSatisfying(b -> assertThat(b).isEqualTo(sha("SHA-256", seen))
                .isEqualTo(sha("SHA-256", pem.certificate())));
    }

    @Test
    void requiredRefusesACleartextStartupWith28000() {
        Pair p = new Pair(config(TlsMode.REQUIRED));
        List<Message> messages = BackendReader.read(p.sendPlain(new FrontendBytes().startup(STARTUP).toByteArray()), 0);
        assertThat(types(messages)).isEqualTo("E");
        assertThat(messages.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "28000");
        assertThat(messages.get(0).errorFields().get('M')).contains("requires TLS");
        assertThat(messages.get(0).errorFields().get('D')).contains("thresher_code=" + ErrorCode.AUTHENTICATION_FAILED.code());
        assertThat(p.server.isOpen()).isFalse();
    }

    @Test
    void requiredServesAStartupOverTls() throws Exception {
        Pair p = new Pair(config(TlsMode.REQUIRED));
        assertThat(p.sendPlain(new FrontendBytes().sslRequest().toByteArray())).containsExactly('S');
        p.startTls(client());
        assertThat(types(BackendReader.read(p.sendTls(new FrontendBytes().startup(STARTUP).query(CALL).toByteArray()), 0)))
                .isEqualTo("R" + "S".repeat(13) + "KZTDCZ");
    }

    @Test
    void bytesPipelinedAfterTheSslRequestAreRefusedBeforeTheAnswer() {
        Pair p = new Pair(config(TlsMode.ENABLED));
        byte[] answer = p.sendPlain(new FrontendBytes().sslRequest().startup(STARTUP).query(CALL).toByteArray());
        List<Message> messages = BackendReader.read(answer, 0);
        assertThat(types(messages)).isEqualTo("E");
        assertThat(messages.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "08P01");
        assertThat(messages.get(0).errorFields().get('M')).contains("received unencrypted data after SSL request");
        assertThat(p.server.isOpen()).isFalse();
        assertThat(p.calls.requests).isEmpty();
    }

    @Test
    void disabledAnswersNAndServesCleartext() {
        Pair p = new Pair(config(TlsMode.DISABLED));
        assertThat(p.sendPlain(new FrontendBytes().sslRequest().toByteArray())).containsExactly('N');
        assertThat(types(BackendReader.read(p.sendPlain(new FrontendBytes().startup(STARTUP).toByteArray()), 0)))
                .isEqualTo("R" + "S".repeat(13) + "KZ");
        assertThat(PgTls.isEncrypted(p.server)).isFalse();
    }

    @Test
    void enabledStillServesCleartextAndRefusesASecondSslRequest() {
        Pair p = new Pair(config(TlsMode.ENABLED));
        assertThat(types(BackendReader.read(p.sendPlain(new FrontendBytes().gssEncRequest().toByteArray()), 1)))
                .isEqualTo("N");
        assertThat(types(BackendReader.read(p.sendPlain(new FrontendBytes().startup(STARTUP).toByteArray()), 0)))
                .isEqualTo("R" + "S".repeat(13) + "KZ");
        assertThat(tls.tlsServerEndPoint(p.server)).isEmpty();
    }

    @Test
    void aSecondSslRequestInsideTlsIsAProtocolViolation() throws Exception {
        Pair p = new Pair(config(TlsMode.ENABLED));
        assertThat(p.sendPlain(new FrontendBytes().sslRequest().toByteArray())).containsExactly('S');
        p.startTls(client());
        List<Message> messages = BackendReader.read(p.sendTls(new FrontendBytes().sslRequest().toByteArray()), 0);
        assertThat(types(messages)).isEqualTo("E");
        assertThat(messages.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "08P01");
        assertThat(p.server.isOpen()).isFalse();

        Pair direct = new Pair(config(TlsMode.ENABLED));
        direct.startTls(client(PgTls.ALPN_PROTOCOL));
        messages = BackendReader.read(direct.sendTls(new FrontendBytes().sslRequest().toByteArray()), 0);
        assertThat(types(messages)).isEqualTo("E");
        assertThat(messages.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "08P01");
        assertThat(direct.server.isOpen()).isFalse();
    }

    @Test
    void directTlsWithAlpnPostgresqlIsServed() throws Exception {
        Pair p = new Pair(config(TlsMode.REQUIRED));
        p.startTls(client(PgTls.ALPN_PROTOCOL));
        assertThat(PgTls.isEncrypted(p.server)).isTrue();
        assertThat(p.server.pipeline().names()).doesNotContain(PgTls.DIRECT_DETECTOR, PgTls.ALPN_GATE);
        assertThat(types(BackendReader.read(p.sendTls(new FrontendBytes().startup(STARTUP).query(CALL).toByteArray()), 0)))
                .isEqualTo("R" + "S".repeat(13) + "KZTDCZ");
        assertThat(tls.tlsServerEndPoint(p.server)).isPresent();
    }

    @Test
    void directTlsWithoutAlpnIsClosedAfterTheHandshake() throws Exception {
        Pair p = new Pair(config(TlsMode.ENABLED));
        p.startTls(client());
        assertThat(p.server.isOpen()).isFalse();
        assertThat(p.calls.requests).isEmpty();
    }

    @Test
    void aClientHelloToAServerWithoutTlsIsRefused() throws Exception {
        EmbeddedChannel client = new EmbeddedChannel(client(PgTls.ALPN_PROTOCOL).newHandler(
                io.netty.buffer.ByteBufAllocator.DEFAULT, "localhost", 5433));
        byte[] hello = Pair.drain(client, true);
        client.finishAndReleaseAll();
        assertThat(hello[0]).isEqualTo((byte) PgTls.TLS_HANDSHAKE_RECORD);
        Pair p = new Pair(config(TlsMode.DISABLED));
        List<Message> messages = BackendReader.read(p.sendPlain(hello), 0);
        assertThat(types(messages)).isEqualTo("E");
        assertThat(messages.get(0).errorFields()).containsEntry('S', "FATAL");
        assertThat(p.server.isOpen()).isFalse();
    }

    @ParameterizedTest
    @CsvSource({"EC, SHA256withECDSA, SHA-256", "EC, SHA384withECDSA, SHA-384", "EC, SHA512withECDSA, SHA-512",
            "RSA, SHA1withRSA, SHA-256", "RSA, SHA256withRSA, SHA-256", "RSA, SHA512withRSA, SHA-512"})
    void channelBindingHashesTheCertificateWithItsSignatureHashOrSha256(String keyType, String signature, String digest)
            throws Exception {
        KeyPair keys = keyType.equals("EC") ? TestCertificates.ec() : TestCertificates.rsa();
        X509Certificate certificate = TestCertificates.selfSigned(keys, signature);
        assertThat(PgTls.endPointDigest(certificate)).isEqualTo(digest);
        assertThat(PgTls.serverEndPoint(certificate)).hasValueSatisfying(b -> assertThat(b).isEqualTo(sha(digest, certificate)));
    }

    @Test
    void noChannelBindingForEd25519Certificates() throws Exception {
        X509Certificate certificate = TestCertificates.selfSigned(TestCertificates.ed25519(), "Ed25519");
        assertThat(PgTls.serverEndPoint(certificate)).isEmpty();
    }

    @Test
    void loadRefusesMissingUnreadableAndMismatchedFiles(@TempDir Path other) throws Exception {
        assertThatThrownBy(() -> PgTls.load(other.resolve("none.pem"), pem.keyFile()))
                .isInstanceOf(ThresherException.class).hasMessageContaining("none.pem")
                .satisfies(e -> assertThat(((ThresherException) e).code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION));
        Path garbage = Files.writeString(other.resolve("garbage.pem"), "not a certificate\n");
        assertThatThrownBy(() -> PgTls.load(garbage, pem.keyFile()))
                .isInstanceOf(ThresherException.class).hasMessageContaining("garbage.pem");
        assertThatThrownBy(() -> PgTls.load(pem.certFile(), garbage))
                .isInstanceOf(ThresherException.class).hasMessageContaining("garbage.pem");
        assertThatThrownBy(() -> PgTls.load(pem.certFile(), other.resolve("nokey.pem")))
                .isInstanceOf(ThresherException.class).hasMessageContaining("nokey.pem");
        // A key of another certificate: the in-memory handshake fails.
        TestCertificates.Pem another = TestCertificates.write(Files.createDirectories(other.resolve("another")));
        assertThatThrownBy(() -> PgTls.load(pem.certFile(), another.keyFile()))
                .isInstanceOf(ThresherException.class).hasMessageContaining("does the key belong to the first certificate?")
                .satisfies(e -> assertThat(((ThresherException) e).code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION));
        // An RSA certificate and key work as well as EC ones.
        KeyPair rsa = TestCertificates.rsa();
        TestCertificates.Pem rsaPem = TestCertificates.write(Files.createDirectories(other.resolve("rsa")),
                TestCertificates.selfSigned(rsa, "SHA256withRSA"), rsa);
        assertThat(PgTls.load(rsaPem.certFile(), rsaPem.keyFile()).certificate()).isEqualTo(rsaPem.certificate());
    }

    @Test
    void configNeedsTlsUnlessDisabled() {
        PgWireConfig plain = new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", null, "acme", Limits.DEFAULTS);
        assertThat(plain.tlsMode()).isEqualTo(TlsMode.DISABLED);
        assertThatThrownBy(() -> plain.withTls(TlsMode.REQUIRED, null)).isInstanceOf(IllegalArgumentException.class);
        assertThat(plain.withTls(TlsMode.DISABLED, tls).tls()).isNull();
        assertThat(TlsMode.parse(" Required ")).isEqualTo(TlsMode.REQUIRED);
        assertThatThrownBy(() -> TlsMode.parse("on")).hasMessageContaining("disabled, enabled or required");
    }

    // ---- real sockets

    private static Connection connect(PgWireServer server, Properties p) throws SQLException {
        p.setProperty("user", "thresher");
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "30");
        return DriverManager.getConnection("jdbc:postgresql://localhost:" + server.port() + "/thresher", p);
    }

    private static Properties props(String... pairs) {
        Properties p = new Properties();
        for (int i = 0; i < pairs.length; i += 2) {
            p.setProperty(pairs[i], pairs[i + 1]);
        }
        return p;
    }

    private static String call(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(CALL)) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }

    @Test
    void pgjdbcVerifiesTheCertificateAndCallsOverTlsAndDirectTls() throws Exception {
        try (PgWireServer server = PgWireServer.start(config(TlsMode.REQUIRED), new TestCallService())) {
            String root = pem.certFile().toString();
            try (Connection c = connect(server, props("sslmode", "verify-full", "sslrootcert", root))) {
                assertThat(call(c)).isEqualTo(TestCallService.RESULT);
            }
            try (Connection c = connect(server, props("sslmode", "verify-full", "sslrootcert", root,
                    "sslNegotiation", "direct"))) {
                assertThat(call(c)).isEqualTo(TestCallService.RESULT);
            }
            assertThatThrownBy(() -> connect(server, props("sslmode", "disable")))
                    .isInstanceOf(PSQLException.class)
                    .satisfies(e -> assertThat(((PSQLException) e).getSQLState()).isEqualTo("28000"));
        }
    }

    @Test
    void aRawSocketGetsNWithoutTlsAndSWithIt() throws Exception {
        for (TlsMode mode : List.of(TlsMode.DISABLED, TlsMode.ENABLED)) {
            try (PgWireServer server = PgWireServer.start(config(mode), new TestCallService());
                 Socket socket = new Socket("127.0.0.1", server.port())) {
                socket.setSoTimeout(10_000);
                OutputStream out = socket.getOutputStream();
                out.write(new FrontendBytes().sslRequest().toByteArray());
                out.flush();
                InputStream in = new DataInputStream(socket.getInputStream());
                assertThat((char) in.read()).as("answer with tls %s", mode).isEqualTo(mode == TlsMode.DISABLED ? 'N' : 'S');
            }
        }
    }
}
