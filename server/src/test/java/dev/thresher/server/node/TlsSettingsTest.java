package dev.thresher.server.node;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.PgTls;
import dev.thresher.pgwire.TlsMode;
import dev.thresher.server.dev.SelfSignedCertificate;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code tls.*}, {@code pgwire.tls} and {@code http.tls}; the dev cluster's self-signed certificate. */
class TlsSettingsTest {
    @TempDir
    Path dir;

    private static Map<String, String> minimal() {
        Map<String, String> p = new HashMap<>();
        p.put("node.id", "n1");
        p.put("node.shardId", "1");
        p.put("control.jdbcUrl", "jdbc:postgresql://db/control");
        p.put("shard.jdbcUrl", "jdbc:postgresql://db/shard1");
        return p;
    }

    private Map<String, String> withCertificate() throws Exception {
        SelfSignedCertificate c = SelfSignedCertificate.generate(dir);
        Map<String, String> p = minimal();
        p.put("tls.certFile", c.certFile().toString());
        p.put("tls.keyFile", c.keyFile().toString());
        return p;
    }

    @Test
    void withoutACertificateNothingSpeaksTls() {
        NodeConfig c = NodeConfig.fromProperties(minimal());
        assertThat(c.tls()).isEqualTo(TlsSettings.NONE);
        assertThat(c.tls().load().pgwire()).isNull();
        assertThat(c.tls().load().http()).isNull();
    }

    @Test
    void aCertificateEnablesPgwireTlsByDefaultAndLeavesHttpPlain() throws Exception {
        NodeConfig c = NodeConfig.fromProperties(withCertificate());
        assertThat(c.tls().pgwire()).isEqualTo(TlsMode.ENABLED);
        assertThat(c.tls().https()).isFalse();
        TlsSettings.Loaded loaded = c.tls().load();
        assertThat(loaded.pgwire()).isNotNull();
        assertThat(loaded.http()).isNull();
    }

    @Test
    void modesAreRead() throws Exception {
        Map<String, String> p = withCertificate();
        p.put("pgwire.tls", "required");
        p.put("http.tls", "enabled");
        NodeConfig c = NodeConfig.fromProperties(p);
        assertThat(c.tls().pgwire()).isEqualTo(TlsMode.REQUIRED);
        assertThat(c.tls().https()).isTrue();
        assertThat(c.tls().load().http()).isNotNull();
        p.put("pgwire.tls", "disabled");
        assertThat(NodeConfig.fromProperties(p).tls().load().pgwire()).isNull();
    }

    @Test
    void badSettingsAreNamedTogether() throws Exception {
        Map<String, String> p = minimal();
        p.put("pgwire.tls", "required");
        p.put("http.tls", "enabled");
        assertThatThrownBy(() -> NodeConfig.fromProperties(p))
                .hasMessageContaining("pgwire.tls=required needs a certificate")
                .hasMessageContaining("http.tls=enabled needs a certificate");
        Map<String, String> q = withCertificate();
        q.put("pgwire.tls", "maybe");
        q.put("http.tls", "yes");
        q.remove("tls.keyFile");
        assertThatThrownBy(() -> NodeConfig.fromProperties(q))
                .hasMessageContaining("pgwire.tls must be disabled, enabled or required, was 'maybe'")
                .hasMessageContaining("http.tls must be disabled or enabled, was 'yes'")
                .hasMessageContaining("tls.certFile and tls.keyFile go together");
        Map<String, String> r = withCertificate();
        r.put("tls.keyFile", dir.resolve("missing.pem").toString());
        assertThatThrownBy(() -> NodeConfig.fromProperties(r)).hasMessageContaining("tls.keyFile names no readable file")
                .hasMessageContaining("missing.pem");
    }

    @Test
    void aKeyOfAnotherCertificateIsRefusedAtLoad() throws Exception {
        Map<String, String> p = withCertificate();
        SelfSignedCertificate other = SelfSignedCertificate.generate(Files.createDirectories(dir.resolve("other")));
        p.put("tls.keyFile", other.keyFile().toString());
        TlsSettings tls = NodeConfig.fromProperties(p).tls();
        assertThatThrownBy(tls::load).isInstanceOf(ThresherException.class)
                .hasMessageContaining("tls.certFile, tls.keyFile")
                .satisfies(e -> assertThat(((ThresherException) e).code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION));
    }

