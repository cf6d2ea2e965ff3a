package dev.thresher.bindings.abi;

import java.util.List;

/** The size arithmetic of row batch v1, shared by the builder and the decoder. All sizes in bytes. */
final class RowBatchLayout {
    /** "TRB1" read as a little-endian u32. */
    static final int MAGIC = 'T' | 'R' << 8 | 'B' << 16 | '1' << 24;
    /** magic, partition id, row count, column count. */
    static final int FIXED_HEADER = 16;
    /** type, flags, u16 name length. */
    static final int DESCRIPTOR_FIXED = 4;
    static final int FLAG_NULLABLE = 1;

    private RowBatchLayout() {
    }

    static long pad8(long n) {
        return (n + 7) & ~7L;
    }

    static long headerSize(List<Column> columns) {
        long n = FIXED_HEADER;
        for (Column c : columns) {
            n += DESCRIPTOR_FIXED + c.nameUtf8().length;
        }
        return pad8(n);
    }

    static long bitmapSize(long rows) {
        return pad8((rows + 7) / 8);
    }

    static long offsetsSize(long rows) {
        return pad8(4 * (rows + 1));
    }

    /** The bytes of one column's data section for {@code rows} rows and {@code varBytes} payload bytes. */
    static long sectionSize(Column c, long rows, long varBytes) {
        long n = c.nullable() ? bitmapSize(rows) : 0;
        return n + switch (c.type()) {
            case INT64, FLOAT64 -> 8 * rows;
            case BOOL -> pad8(rows);
            case TEXT, BYTES -> offsetsSize(rows) + pad8(varBytes);
        };
    }
}
