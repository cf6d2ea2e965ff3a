package dev.thresher.bindings.abi;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A decoded, read-only view of one row batch in the guest ABI v1 encoding. The runtime never decodes
 * batches (guests do); this view exists for tests and tools. Not a value: it wraps the bytes it was
 * decoded from without copying them.
 *
 * <pre>
 * offset  size  field (all integers little-endian)
 * 0       4     magic "TRB1" (54 52 42 31)
 * 4       4     u32 partition id
 * 8       4     u32 row count R
 * 12      4     u32 column count C
 * 16      ...   C descriptors: u8 type tag, u8 flags (bit 0 nullable), u16 name length N, N name bytes
 *               zero padding to a multiple of 8
 * then per column, in order, each part starting 8-aligned and zero-padded to a multiple of 8:
 *   [nullable only] null bitmap, ceil(R/8) bytes, bit (r mod 8) of byte (r / 8) set = row r is null
 *   INT64, FLOAT64  R x 8 bytes
 *   BOOL            R bytes, 0 or 1
 *   TEXT, BYTES     (R+1) x u32 offsets, offsets[0] = 0, row r = bytes [offsets[r], offsets[r+1]) of
 *                   the payload; then the payload, which starts at the next 8-aligned position
 * the batch ends at the end of the last column's section
 * </pre>
 */
public final class RowBatch {
    private final byte[] bytes;
    private final ByteBuffer buf;
    private final int partitionId;
    private final int rowCount;
    private final List<Column> columns;
    private final int[] bitmapAt;
    private final int[] valuesAt;
    private final int[] payloadAt;

    private RowBatch(byte[] bytes, int partitionId, int rowCount, List<Column> columns,
                     int[] bitmapAt, int[] valuesAt, int[] payloadAt) {
        this.bytes = bytes;
        this.buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        this.partitionId = partitionId;
        this.rowCount = rowCount;
        this.columns = columns;
        this.bitmapAt = bitmapAt;
        this.valuesAt = valuesAt;
        this.payloadAt = payloadAt;
    }

    /**
     * Decodes and checks a whole batch: magic, tags, flags, section bounds, offset monotonicity, UTF-8
     * of names and text values, and that no byte follows the last section.
     *
     * @throws IllegalArgumentException when the bytes are not a well-formed v1 batch
     */
    public static RowBatch decode(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        try {
            if (bytes.length < RowBatchLayout.FIXED_HEADER || b.getInt(0) != RowBatchLayout.MAGIC) {
                throw new IllegalArgumentException("not a row batch v1 (magic TRB1 missing)");
            }
            int partitionId = b.getInt(4);
            long rows = Integer.toUnsignedLong(b.getInt(8));
            long columnCount = Integer.toUnsignedLong(b.getInt(12));
            if (partitionId < 0 || rows > Integer.MAX_VALUE || columnCount > bytes.length) {
                throw new IllegalArgumentException("implausible header: partition " + Integer.toUnsignedString(partitionId)
                        + ", rows " + rows + ", columns " + columnCount);
            }
            int r = (int) rows;
            b.position(RowBatchLayout.FIXED_HEADER);
            List<Column> columns = readColumns(b, bytes, columnCount);
            int n = columns.size();
            int[] bitmapAt = new int[n];
            int[] valuesAt = new int[n];
            int[] payloadAt = new int[n];
            long at = sections(b, bytes, columns, r, RowBatchLayout.pad8(b.position()), bitmapAt, valuesAt, payloadAt);
            if (at != bytes.length) {
                throw new IllegalArgumentException("batch is " + bytes.length + " bytes, its sections end at " + at);
            }
            RowBatch batch = new RowBatch(bytes, partitionId, r, List.copyOf(columns), bitmapAt, valuesAt, payloadAt);
            for (int i = 0; i < n; i++) {
                if (columns.get(i).type() == ColumnType.TEXT) {
                    for (int row = 0; row < r; row++) {
                        batch.getText(i, row);
                    }
                }
            }
            return batch;
        } catch (IndexOutOfBoundsException | java.nio.BufferUnderflowException e) {
            throw new IllegalArgumentException("row batch truncated", e);
        }
    }

    /** The column descriptors from the buffer's position on: tag, flags (only nullable is known), UTF-8 name. */
    private static List<Column> readColumns(ByteBuffer b, byte[] bytes, long columnCount) {
        List<Column> columns = new ArrayList<>();
        for (long i = 0; i < columnCount; i++) {
            ColumnType type = ColumnType.ofTag(Byte.toUnsignedInt(b.get()));
            int flags = Byte.toUnsignedInt(b.get());
            if ((flags & ~RowBatchLayout.FLAG_NULLABLE) != 0) {
                throw new IllegalArgumentException("column " + i + " has unknown flags " + flags);
            }
            int nameLength = Short.toUnsignedInt(b.getShort());
            String name = Utf8.decode(bytes, b.position(), nameLength, "column name");
            b.position(b.position() + nameLength);
            columns.add(new Column(name, type, (flags & RowBatchLayout.FLAG_NULLABLE) != 0));
        }
        return columns;
    }

