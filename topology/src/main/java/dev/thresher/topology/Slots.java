package dev.thresher.topology;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * Keys hash to {@value #COUNT} fixed slots: FNV-1a 64 over the key's canonical bytes, then the
 * SplitMix64 finalizer, then the unsigned result modulo {@value #COUNT}.
 *
 * <p>Canonical bytes: text is its UTF-8; smallint, integer and bigint are the value as 8-byte
 * big-endian two's complement (so {@code 7::smallint} and {@code 7::bigint} share a slot); uuid
 * is its 16 bytes, most significant first; bytea is as is. Example: the bigint {@code 1} has the
 * canonical bytes {@code 00 00 00 00 00 00 00 01}. Golden vectors in the tests pin the function;
 * they are only ever added to.
 */
public final class Slots {
    /** Number of slots; fixed for the life of a cluster. */
    public static final int COUNT = 16_384;
    static final long FNV_OFFSET_BASIS = 0xcbf29ce484222325L;
    static final long FNV_PRIME = 0x100000001b3L;

    private Slots() {}

    public static int ofBytes(byte[] canonical) {
        return (int) Long.remainderUnsigned(splitMix64(fnv1a64(canonical)), COUNT);
    }

    public static int ofLong(long key) {
        return ofBytes(ByteBuffer.allocate(Long.BYTES).putLong(key).array());
    }

    public static int ofText(String key) {
        return ofBytes(key.getBytes(StandardCharsets.UTF_8));
    }

    public static int ofUuid(UUID key) {
        return ofBytes(ByteBuffer.allocate(16).putLong(key.getMostSignificantBits())
                .putLong(key.getLeastSignificantBits()).array());
    }

    static long fnv1a64(byte[] bytes) {
        long h = FNV_OFFSET_BASIS;
        for (byte b : bytes) {
            h ^= b & 0xff;
            h *= FNV_PRIME;
        }
        return h;
    }

    static long splitMix64(long z) {
        z ^= z >>> 30;
        z *= 0xbf58476d1ce4e5b9L;
        z ^= z >>> 27;
        z *= 0x94d049bb133111ebL;
        z ^= z >>> 31;
        return z;
    }
}
