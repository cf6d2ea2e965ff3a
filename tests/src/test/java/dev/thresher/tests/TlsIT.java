package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.limits.Limits;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.dev.SelfSignedCertificate;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;

/**
 * TLS with real clients on real sockets: the shared dev cluster offers TLS on pgwire with its self-signed certificate
 * (pgjdbc and psql with {@code sslmode=require} and {@code verify-full}); a node process of its own configured with
 * {@code tls.certFile}, {@code tls.keyFile}, {@code pgwire.tls=required} and {@code http.tls=enabled} refuses
 * cleartext pgwire with 28000 and serves HTTPS only, which Java's HttpClient reaches trusting that certificate.
 */
class TlsIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PASSWORD = "tls-it-password";
    private static final String CALL = "CALL BINDING " + DevCluster.SAMPLE_BINDING + "('{}')";

    private static DevCluster databases;
    private static NodeProcesses nodes;
    private static SelfSignedCertificate certificate;
    private static HttpClient https;
    private static final String ADMIN_TOKEN = "tls-it-admin-token-" + java.util.UUID.randomUUID();

    @BeforeAll
    static void start() throws Exception {
        Path dir = Files.createTempDirectory("thresher-tls-");
        databases = DevCluster.start(new DevCluster.Options(dir, 0, 2_000, 4, 1, 42, Limits.DEFAULTS, false)
                .withoutNodes());
        certificate = SelfSignedCertificate.generate(dir.resolve("node-tls"));
        https = HttpClient.newBuilder().sslContext(trusting(certificate.certFile()))
                .connectTimeout(Duration.ofSeconds(5)).build();
        nodes = new NodeProcesses(databases, dir, Map.of());
        nodes.httpClient(https);
        nodes.start(1, Map.of("tls.certFile", certificate.certFile().toString(),
                "tls.keyFile", certificate.keyFile().toString(), "pgwire.tls", "required", "http.tls", "enabled",
                "pgwire.auth", "password", "pgwire.password", PASSWORD, "http.adminToken", ADMIN_TOKEN));
    }

    @AfterAll
    static void stop() {
        if (nodes != null) {
            nodes.close();
        }
        if (databases != null) {
            databases.close();
        }
    }

    /** A TLS context that trusts the one certificate in {@code certFile}. */
    static SSLContext trusting(Path certFile) throws Exception {
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(certFile)) {
            trust.setCertificateEntry("thresher", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, tmf.getTrustManagers(), null);
        return context;
    }

    private static Connection connect(int port, String password, String... properties) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", password);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "60");
        for (int i = 0; i < properties.length; i += 2) {
            p.setProperty(properties[i], properties[i + 1]);
        }
        return DriverManager.getConnection("jdbc:postgresql://localhost:" + port + "/thresher", p);
    }

    /** The sample binding's result through {@code c}, retried while partitions settle after a start (40001). */
    private static JsonNode call(Connection c) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(CALL)) {
                assertThat(rs.next()).isTrue();
                return JSON.readTree(rs.getString(1));
            } catch (SQLException e) {
                if (!"40001".equals(e.getSQLState()) || System.nanoTime() > until) {
                    throw e;
                }
            }
        }
    }

    private static int port(String address) {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    record Run(int exitCode, String out) {
    }

    /** psql with a libpq connection string, bounded to 60 s; standard error merged into the output. */
    private static Run psql(String conninfo, String password, String... commands) throws Exception {
        List<String> command = new ArrayList<>(List.of("psql", conninfo, "-X", "-At"));
        for (String c : commands) {
            command.addAll(List.of("-c", c));
        }
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        pb.environment().put("PGCONNECT_TIMEOUT", "10");
        pb.environment().put("PGPASSWORD", password);
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("psql did not finish within 60 s");
        }
        return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    // ---- the dev cluster: TLS offered with its self-signed certificate

    @Test
    void pgjdbcCallsTheDevClusterOverTlsWithRequireAndVerifyFull() throws Exception {
        DevCluster cluster = Cluster.get();
        int port = port(cluster.nodes().get(0).pgwireAddress());
        String root = cluster.caCertFile().toString();
        assertThat(cluster.endpoints()).containsEntry("caCert", root);
        try (Connection c = connect(port, DevCluster.PASSWORD, "sslmode", "require")) {
            assertThat(call(c).size()).isEqualTo(DevCluster.REGIONS.size());
        }
        try (Connection c = connect(port, DevCluster.PASSWORD, "sslmode", "verify-full", "sslrootcert", root)) {
            assertThat(call(c).size()).isEqualTo(DevCluster.REGIONS.size());
        }
        // SCRAM-SHA-256-PLUS: the login is bound to the certificate this TLS connection presented
        try (Connection c = connect(port, DevCluster.PASSWORD, "sslmode", "verify-full", "sslrootcert", root,
                "channelBinding", "require")) {
            assertThat(call(c).size()).isEqualTo(DevCluster.REGIONS.size());
        }
        // A certificate the client does not trust: verify-full refuses it.
        assertThatThrownBy(() -> connect(port, DevCluster.PASSWORD, "sslmode", "verify-full", "sslrootcert",
                certificate.certFile().toString())).isInstanceOf(PSQLException.class);
    }

    @Test
    void psqlCallsTheDevClusterOverTlsWithRequireAndVerifyFull() throws Exception {
        DevCluster cluster = Cluster.get();
        int port = port(cluster.nodes().get(0).pgwireAddress());
        for (String mode : List.of("sslmode=require", "sslmode=verify-full sslrootcert=" + cluster.caCertFile(),
                "sslmode=require channel_binding=require")) {
            Run r = psql("host=localhost port=" + port + " dbname=thresher user=thresher " + mode,
                    DevCluster.PASSWORD, "\\conninfo", CALL);
            assertThat(r.exitCode()).as(r.out()).isZero();
            assertThat(r.out()).as(mode).contains("SSL connection (protocol: TLSv1.").contains("\"europe\"");
        }
    }

    // ---- a node of its own: pgwire.tls=required, http.tls=enabled

    @Test
    void aTlsOnlyNodeServesPgjdbcOverTlsAndRefusesCleartextWith28000() throws Exception {
        int port = port(nodes.pgwireAddress(1));
        String root = certificate.certFile().toString();
        try (Connection c = connect(port, PASSWORD, "sslmode", "require")) {
            assertThat(call(c).size()).isEqualTo(DevCluster.REGIONS.size());
        }
        try (Connection c = connect(port, PASSWORD, "sslmode", "verify-full", "sslrootcert", root)) {
            assertThat(call(c).size()).isEqualTo(DevCluster.REGIONS.size());
        }
        try (Connection c = connect(port, PASSWORD, "sslmode", "verify-full", "sslrootcert", root,
                "sslNegotiation", "direct")) {
            assertThat(call(c).size()).isEqualTo(DevCluster.REGIONS.size());
        }
        assertThatThrownBy(() -> connect(port, PASSWORD, "sslmode", "disable"))
                .isInstanceOf(PSQLException.class)
                .satisfies(e -> assertThat(((PSQLException) e).getSQLState()).isEqualTo("28000"))
                .hasMessageContaining("requires TLS");
    }

    @Test
    void aTlsOnlyNodeServesPsqlOverTlsAndRefusesItsCleartext() throws Exception {
        int port = port(nodes.pgwireAddress(1));
        String base = "host=localhost port=" + port + " dbname=thresher user=thresher ";
        Run verified = psql(base + "sslmode=verify-full sslrootcert=" + certificate.certFile(), PASSWORD, "\\conninfo", CALL);
        assertThat(verified.exitCode()).as(verified.out()).isZero();
        assertThat(verified.out()).contains("SSL connection (protocol: TLSv1.").contains("\"europe\"");
        Run required = psql(base + "sslmode=require", PASSWORD, CALL);
        assertThat(required.exitCode()).as(required.out()).isZero();
        assertThat(required.out()).contains("\"europe\"");
        Run cleartext = psql(base + "sslmode=disable", PASSWORD, CALL);
        assertThat(cleartext.exitCode()).as(cleartext.out()).isNotZero();
        assertThat(cleartext.out()).contains("requires TLS");
    }

    @Test
    void aTlsOnlyNodeServesHttpsOnly() throws Exception {
        String address = httpAddress();
        assertThat(address).startsWith("https://127.0.0.1:");
        HttpResponse<String> ready = https.send(HttpRequest.newBuilder(URI.create(address + "/readyz"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(ready.statusCode()).isEqualTo(200);
        assertThat(ready.body()).contains("ready");
        HttpResponse<String> call = https.send(HttpRequest.newBuilder(URI.create(address + "/v1/bindings/"
                        + DevCluster.SAMPLE_BINDING + "/call")).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + ADMIN_TOKEN)
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(call.statusCode()).as(call.body()).isEqualTo(200);
        assertThat(JSON.readTree(call.body()).get("result").size()).isEqualTo(DevCluster.REGIONS.size());

        // Plain HTTP to the HTTPS port gets no answer; a client that does not trust the certificate gets none either.
        HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        assertThatThrownBy(() -> plain.send(HttpRequest.newBuilder(URI.create(address.replace("https://", "http://")
                + "/readyz")).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(IOException.class);
        assertThatThrownBy(() -> plain.send(HttpRequest.newBuilder(URI.create(address + "/readyz"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(javax.net.ssl.SSLHandshakeException.class);
    }

    private static String httpAddress() throws Exception {
        try (Connection c = nodes.control(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT http_address FROM hosts WHERE host_id = '" + NodeProcesses.id(1) + "'")) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }
}
