package dev.thresher.server.dev;

import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.PgTls;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A self-signed certificate (EC P-256, SHA256withECDSA, {@code CN=localhost}, subject alternative names
 * {@code localhost}, {@code 127.0.0.1} and {@code ::1}) written as PEM: {@code cert.pem}, and {@code key.pem} as
 * PKCS#8, readable by its owner only. The dev cluster serves pgwire over TLS with one; clients trust it as its own
 * root ({@code sslmode=verify-full sslrootcert=cert.pem}).
 *
 * @param certFile the certificate, PEM
 * @param keyFile its private key, PEM PKCS#8 ({@code -----BEGIN PRIVATE KEY-----}), mode 600
 * @param certificate the certificate itself
 */
public record SelfSignedCertificate(Path certFile, Path keyFile, X509Certificate certificate) {
    private static final Logger log = LoggerFactory.getLogger(SelfSignedCertificate.class);

    /** How long a new certificate is valid. */
    public static final Duration VALIDITY = Duration.ofDays(365);
    /** A certificate valid for less than this much longer is replaced by {@link #ensure}. */
    public static final Duration RENEW_BEFORE = Duration.ofDays(30);

    public static final String CERT_FILE = "cert.pem";
    public static final String KEY_FILE = "key.pem";

    /**
     * The certificate in {@code dir} when it is there, valid for at least {@link #RENEW_BEFORE} more and usable with
     * its key; else a new one, written over whatever was there.
     */
    public static SelfSignedCertificate ensure(Path dir) throws IOException {
        Path cert = dir.resolve(CERT_FILE);
        Path key = dir.resolve(KEY_FILE);
        if (Files.isRegularFile(cert) && Files.isRegularFile(key)) {
            try {
                X509Certificate existing = read(cert);
                existing.checkValidity(Date.from(Instant.now().plus(RENEW_BEFORE)));
                PgTls.load(cert, key); // the key belongs to it, and a TLS server works with the pair
                return new SelfSignedCertificate(cert, key, existing);
            } catch (GeneralSecurityException | ThresherException | IOException e) {
                log.info("replacing the certificate in {}: {}", dir, e.getMessage());
            }
        }
        return generate(dir);
    }

    /** A new certificate and key in {@code dir}, valid for {@link #VALIDITY}. */
    public static SelfSignedCertificate generate(Path dir) throws IOException {
        return generate(dir, VALIDITY);
    }

    /** A new certificate and key in {@code dir}, valid from five minutes ago for {@code validity}. */
    public static SelfSignedCertificate generate(Path dir, Duration validity) throws IOException {
        Files.createDirectories(dir);
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"));
            KeyPair keys = generator.generateKeyPair();
            X509Certificate certificate = certificate(keys, validity);
            Path cert = dir.resolve(CERT_FILE);
            Path key = dir.resolve(KEY_FILE);
            Path keyTmp = dir.resolve(KEY_FILE + ".tmp");
            DevCluster.ownerOnly(keyTmp);
            Files.writeString(keyTmp, pem("PRIVATE KEY", keys.getPrivate().getEncoded()));
            Path certTmp = dir.resolve(CERT_FILE + ".tmp");
            Files.writeString(certTmp, pem("CERTIFICATE", certificate.getEncoded()));
            Files.move(keyTmp, key, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            Files.move(certTmp, cert, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            log.info("generated a self-signed certificate for localhost in {} (valid until {})", cert,
                    certificate.getNotAfter().toInstant());
            return new SelfSignedCertificate(cert, key, certificate);
        } catch (GeneralSecurityException | OperatorCreationException e) {
            throw new IllegalStateException("cannot generate a self-signed certificate: " + e.getMessage(), e);
        }
    }

    private static X509Certificate certificate(KeyPair keys, Duration validity)
            throws GeneralSecurityException, OperatorCreationException, IOException {
        X500Principal name = new X500Principal("CN=localhost");
        Instant now = Instant.now();
        byte[] serial = new byte[16];
        new SecureRandom().nextBytes(serial);
        JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(name, new BigInteger(1, serial),
                Date.from(now.minus(Duration.ofMinutes(5))), Date.from(now.plus(validity)), name, keys.getPublic());
        // Its own root: clients trust it with sslrootcert= (libpq, pgjdbc) or a trust store of this one certificate.
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyCertSign));
        builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
        List<GeneralName> names = new ArrayList<>(List.of(new GeneralName(GeneralName.dNSName, "localhost"),
                new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.iPAddress, "::1")));
        builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(GeneralName[]::new)));
        return new JcaX509CertificateConverter().getCertificate(
                builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(keys.getPrivate())));
    }

    private static X509Certificate read(Path cert) throws IOException, GeneralSecurityException {
        try (InputStream in = Files.newInputStream(cert)) {
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    /** {@code der} as a PEM block of {@code type}, 64 characters a line. */
    public static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + new String(Base64.getMimeEncoder(64, new byte[] {'\n'}).encode(der), StandardCharsets.US_ASCII)
                + "\n-----END " + type + "-----\n";
    }
}
