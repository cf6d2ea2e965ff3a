package dev.thresher.bindings.abi;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Objects;

/**
 * Builds one row batch in the guest ABI v1 encoding (see {@code docs/guest-abi.md} and {@link RowBatch}).
 * Rows are appended one at a time: {@link #startRow()}, then at most one {@code set*} per column; a column
 * left unset is null, which only a nullable column accepts. The limits are checked as rows arrive, so a
 * reader can stream rows in and stop at the first refusal.
 *
 * <p>Not thread-safe; one builder builds one batch.
 */
public final class RowBatchBuilder {
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private final int partitionId;
    private final List<Column> columns;
    private final int maxRows;
    private final int maxBytes;
    private final long headerSize;
    private final ColumnData[] data;
    /** The row (1-based) in which each column was last set: equal to {@code rows} means set in the open row. */
    private final int[] setInRow;
    /**
     * An upper bound of the bytes a row adds whatever its values (the variable-length payload aside): 8 per
     * fixed-width or offset entry, 1 per bool or null bit; with {@link #slackBytes} and the payload it bounds
     * the encoded size from above, so the exact size is computed only near {@code maxBytes}.
     */
    private final long perRowBound;
    private final long slackBytes;
    private long payloadBytes;
    private int rows;
    private boolean rowOpen;
    private boolean finished;

    /**
     * @param partitionId the partition the rows come from, written as a u32 (must not be negative)
     * @param columns the selector's columns, in order
     * @param maxRows the most rows the batch may hold ({@code limits.rowsPerBatch})
     * @param maxBytes the most encoded bytes the batch may have ({@code limits.batchMaxBytes})
     */
    public RowBatchBuilder(int partitionId, List<Column> columns, int maxRows, int maxBytes) {
        if (partitionId < 0) {
            throw new IllegalArgumentException("partitionId must not be negative: " + partitionId);
        }
        if (maxRows < 0 || maxBytes < 0) {
            throw new IllegalArgumentException("maxRows and maxBytes must not be negative");
        }
        this.partitionId = partitionId;
        this.columns = List.copyOf(columns);
        this.maxRows = maxRows;
        this.maxBytes = maxBytes;
        this.headerSize = RowBatchLayout.headerSize(this.columns);
        this.data = new ColumnData[this.columns.size()];
        for (int i = 0; i < data.length; i++) {
            data[i] = new ColumnData(this.columns.get(i));
        }
        this.setInRow = new int[data.length];
        long perRow = 0;
        long slack = 0;
        for (Column c : this.columns) {
            perRow += (c.nullable() ? 1 : 0) + (c.type() == ColumnType.BOOL ? 1 : 8);
            slack += (c.nullable() ? 8 : 0) + 16; // padding of each part, and the offset table's extra entry
        }
        this.perRowBound = perRow;
        this.slackBytes = slack;
        if (encodedSize(0) > maxBytes) {
            throw new ThresherException(ErrorCode.BATCH_TOO_LARGE,
                    "an empty batch of these columns already exceeds " + maxBytes + " bytes");
        }
    }

    /**
     * Opens the next row, closing the current one.
     *
     * @throws ThresherException {@link ErrorCode#BATCH_TOO_MANY_ROWS} past {@code maxRows},
     *         {@link ErrorCode#BATCH_TOO_LARGE} when the fixed-width part of the row no longer fits
     * @throws IllegalArgumentException when the row being closed left a non-nullable column unset
     */
    public void startRow() {
        checkOpen();
        closeRow();
        if (rows + 1 > maxRows) {
            throw new ThresherException(ErrorCode.BATCH_TOO_MANY_ROWS, "batch exceeds " + maxRows + " rows");
        }
        rows++;
        rowOpen = true;
        checkBytes();
    }

    public RowBatchBuilder setLong(int column, long value) {
        ColumnData c = slot(column, ColumnType.INT64);
        c.appendFixed(value);
        return this;
    }

    /** Stores the value's exact bit pattern, NaN payloads included. */
    public RowBatchBuilder setDouble(int column, double value) {
        ColumnData c = slot(column, ColumnType.FLOAT64);
        c.appendFixed(Double.doubleToRawLongBits(value));
        return this;
    }

    /** @throws IllegalArgumentException for a string that is not valid Unicode (an unpaired surrogate) */
    public RowBatchBuilder setText(int column, String value) {
        Objects.requireNonNull(value, "value (use setNull)");
        byte[] utf8 = Utf8.encode(value, "text value");
        ColumnData c = slot(column, ColumnType.TEXT);
        appendVar(c, utf8, 0, utf8.length);
        return this;
    }