    @Test
    void theSelfSignedCertificateIsKeptWhileValidAndItsKeyIsTheOwnersOnly() throws Exception {
        SelfSignedCertificate first = SelfSignedCertificate.ensure(dir);
        assertThat(Files.getPosixFilePermissions(first.keyFile())).isEqualTo(PosixFilePermissions.fromString("rw-------"));
        assertThat(Files.readString(first.keyFile())).startsWith("-----BEGIN PRIVATE KEY-----\n");
        assertThat(first.certificate().getSubjectAlternativeNames().stream().map(n -> String.valueOf(n.get(1))))
                .contains("localhost", "127.0.0.1");
        assertThat(SelfSignedCertificate.ensure(dir).certificate()).isEqualTo(first.certificate());
        // One that expires within 30 days is replaced, as is one whose key does not match.
        SelfSignedCertificate shortLived = SelfSignedCertificate.generate(dir, Duration.ofDays(10));
        assertThat(SelfSignedCertificate.ensure(dir).certificate()).isNotEqualTo(shortLived.certificate());
        SelfSignedCertificate kept = SelfSignedCertificate.ensure(dir);
        Files.copy(SelfSignedCertificate.generate(dir.resolve("other")).keyFile(), kept.keyFile(),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        assertThat(SelfSignedCertificate.ensure(dir).certificate()).isNotEqualTo(kept.certificate());
    }

    @Test
    void aNodeReadsPkcs1AndSec1KeysToo() throws Exception {
        // An RSA key in PKCS#1 (BEGIN RSA PRIVATE KEY) and an EC key in SEC 1 (BEGIN EC PRIVATE KEY), as older openssl
        // commands write them: the structure inside PKCS#8's PrivateKeyInfo, read by BouncyCastle on a node's class path.
        KeyPairGenerator rsa = KeyPairGenerator.getInstance("RSA");
        rsa.initialize(2048);
        KeyPair rsaKeys = rsa.generateKeyPair();
        X500Principal name = new X500Principal("CN=localhost");
        Instant now = Instant.now();
        X509Certificate rsaCertificate = new JcaX509CertificateConverter().getCertificate(new JcaX509v3CertificateBuilder(
                name, BigInteger.ONE, Date.from(now.minusSeconds(60)), Date.from(now.plusSeconds(86_400)), name,
                rsaKeys.getPublic()).build(new JcaContentSignerBuilder("SHA256withRSA").build(rsaKeys.getPrivate())));
        Path rsaCert = Files.writeString(dir.resolve("rsa.pem"), SelfSignedCertificate.pem("CERTIFICATE",
                rsaCertificate.getEncoded()));
        Path rsaKey = Files.writeString(dir.resolve("rsa.key"), SelfSignedCertificate.pem("RSA PRIVATE KEY",
                inner(rsaKeys.getPrivate().getEncoded())));
        assertThat(PgTls.load(rsaCert, rsaKey).certificate()).isEqualTo(rsaCertificate);

        SelfSignedCertificate ec = SelfSignedCertificate.generate(dir);
        String pkcs8 = Files.readString(ec.keyFile()).replaceAll("-----[^-]+-----|\\s", "");
        // SEC 1 as openssl writes it names the curve ([0] parameters) and holds the public key ([1]) inside.
        PrivateKeyInfo info = PrivateKeyInfo.getInstance(Base64.getDecoder().decode(pkcs8));
        org.bouncycastle.asn1.sec.ECPrivateKey inner = org.bouncycastle.asn1.sec.ECPrivateKey.getInstance(info.parsePrivateKey());
        byte[] sec1 = new org.bouncycastle.asn1.sec.ECPrivateKey(256, inner.getKey(),
                org.bouncycastle.asn1.x509.SubjectPublicKeyInfo.getInstance(ec.certificate().getPublicKey().getEncoded())
                        .getPublicKeyData(), info.getPrivateKeyAlgorithm().getParameters()).getEncoded();
        Path ecKey = Files.writeString(dir.resolve("ec.key"), SelfSignedCertificate.pem("EC PRIVATE KEY", sec1));
        assertThat(PgTls.load(ec.certFile(), ecKey).certificate()).isEqualTo(ec.certificate());
    }

    /** The algorithm's own key structure inside a PKCS#8 PrivateKeyInfo. */
    private static byte[] inner(byte[] pkcs8) throws java.io.IOException {
        return PrivateKeyInfo.getInstance(pkcs8).parsePrivateKey().toASN1Primitive().getEncoded();
    }
}
