package dev.thresher.pgwire;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Self-signed certificates for {@code localhost} and {@code 127.0.0.1}, made with BouncyCastle, written as PEM: the
 * certificate, and the key as PKCS#8 ({@code BEGIN PRIVATE KEY}).
 */
final class TestCertificates {
    /** A certificate and key written to files. */
    record Pem(Path certFile, Path keyFile, X509Certificate certificate, KeyPair keys) {
    }

    private TestCertificates() {
    }

    static KeyPair ec() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    static KeyPair rsa() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        return g.generateKeyPair();
    }

    static KeyPair ed25519() throws GeneralSecurityException {
        return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
    }

    /** A self-signed EC certificate signed with SHA256withECDSA, in {@code dir}. */
    static Pem write(Path dir) throws Exception {
        KeyPair keys = ec();
        return write(dir, selfSigned(keys, "SHA256withECDSA"), keys);
    }

    static Pem write(Path dir, X509Certificate certificate, KeyPair keys) throws IOException, GeneralSecurityException {
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        Files.writeString(cert, pem("CERTIFICATE", certificate.getEncoded()));
        Files.writeString(key, pem("PRIVATE KEY", keys.getPrivate().getEncoded()));
        return new Pem(cert, key, certificate, keys);
    }

    /** A certificate for {@code localhost} and {@code 127.0.0.1} signed by its own key with {@code algorithm}. */
    static X509Certificate selfSigned(KeyPair keys, String algorithm) throws Exception {
        X500Principal name = new X500Principal("CN=localhost");
        Instant now = Instant.now();
        JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(name, BigInteger.valueOf(now.toEpochMilli()),
                Date.from(now.minus(Duration.ofMinutes(5))), Date.from(now.plus(Duration.ofDays(2))), name, keys.getPublic());
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyCertSign
                | (keys.getPublic().getAlgorithm().equals("RSA") ? KeyUsage.keyEncipherment : 0)));
        builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
        builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
                new GeneralName(GeneralName.dNSName, "localhost"), new GeneralName(GeneralName.iPAddress, "127.0.0.1")}));
        try {
            return new JcaX509CertificateConverter().getCertificate(builder.build(
                    new JcaContentSignerBuilder(algorithm).build(keys.getPrivate())));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException(e);
        }
    }

    static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + new String(Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encode(der),
                StandardCharsets.US_ASCII)
                + "\n-----END " + type + "-----\n";
    }
}
