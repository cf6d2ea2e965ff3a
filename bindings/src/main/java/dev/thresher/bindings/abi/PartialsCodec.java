package dev.thresher.bindings.abi;

import dev.thresher.bindings.Partial;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The partials encoding v1, what a component's {@code reduce} reads. Entries keep the order they are
 * given in (the coordinator sorts them; the codec never reorders). Values travel as exact bit patterns.
 *
 * <pre>
 * offset  size  field (all integers little-endian, no padding anywhere)
 * 0       4     magic "TPL1" (54 50 4C 31)
 * 4       4     u32 entry count N
 * 8       ...   N entries: u32 key length K, K key bytes (UTF-8), f64 value (8 bytes, IEEE 754)
 * </pre>
 *
 * <p>Example: one partial {@code ("a", 1.0)} encodes as
 * {@code 54504C31 01000000 01000000 61 000000000000F03F} (21 bytes).
 */
public final class PartialsCodec {
    /** "TPL1" read as a little-endian u32. */
    static final int MAGIC = 'T' | 'P' << 8 | 'L' << 16 | '1' << 24;

    private PartialsCodec() {
    }

    /** @throws IllegalArgumentException for a key that is not valid Unicode */
    public static byte[] encode(List<Partial> partials) {
        List<byte[]> keys = new ArrayList<>(partials.size());
        long size = 8;
        for (Partial p : partials) {
            byte[] key = Utf8.encode(p.key(), "partial key");
            keys.add(key);
            size += 4 + key.length + 8;
        }
        if (size > Integer.MAX_VALUE - 16) {
            throw new IllegalArgumentException("partials encoding exceeds 2 GiB");
        }
        ByteBuffer out = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).putInt(partials.size());
        for (int i = 0; i < keys.size(); i++) {
            byte[] key = keys.get(i);
            out.putInt(key.length).put(key).putLong(Double.doubleToRawLongBits(partials.get(i).value()));
        }
        return out.array();
    }

    /**
     * The entry count from the header, without decoding the entries.
     *
     * @throws IllegalArgumentException when the header is not v1's, or claims more entries than the bytes hold
     */
    public static int count(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes.length < 8 || b.getInt() != MAGIC) {
            throw new IllegalArgumentException("not a partials encoding v1 (magic TPL1 missing)");
        }
        long count = Integer.toUnsignedLong(b.getInt());
        // Each entry takes at least 12 bytes: refuse a count the bytes cannot hold before allocating.
        if (count > (bytes.length - 8) / 12) {
            throw new IllegalArgumentException("partials count " + count + " does not fit in " + bytes.length + " bytes");
        }
        return (int) count;
    }

    /** @throws IllegalArgumentException when the bytes are not exactly one well-formed v1 partials encoding */
    public static List<Partial> decode(byte[] bytes) {
        int count = count(bytes);
        ByteBuffer b = ByteBuffer.wrap(bytes, 8, bytes.length - 8).order(ByteOrder.LITTLE_ENDIAN);
        List<Partial> out = new ArrayList<>((int) count);
        for (long i = 0; i < count; i++) {
            if (b.remaining() < 4) {
                throw new IllegalArgumentException("partials truncated at entry " + i);
            }
            long keyLength = Integer.toUnsignedLong(b.getInt());
            if (keyLength + 8 > b.remaining()) {
                throw new IllegalArgumentException("partials truncated at entry " + i);
            }
            String key = Utf8.decode(bytes, b.position(), (int) keyLength, "partial key");
            b.position(b.position() + (int) keyLength);
            out.add(new Partial(key, Double.longBitsToDouble(b.getLong())));
        }
        if (b.hasRemaining()) {
            throw new IllegalArgumentException(b.remaining() + " bytes follow the last partial");
        }
        return List.copyOf(out);
    }
}
