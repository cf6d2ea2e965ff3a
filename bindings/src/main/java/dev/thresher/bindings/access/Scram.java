package dev.thresher.bindings.access;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.Objects;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL keeps and checks passwords: the verifier
 * {@code SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>} (base64), 4096 iterations by default, the
 * password normalized before hashing.
 */
public final class Scram {
    /** PostgreSQL's {@code scram_iterations} default. */
    public static final int DEFAULT_ITERATIONS = 4096;
    /** The salt's length in bytes, as PostgreSQL's. */
    public static final int SALT_BYTES = 16;
    /** The fewest iterations a stored verifier may have. */
    public static final int MIN_ITERATIONS = 4096;
    /** The most iterations a stored verifier may have: bounds the work one login costs. */
    public static final int MAX_ITERATIONS = 1 << 20;

    private static final SecureRandom RANDOM = new SecureRandom();

    private Scram() {
    }

    /**
     * A stored password: what the server keeps instead of the password.
     *
     * @param iterations PBKDF2 iterations
     * @param salt the salt
     * @param storedKey {@code H(HMAC(SaltedPassword, "Client Key"))}
     * @param serverKey {@code HMAC(SaltedPassword, "Server Key")}
     */
    public record Verifier(int iterations, byte[] salt, byte[] storedKey, byte[] serverKey) {
        public Verifier {
            Objects.requireNonNull(salt, "salt");
            Objects.requireNonNull(storedKey, "storedKey");
            Objects.requireNonNull(serverKey, "serverKey");
            if (iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) {
                throw new IllegalArgumentException("iterations must be in [" + MIN_ITERATIONS + ", " + MAX_ITERATIONS
                        + "], was " + iterations);
            }
            if (salt.length == 0 || storedKey.length != 32 || serverKey.length != 32) {
                throw new IllegalArgumentException("a SCRAM-SHA-256 verifier has a salt and two 32-byte keys");
            }
            salt = salt.clone();
            storedKey = storedKey.clone();
            serverKey = serverKey.clone();
        }

        @Override
        public byte[] salt() {
            return salt.clone();
        }

        @Override
        public byte[] storedKey() {
            return storedKey.clone();
        }

        @Override
        public byte[] serverKey() {
            return serverKey.clone();
        }

        /** PostgreSQL's text form, as {@code pg_authid.rolpassword} holds it. */
        public String text() {
            Base64.Encoder b64 = Base64.getEncoder();
            return "SCRAM-SHA-256$" + iterations + ":" + b64.encodeToString(salt) + "$" + b64.encodeToString(storedKey)
                    + ":" + b64.encodeToString(serverKey);
        }

        /**
         * Parses PostgreSQL's text form.
         *
         * @throws IllegalArgumentException when {@code text} is not one
         */
        public static Verifier parse(String text) {
            if (text == null || !text.startsWith("SCRAM-SHA-256$")) {
                throw new IllegalArgumentException("not a SCRAM-SHA-256 verifier");
            }
            String[] parts = text.substring("SCRAM-SHA-256$".length()).split("\\$", -1);
            if (parts.length != 2) {
                throw new IllegalArgumentException("a SCRAM-SHA-256 verifier is SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>");
            }
            String[] head = parts[0].split(":", -1);
            String[] keys = parts[1].split(":", -1);
            if (head.length != 2 || keys.length != 2) {
                throw new IllegalArgumentException("a SCRAM-SHA-256 verifier is SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>");
            }
            try {
                Base64.Decoder b64 = Base64.getDecoder();
                return new Verifier(Integer.parseInt(head[0]), b64.decode(head[1]), b64.decode(keys[0]),
                        b64.decode(keys[1]));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("malformed SCRAM-SHA-256 verifier: " + e.getMessage());
            }
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Verifier v && iterations == v.iterations && Arrays.equals(salt, v.salt)
                    && Arrays.equals(storedKey, v.storedKey) && Arrays.equals(serverKey, v.serverKey);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(storedKey);
        }

        /** Never the keys: they let anyone who reads them log in to this server. */
        @Override
        public String toString() {
            return "Verifier[SCRAM-SHA-256, " + iterations + " iterations]";
        }
    }

    /** A new verifier for {@code password} with a random salt and {@value #DEFAULT_ITERATIONS} iterations. */
    public static Verifier verifier(String password) {
        byte[] salt = new byte[SALT_BYTES];
        RANDOM.nextBytes(salt);
        return verifier(password, salt, DEFAULT_ITERATIONS);
    }

    /** The verifier of {@code password} under {@code salt} and {@code iterations}. */
    public static Verifier verifier(String password, byte[] salt, int iterations) {
        byte[] salted = saltedPassword(normalize(password), salt, iterations);
        byte[] clientKey = hmac(salted, "Client Key");
        return new Verifier(iterations, salt, sha256(clientKey), hmac(salted, "Server Key"));
    }

    /** Whether {@code password} is the one {@code verifier} keeps (for a password sent in clear, over TLS). */
    public static boolean matches(Verifier verifier, String password) {
        Verifier computed = verifier(password, verifier.salt(), verifier.iterations());
        return MessageDigest.isEqual(computed.storedKey(), verifier.storedKey())
                & MessageDigest.isEqual(computed.serverKey(), verifier.serverKey());
    }

    /** The password as hashed: SASLprep's result, exactly as PostgreSQL and libpq compute it ({@link Saslprep}). */
    static byte[] normalize(String password) {
        return Saslprep.prepare(password);
    }

    static byte[] saltedPassword(byte[] password, byte[] salt, int iterations) {
        // PBKDF2-HMAC-SHA-256 with one output block: Hi(password, salt, i) of RFC 5802; an empty HMAC key is the
        // same as a key of one zero byte (keys are zero-padded to the block size), which SecretKeySpec accepts
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(password.length == 0 ? new byte[1] : password, "HmacSHA256"));
            mac.update(salt);
            byte[] u = mac.doFinal(new byte[] {0, 0, 0, 1});
            byte[] result = u.clone();
            for (int i = 1; i < iterations; i++) {
                u = mac.doFinal(u);
                for (int j = 0; j < result.length; j++) {
                    result[j] ^= u[j];
                }
            }
            return result;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }

    static byte[] hmac(byte[] key, String message) {
        return hmac(key, message.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] hmac(byte[] key, byte[] message) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(message);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }

    static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    /** {@code n} random bytes, base64: a server nonce. */
    static String nonce(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return Base64.getEncoder().encodeToString(b);
    }
}