    /**
     * Where each column's sections start, from {@code at} on, each checked to lie within the batch: a nullable
     * column's null bitmap, its values (a bool's each 0 or 1; a text or bytes column's offsets starting at 0, never
     * decreasing) and a text or bytes column's payload. Returns where the last section ends.
     */
    private static long sections(ByteBuffer b, byte[] bytes, List<Column> columns, int r, long at, int[] bitmapAt,
                                 int[] valuesAt, int[] payloadAt) {
        for (int i = 0; i < columns.size(); i++) {
            Column c = columns.get(i);
            bitmapAt[i] = -1;
            if (c.nullable()) {
                bitmapAt[i] = checkedPosition(at, RowBatchLayout.bitmapSize(r), bytes);
                at += RowBatchLayout.bitmapSize(r);
            }
            switch (c.type()) {
                case INT64, FLOAT64 -> {
                    valuesAt[i] = checkedPosition(at, 8L * r, bytes);
                    at += 8L * r;
                }
                case BOOL -> {
                    valuesAt[i] = checkedPosition(at, RowBatchLayout.pad8(r), bytes);
                    for (int row = 0; row < r; row++) {
                        if (bytes[valuesAt[i] + row] > 1 || bytes[valuesAt[i] + row] < 0) {
                            throw new IllegalArgumentException("column " + i + " row " + row + " is not a bool");
                        }
                    }
                    at += RowBatchLayout.pad8(r);
                }
                case TEXT, BYTES -> {
                    valuesAt[i] = checkedPosition(at, RowBatchLayout.offsetsSize(r), bytes);
                    at += RowBatchLayout.offsetsSize(r);
                    long prev = 0;
                    if (b.getInt(valuesAt[i]) != 0) {
                        throw new IllegalArgumentException("column " + i + " offsets do not start at 0");
                    }
                    for (int row = 1; row <= r; row++) {
                        long off = Integer.toUnsignedLong(b.getInt(valuesAt[i] + 4 * row));
                        if (off < prev) {
                            throw new IllegalArgumentException("column " + i + " offsets decrease at row " + row);
                        }
                        prev = off;
                    }
                    payloadAt[i] = checkedPosition(at, RowBatchLayout.pad8(prev), bytes);
                    at += RowBatchLayout.pad8(prev);
                }
            }
        }
        return at;
    }

    private static int checkedPosition(long at, long size, byte[] bytes) {
        if (at + size > bytes.length) {
            throw new IllegalArgumentException("section at " + at + " of " + size + " bytes runs past the end ("
                    + bytes.length + ")");
        }
        return (int) at;
    }

    public int partitionId() {
        return partitionId;
    }

    public int rowCount() {
        return rowCount;
    }

    public List<Column> columns() {
        return columns;
    }

    /** The encoded bytes' length. */
    public int encodedSize() {
        return bytes.length;
    }

    public boolean isNull(int column, int row) {
        Objects.checkIndex(row, rowCount);
        int at = bitmapAt[Objects.checkIndex(column, columns.size())];
        return at >= 0 && (bytes[at + (row >>> 3)] & (1 << (row & 7))) != 0;
    }

    public long getLong(int column, int row) {
        return buf.getLong(fixed(column, row, ColumnType.INT64));
    }

    public double getDouble(int column, int row) {
        return Double.longBitsToDouble(buf.getLong(fixed(column, row, ColumnType.FLOAT64)));
    }

    public boolean getBool(int column, int row) {
        check(column, row, ColumnType.BOOL);
        return bytes[valuesAt[column] + row] != 0;
    }

    public String getText(int column, int row) {
        check(column, row, ColumnType.TEXT);
        int start = payloadAt[column] + buf.getInt(valuesAt[column] + 4 * row);
        int end = payloadAt[column] + buf.getInt(valuesAt[column] + 4 * row + 4);
        return Utf8.decode(bytes, start, end - start, "text value");
    }

    public byte[] getBytes(int column, int row) {
        check(column, row, ColumnType.BYTES);
        int start = payloadAt[column] + buf.getInt(valuesAt[column] + 4 * row);
        int end = payloadAt[column] + buf.getInt(valuesAt[column] + 4 * row + 4);
        return Arrays.copyOfRange(bytes, start, end);
    }

    /** The value as a boxed Java object ({@code Long, Double, String, Boolean, byte[]}), or null. */
    public Object value(int column, int row) {
        if (isNull(column, row)) {
            return null;
        }
        return switch (columns.get(column).type()) {
            case INT64 -> getLong(column, row);
            case FLOAT64 -> getDouble(column, row);
            case TEXT -> getText(column, row);
            case BOOL -> getBool(column, row);
            case BYTES -> getBytes(column, row);
        };
    }

    private int fixed(int column, int row, ColumnType type) {
        check(column, row, type);
        return valuesAt[column] + 8 * row;
    }

    private void check(int column, int row, ColumnType type) {
        Objects.checkIndex(row, rowCount);
        ColumnType actual = columns.get(Objects.checkIndex(column, columns.size())).type();
        if (actual != type) {
            throw new IllegalArgumentException("column " + column + " is " + actual + ", not " + type);
        }
    }
}
