package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.ByteArrayOutputStream;

/**
 * Bounds a guest's linear memory by rewriting the maximum of each memory its binary defines
 * (WebAssembly core specification, sections 5.3.8 and 5.5.8): a memory without a maximum, or with
 * one above the cap, gets the cap as its maximum, so {@code memory.grow} past it returns -1 inside
 * the guest instead of taking host heap. A memory whose initial size is already above the cap
 * makes the module invalid. Tables are bounded the same way: each defined table's maximum becomes at
 * most {@link GuestModuleCheck#TABLE_ELEMENTS_MAX} elements, so {@code table.grow} past it returns -1, and
 * a table starting above it makes the module invalid. Every other byte of the module is kept as it is.
 */
final class WasmMemoryCap {
    static final int PAGE_BYTES = 65_536;
    private static final int MEMORY_SECTION = 5;
    private static final int TABLE_SECTION = 4;
    private static final int IMPORT_SECTION = 2;

    private final WasmReader r;

    private WasmMemoryCap(byte[] wasm) {
        this.r = new WasmReader(wasm);
    }

    /**
     * The module with every defined memory's maximum at most {@code maxBytes} (rounded down to whole
     * pages, at least one page).
     *
     * @throws ThresherException {@link ErrorCode#GUEST_INVALID_MODULE} when a memory starts above the
     *     cap, is 64-bit or imported, or the binary cannot be read
     */
    static byte[] apply(byte[] wasm, long maxBytes) {
        long capPages = Math.max(1, Math.min(65_536, maxBytes / PAGE_BYTES));
        try {
            return new WasmMemoryCap(wasm).rewrite(capPages);
        } catch (IndexOutOfBoundsException | IllegalStateException e) {
            throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "the module binary cannot be read: " + e.getMessage());
        }
    }

    private byte[] rewrite(long capPages) {
        byte[] b = r.b;
        if (!r.hasMagic()) {
            return b; // not a module: the engine refuses it with its own message
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(b.length + 16);
        out.write(b, 0, 8);
        r.pos = 8;
        while (!r.atEnd()) {
            int sectionStart = r.pos;
            int id = r.u8();
            int end = r.sectionEnd();
            if (id == IMPORT_SECTION) {
                refuseImportedMemory(end);
                out.write(b, sectionStart, end - sectionStart);
            } else if (id == TABLE_SECTION) {
                byte[] section = tableSection(end, GuestModuleCheck.TABLE_ELEMENTS_MAX);
                out.write(TABLE_SECTION);
                writeU32(out, section.length);
                out.write(section, 0, section.length);
            } else if (id == MEMORY_SECTION) {
                byte[] section = memorySection(end, capPages);
                out.write(MEMORY_SECTION);
                writeU32(out, section.length);
                out.write(section, 0, section.length);
            } else {
                out.write(b, sectionStart, end - sectionStart);
            }
            r.endSection(id, end);
        }
        return out.toByteArray();
    }

    private byte[] memorySection(int end, long capPages) {
        ByteArrayOutputStream section = new ByteArrayOutputStream();
        int count = r.count();
        writeU32(section, count);
        for (int i = 0; i < count; i++) {
            int flags = r.u8();
            if ((flags & 0x04) != 0) {
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "64-bit memories are not supported");
            }
            long min = r.u32() & 0xffff_ffffL;
            long max = (flags & 0x01) != 0 ? r.u32() & 0xffff_ffffL : Long.MAX_VALUE;
            if (min > capPages) {
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "memory " + i + " starts at " + min
                        + " pages (64 KiB each); limits.guestMemoryMaxBytes allows " + capPages);
            }
            section.write(flags | 0x01);
            writeU32(section, min);
            writeU32(section, Math.min(max, capPages));
        }
        if (r.pos != end) {
            throw new IllegalStateException("memory section has " + (end - r.pos) + " bytes after its memories");
        }
        return section.toByteArray();
    }

    private byte[] tableSection(int end, long capElements) {
        ByteArrayOutputStream section = new ByteArrayOutputStream();
        int count = r.count();
        writeU32(section, count);
        for (int i = 0; i < count; i++) {
            int refType = r.u8();
            if (refType == 0x40) {
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "table " + i
                        + " has an initializer expression; tables of the WebAssembly core specification 2.0 only");
            }
            int flags = r.u8();
            if ((flags & ~0x01) != 0) {
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "table " + i + " has limits flags " + flags
                        + "; 32-bit tables only");
            }
            long min = r.u32() & 0xffff_ffffL;
            long max = (flags & 0x01) != 0 ? r.u32() & 0xffff_ffffL : Long.MAX_VALUE;
            if (min > capElements) {
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "table " + i + " starts at " + min
                        + " elements; a guest's tables hold at most " + capElements);
            }
            section.write(refType);
            section.write(0x01);
            writeU32(section, min);
            writeU32(section, Math.min(max, capElements));
        }
        if (r.pos != end) {
            throw new IllegalStateException("table section has " + (end - r.pos) + " bytes after its tables");
        }
        return section.toByteArray();
    }

    /** A memory the guest imports would escape the cap; the guest ABI has the guest define its own. */
    private void refuseImportedMemory(int end) {
        int save = r.pos;
        for (int n = r.count(); n > 0; n--) {
            r.name();
            r.name();
            if (r.skipImportDescription(type -> { }) == 2) {
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE,
                        "the module imports its memory; a Thresher guest defines and exports it");
            }
        }
        if (r.pos != end) {
            throw new IllegalStateException("import section has " + (end - r.pos) + " bytes after its imports");
        }
        r.pos = save;
    }

    private static void writeU32(ByteArrayOutputStream out, long value) {
        long v = value;
        do {
            int x = (int) (v & 0x7f);
            v >>>= 7;
            out.write(v != 0 ? x | 0x80 : x);
        } while (v != 0);
    }
}
