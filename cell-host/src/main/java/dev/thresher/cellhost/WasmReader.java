package dev.thresher.cellhost;

import java.nio.charset.StandardCharsets;
import java.util.function.IntConsumer;

/**
 * A cursor over a WebAssembly module binary (core specification, section 5): the few encodings
 * {@link WasmSignatures} and {@link WasmMemoryCap} read. Malformed input surfaces as
 * {@link IndexOutOfBoundsException} or {@link IllegalStateException}.
 *
 * <p>Every number the binary gives is read unsigned, and every length or count is bounded by the bytes that remain
 * before it is used: a length read as a signed int could point a cursor back at its own start, and a reader that
 * never advances loops for ever on a module a stranger deployed.
 */
final class WasmReader {
    final byte[] b;
    int pos;

    WasmReader(byte[] wasm) {
        this.b = wasm;
    }

    /** Whether the binary starts with the {@code \0asm} magic (and has room for the version). */
    boolean hasMagic() {
        return b.length >= 8 && b[0] == 0 && b[1] == 'a' && b[2] == 's' && b[3] == 'm';
    }

    boolean atEnd() {
        return pos >= b.length;
    }

    int u8() {
        return b[pos++] & 0xff;
    }

    /**
     * An unsigned LEB128 of at most 5 bytes holding at most 32 bits, as the int with the same bits (read it with
     * {@link Integer#toUnsignedLong} when it may exceed {@link Integer#MAX_VALUE}).
     */
    int u32() {
        int result = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            int x = b[pos++] & 0xff;
            if (shift == 28 && (x & 0x70) != 0) {
                throw new IllegalStateException("LEB128 u32 with bits beyond 32");
            }
            result |= (x & 0x7f) << shift;
            if ((x & 0x80) == 0) {
                return result;
            }
        }
        throw new IllegalStateException("LEB128 longer than 5 bytes");
    }

    /** The bytes left after the cursor. */
    int remaining() {
        return Math.max(0, b.length - pos);
    }

    /** A byte length (a section's, a name's), unsigned and at most the bytes that remain after it. */
    int length() {
        long n = Integer.toUnsignedLong(u32());
        if (n > remaining()) {
            throw new IllegalStateException("a length of " + n + " bytes runs past the end of the module ("
                    + remaining() + " left)");
        }
        return (int) n;
    }

    /**
     * A vector's element count, unsigned and at most the bytes that remain (every element takes at least one), so a
     * loop over it ends within the module.
     */
    int count() {
        long n = Integer.toUnsignedLong(u32());
        if (n > remaining()) {
            throw new IllegalStateException("a count of " + n + " elements with " + remaining() + " bytes left");
        }
        return (int) n;
    }

    /** An index (a type's, a function's): unsigned, at most {@link Integer#MAX_VALUE}. */
    int index() {
        long n = Integer.toUnsignedLong(u32());
        if (n > Integer.MAX_VALUE) {
            throw new IllegalStateException("index " + n + " out of range");
        }
        return (int) n;
    }

    /**
     * Reads a section's size and returns where the section ends: after the cursor, within the module. A section
     * whose contents were read past that end is refused by {@link #endSection}.
     */
    int sectionEnd() {
        int size = length();
        return pos + size;
    }

    /** Checks a section's contents ended within its size and moves the cursor to its end. */
    void endSection(int id, int end) {
        if (pos > end) {
            throw new IllegalStateException("section " + id + " runs " + (pos - end) + " bytes past its size");
        }
        pos = end;
    }

    String name() {
        int len = length();
        String s = new String(b, pos, len, StandardCharsets.UTF_8);
        pos += len;
        return s;
    }

    /** Skips a table's or memory's limits: flags, minimum, and the maximum when the flags say there is one. */
    void skipLimits() {
        int flags = u8();
        u32();
        if ((flags & 1) != 0) {
            u32();
        }
    }

    /**
     * Skips one import's description after its two names; returns its kind (0 function, 1 table,
     * 2 memory, 3 global, 4 tag) and, for a function, leaves its type index to the caller.
     */
    int skipImportDescription(IntConsumer functionType) {
        int kind = u8();
        switch (kind) {
            case 0 -> functionType.accept(index());
            case 1 -> {
                u8(); // reference type
                skipLimits();
            }
            case 2 -> skipLimits();
            case 3 -> pos += 2; // value type, mutability
            case 4 -> {
                u8(); // attribute
                u32();
            }
            default -> throw new IllegalStateException("import kind " + kind);
        }
        return kind;
    }
}
