package dev.thresher.cellhost;

import java.nio.charset.StandardCharsets;
import java.util.function.IntConsumer;

/**
 * A cursor over a WebAssembly module binary (core specification, section 5): the few encodings
 * {@link WasmSignatures} and {@link WasmMemoryCap} read. Malformed input surfaces as
 * {@link IndexOutOfBoundsException} or {@link IllegalStateException}.
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

    /** An unsigned LEB128 of at most 5 bytes. */
    int u32() {
        int result = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            int x = b[pos++] & 0xff;
            result |= (x & 0x7f) << shift;
            if ((x & 0x80) == 0) {
                return result;
            }
        }
        throw new IllegalStateException("LEB128 longer than 5 bytes");
    }

    String name() {
        int len = u32();
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
            case 0 -> functionType.accept(u32());
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
