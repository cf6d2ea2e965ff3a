package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A component: the bytes of one core WebAssembly module and the digest that pins them.
 * Two components are equal when their digests are, which (the constructor checks) means their bytes are.
 *
 * @param digest {@code "sha256:"} followed by 64 lowercase hex digits of the SHA-256 of {@code wasm}
 * @param wasm the module bytes; copied in and out, never shared
 */
public record Component(String digest, byte[] wasm) {
    private static final String PREFIX = "sha256:";

    /** @throws ThresherException {@link ErrorCode#GUEST_INVALID_MODULE} when the digest does not match the bytes */
    public Component {
        Objects.requireNonNull(digest, "digest");
        Objects.requireNonNull(wasm, "wasm");
        wasm = wasm.clone();
        String actual = digestOf(wasm);
        if (!actual.equals(digest)) {
            throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE,
                    "component digest " + digest + " does not match its bytes (" + actual + ")");
        }
    }

    public static Component of(byte[] wasm) {
        return new Component(digestOf(wasm), wasm);
    }

    /** A copy of the module bytes. */
    @Override
    public byte[] wasm() {
        return wasm.clone();
    }

    public int size() {
        return wasm.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Component c && c.digest.equals(digest);
    }

    @Override
    public int hashCode() {
        return digest.hashCode();
    }

    @Override
    public String toString() {
        return "Component[" + digest + ", " + wasm.length + " bytes]";
    }

    static String digestOf(byte[] bytes) {
        try {
            return PREFIX + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