    /**
     * Sets a text value from its UTF-8 bytes, copied straight into the batch without building a
     * {@code String}: {@code setTextUtf8(c, s.getBytes(UTF_8), 0, n)} encodes exactly what
     * {@code setText(c, s)} does. The bytes are checked to be well-formed UTF-8 (no overlong forms, no
     * surrogates, nothing past U+10FFFF, no truncated sequence).
     *
     * @throws IllegalArgumentException when the bytes are not well-formed UTF-8
     */
    public RowBatchBuilder setTextUtf8(int column, byte[] utf8, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, utf8.length);
        int bad = firstMalformedUtf8(utf8, offset, offset + length);
        if (bad >= 0) {
            throw new IllegalArgumentException("text value is not valid UTF-8 (at byte " + (bad - offset) + ")");
        }
        ColumnData c = slot(column, ColumnType.TEXT);
        appendVar(c, utf8, offset, length);
        return this;
    }

    /** The index of the first byte in {@code [from, to)} that starts a malformed UTF-8 sequence, or -1. */
    private static int firstMalformedUtf8(byte[] b, int from, int to) {
        int i = from;
        // ASCII runs eight bytes at a time: no byte of the word has its high bit set
        while (i + 8 <= to && ((long) LONGS.get(b, i) & 0x8080808080808080L) == 0) {
            i += 8;
        }
        while (i < to) {
            int c = b[i];
            if (c >= 0) {
                i++;
                continue;
            }
            c &= 0xFF;
            if (c < 0xC2) {
                return i; // a continuation byte, or an overlong two-byte form
            }
            if (c < 0xE0) {
                if (i + 1 >= to || (b[i + 1] & 0xC0) != 0x80) {
                    return i;
                }
                i += 2;
            } else if (c < 0xF0) {
                if (i + 2 >= to) {
                    return i;
                }
                int c1 = b[i + 1] & 0xFF;
                if ((c1 & 0xC0) != 0x80 || (b[i + 2] & 0xC0) != 0x80
                        || (c == 0xE0 && c1 < 0xA0) // overlong
                        || (c == 0xED && c1 >= 0xA0)) { // a surrogate
                    return i;
                }
                i += 3;
            } else if (c < 0xF5) {
                if (i + 3 >= to) {
                    return i;
                }
                int c1 = b[i + 1] & 0xFF;
                if ((c1 & 0xC0) != 0x80 || (b[i + 2] & 0xC0) != 0x80 || (b[i + 3] & 0xC0) != 0x80
                        || (c == 0xF0 && c1 < 0x90) // overlong
                        || (c == 0xF4 && c1 >= 0x90)) { // past U+10FFFF
                    return i;
                }
                i += 4;
            } else {
                return i;
            }
        }
        return -1;
    }

    public RowBatchBuilder setBool(int column, boolean value) {
        ColumnData c = slot(column, ColumnType.BOOL);
        c.appendBool(value);
        return this;
    }

    public RowBatchBuilder setBytes(int column, byte[] value) {
        Objects.requireNonNull(value, "value (use setNull)");
        return setBytes(column, value, 0, value.length);
    }

    public RowBatchBuilder setBytes(int column, byte[] value, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, value.length);
        ColumnData c = slot(column, ColumnType.BYTES);
        appendVar(c, value, offset, length);
        return this;
    }

    /** @throws IllegalArgumentException when the column is not nullable */
    public RowBatchBuilder setNull(int column) {
        ColumnData c = slot(column, null);
        if (!c.column.nullable()) {
            throw new IllegalArgumentException("column " + column + " (" + c.column.name() + ") is not nullable");
        }
        c.appendNull(rows - 1);
        return this;
    }

    /** Rows started so far, the open one included. */
    public int rowCount() {
        return rows;
    }

    /**
     * Whether one more row whose text and bytes values take {@code varBytes} bytes in all surely fits in
     * {@code maxBytes} (and {@code maxRows}). Conservative: a row it says no to might just have fitted.
     * A reader that cuts a partition into batches asks before each row, so that no batch it cuts is
     * ever {@link ErrorCode#BATCH_TOO_LARGE}; only a row too large for an empty batch is.
     */
    public boolean fitsRow(long varBytes) {
        return rows < maxRows && headerSize + (rows + 1L) * perRowBound + slackBytes + payloadBytes + varBytes <= maxBytes;
    }

    /** The encoded size the batch would have if finished now. */
    public long encodedSize() {
        return encodedSize(rows);
    }

    /**
     * Closes the open row and returns the encoded batch. The builder accepts nothing afterwards.
     *
     * @throws IllegalArgumentException when the open row left a non-nullable column unset
     */
    public byte[] finish() {
        checkOpen();
        closeRow();
        finished = true;
        long size = encodedSize(rows);
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(size)).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(RowBatchLayout.MAGIC).putInt(partitionId).putInt(rows).putInt(columns.size());
        for (Column c : columns) {
            byte[] name = c.nameUtf8();
            out.put((byte) c.type().tag())
                    .put((byte) (c.nullable() ? RowBatchLayout.FLAG_NULLABLE : 0))
                    .putShort((short) name.length)
                    .put(name);
        }
        out.position(Math.toIntExact(headerSize));
        for (ColumnData c : data) {
            c.writeTo(out, rows);
        }
        if (out.position() != size) {
            throw new IllegalStateException("encoded " + out.position() + " bytes, computed " + size);
        }
        return out.array();
    }

    private long encodedSize(int rowCount) {
        long n = headerSize;
        for (ColumnData c : data) {
            n += RowBatchLayout.sectionSize(c.column, rowCount, c.varLen);
        }
        return n;
    }

    private void appendVar(ColumnData c, byte[] src, int offset, int length) {
        c.appendVar(src, offset, length);
        payloadBytes += length;
        checkBytes();
    }

    private void checkBytes() {
        if (headerSize + rows * perRowBound + slackBytes + payloadBytes <= maxBytes) {
            return; // below the bound the exact size cannot exceed
        }
        long size = encodedSize(rows);
        if (size > maxBytes) {
            throw new ThresherException(ErrorCode.BATCH_TOO_LARGE,
                    "batch exceeds " + maxBytes + " bytes at row " + rows);
        }
    }

    private void checkOpen() {
        if (finished) {
            throw new IllegalStateException("batch already finished");
        }
    }

    private ColumnData slot(int column, ColumnType expected) {
        checkOpen();
        if (!rowOpen) {
            throw new IllegalStateException("no row started");
        }
        Objects.checkIndex(column, data.length);
        ColumnData c = data[column];
        if (expected != null && c.column.type() != expected) {
            throw new IllegalArgumentException("column " + column + " (" + c.column.name() + ") is "
                    + c.column.type() + ", not " + expected);
        }
        if (setInRow[column] == rows) {
            throw new IllegalStateException("column " + column + " already set in row " + (rows - 1));
        }
        setInRow[column] = rows;
        return c;
    }

    private void closeRow() {
        if (!rowOpen) {
            return;
        }
        for (int i = 0; i < data.length; i++) {
            if (setInRow[i] != rows) {
                ColumnData c = data[i];
                if (!c.column.nullable()) {
                    throw new IllegalArgumentException("column " + i + " (" + c.column.name()
                            + ") is not nullable but was not set in row " + (rows - 1));
                }
                setInRow[i] = rows;
                c.appendNull(rows - 1);
            }
        }
        rowOpen = false;
    }

    /** One column's values, appended row by row; a null row holds zero, false or an empty value. */
    private static final class ColumnData {
        final Column column;
        final BitSet nulls = new BitSet();
        long[] fixed = new long[0];
        byte[] bools = new byte[0];
        int[] ends = new int[0];
        byte[] varBytes = new byte[0];
        int count;
        long varLen;

        ColumnData(Column column) {
            this.column = column;
        }

        void appendFixed(long bits) {
            if (count == fixed.length) {
                fixed = Arrays.copyOf(fixed, Math.max(16, count * 2));
            }
            fixed[count++] = bits;
        }

        void appendBool(boolean v) {
            if (count == bools.length) {
                bools = Arrays.copyOf(bools, Math.max(16, count * 2));
            }
            bools[count++] = (byte) (v ? 1 : 0);
        }

        void appendVar(byte[] src, int off, int len) {
            long end = varLen + len;
            if (end > Integer.MAX_VALUE - 16) {
                throw new ThresherException(ErrorCode.BATCH_TOO_LARGE, "column " + column.name() + " exceeds 2 GiB");
            }
            if (end > varBytes.length) {
                varBytes = Arrays.copyOf(varBytes, (int) Math.min(Integer.MAX_VALUE - 16, Math.max(end, varBytes.length * 2L)));
            }
            System.arraycopy(src, off, varBytes, (int) varLen, len);
            varLen = end;
            if (count == ends.length) {
                ends = Arrays.copyOf(ends, Math.max(16, count * 2));
            }
            ends[count++] = (int) end;
        }

        void appendNull(int row) {
            nulls.set(row);
            switch (column.type()) {
                case INT64, FLOAT64 -> appendFixed(0);
                case BOOL -> appendBool(false);
                case TEXT, BYTES -> appendVar(varBytes, 0, 0);
            }
        }

        void writeTo(ByteBuffer out, int rows) {
            if (column.nullable()) {
                int start = out.position();
                byte[] bitmap = new byte[(rows + 7) / 8];
                for (int r = nulls.nextSetBit(0); r >= 0 && r < rows; r = nulls.nextSetBit(r + 1)) {
                    bitmap[r >>> 3] |= (byte) (1 << (r & 7));
                }
                out.put(bitmap);
                out.position(start + (int) RowBatchLayout.bitmapSize(rows));
            }
            switch (column.type()) {
                case INT64, FLOAT64 -> {
                    out.asLongBuffer().put(fixed, 0, rows);
                    out.position(out.position() + 8 * rows);
                }
                case BOOL -> {
                    int start = out.position();
                    out.put(bools, 0, rows);
                    out.position(start + (int) RowBatchLayout.pad8(rows));
                }
                case TEXT, BYTES -> {
                    int start = out.position();
                    out.putInt(0);
                    out.asIntBuffer().put(ends, 0, rows);
                    out.position(start + (int) RowBatchLayout.offsetsSize(rows));
                    start = out.position();
                    out.put(varBytes, 0, (int) varLen);
                    out.position(start + (int) RowBatchLayout.pad8(varLen));
                }
            }
        }
    }
}
