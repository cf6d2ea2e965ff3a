package dev.thresher.store.shard;

import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Parses PostgreSQL's binary {@code COPY ... TO STDOUT (FORMAT binary)} stream, as the chunks
 * ({@code CopyData} messages) arrive, straight into a {@link RowBatchBuilder}: values are read out
 * of the chunk and appended to the batch's column arrays, with no per-value object.
 *
 * <p>The format (PostgreSQL documentation, {@code COPY}, "Binary Format"), all integers big-endian:
 * an 11-byte signature {@code PGCOPY\n\377\r\n\0}, an int32 flags field, an int32 header extension
 * length and that many bytes; then tuples, each an int16 field count followed by the fields, each an
 * int32 length (-1 for NULL) and that many bytes in the type's binary ({@code send}) form; then the
 * trailer, an int16 -1. The server sends one tuple per message (the header rides with the first, the
 * trailer comes alone), but nothing here depends on it: a unit split across chunks is kept and
 * finished by the next one.
 *
 * <p>Column types are not in the stream: the parser is given them ({@link PgType}, learned from the
 * statement's metadata) and checks every fixed-width field's length against its type. A length that
 * does not match, a NULL in a column learned as not nullable, or text that is not UTF-8 means the
 * table changed since the types were learned: {@link ShapeChanged}. Anything else out of format is
 * {@link ErrorCode#STORE_UNAVAILABLE}. The builder's own refusals ({@code BATCH_TOO_MANY_ROWS},
 * {@code BATCH_TOO_LARGE}) pass through.
 */
final class BinaryCopyParser {
    private static final byte[] SIGNATURE = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', (byte) 0xFF, '\r', '\n', 0};
    private static final VarHandle I16 = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle I32 = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle I64 = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final int INCOMPLETE = -1;

    private final PgType[] types;
    private final boolean[] nullable;
    private final RowBatchBuilder batch;
    private byte[] pending;
    private boolean headerDone;
    private boolean trailerDone;
    private int rows;

    /**
     * @param types each column's type, in the stream's field order
     * @param nullable whether each column may hold NULL
     */
    BinaryCopyParser(PgType[] types, boolean[] nullable, RowBatchBuilder batch) {
        if (types.length != nullable.length || types.length == 0) {
            throw new IllegalArgumentException("one type and one nullability per column, at least one column");
        }
        this.types = types.clone();
        this.nullable = nullable.clone();
        this.batch = batch;
    }

    /** Rows appended to the batch so far. */
    int rows() {
        return rows;
    }

    /** Parses one chunk of the stream. */
    void accept(byte[] chunk) {
        byte[] buf = chunk;
        if (pending != null) {
            buf = Arrays.copyOf(pending, pending.length + chunk.length);
            System.arraycopy(chunk, 0, buf, pending.length, chunk.length);
            pending = null;
        }
        int pos = 0;
        int end = buf.length;
        if (!headerDone) {
            pos = header(buf, end);
            if (pos == INCOMPLETE) {
                pending = buf;
                return;
            }
            headerDone = true;
        }
        while (pos < end) {
            if (trailerDone) {
                throw malformed("data after the trailer");
            }
            int next = tupleEnd(buf, pos, end);
            if (next == INCOMPLETE) {
                pending = Arrays.copyOfRange(buf, pos, end);
                return;
            }
            if ((short) I16.get(buf, pos) == -1) {
                trailerDone = true;
            } else {
                tuple(buf, pos + 2);
            }
            pos = next;
        }
    }

    /** Checks that the stream ended where it should: after the trailer, with nothing left over. */
    void finish() {
        if (!trailerDone || pending != null) {
            throw malformed(headerDone ? "the stream ended before its trailer" : "the stream ended inside its header");
        }
    }

    /** The position after the header, or {@link #INCOMPLETE}. */
    private static int header(byte[] buf, int end) {
        int fixed = SIGNATURE.length + 8;
        if (end < fixed) {
            return INCOMPLETE;
        }
        if (!Arrays.equals(buf, 0, SIGNATURE.length, SIGNATURE, 0, SIGNATURE.length)) {
            throw malformed("no binary COPY signature");
        }
        int flags = (int) I32.get(buf, SIGNATURE.length);
        // Bits 16-31 are critical (bit 16: OIDs included, never asked for); bits 0-15 may be ignored.
        if ((flags & 0xFFFF_0000) != 0) {
            throw malformed("unexpected header flags 0x" + Integer.toHexString(flags));
        }
        int extension = (int) I32.get(buf, SIGNATURE.length + 4);
        if (extension < 0) {
            throw malformed("negative header extension length");
        }
        return end - fixed < extension ? INCOMPLETE : fixed + extension;
    }

    /** The position after the tuple (or trailer) at {@code pos}, or {@link #INCOMPLETE}; checks its framing. */
    private int tupleEnd(byte[] buf, int pos, int end) {
        if (end - pos < 2) {
            return INCOMPLETE;
        }
        int fields = (short) I16.get(buf, pos);
        pos += 2;
        if (fields == -1) {
            return pos;
        }
        if (fields != types.length) {
            throw malformed("a tuple of " + fields + " fields, expected " + types.length);
        }
        for (int i = 0; i < fields; i++) {
            if (end - pos < 4) {
                return INCOMPLETE;
            }
            int len = (int) I32.get(buf, pos);
            pos += 4;
            if (len < -1) {
                throw malformed("field length " + len);
            }
            if (len > 0) {
                if (end - pos < len) {
                    return INCOMPLETE;
                }
                pos += len;
            }
        }
        return pos;
    }

    /** Appends the tuple whose first field starts at {@code pos} (its framing already checked). */
    private void tuple(byte[] buf, int pos) {
        batch.startRow();
        rows++;
        for (int i = 0; i < types.length; i++) {
            int len = (int) I32.get(buf, pos);
            pos += 4;
            if (len == -1) {
                if (!nullable[i]) {
                    throw new ShapeChanged("a NULL in column " + (i + 1) + ", learned as not nullable");
                }
                batch.setNull(i);
                continue;
            }
            PgType type = types[i];
            if (type.binaryWidth >= 0 && len != type.binaryWidth) {
                throw new ShapeChanged("a " + len + "-byte value in column " + (i + 1) + ", learned as " + type);
            }
            switch (type) {
                case INT2 -> batch.setLong(i, (short) I16.get(buf, pos));
                case INT4 -> batch.setLong(i, (int) I32.get(buf, pos));
                case INT8 -> batch.setLong(i, (long) I64.get(buf, pos));
                case FLOAT4 -> batch.setDouble(i, (double) Float.intBitsToFloat((int) I32.get(buf, pos)));
                case FLOAT8, NUMERIC -> batch.setDouble(i, Double.longBitsToDouble((long) I64.get(buf, pos)));
                case BOOL -> batch.setBool(i, buf[pos] != 0);
                case TEXT -> {
                    try {
                        batch.setTextUtf8(i, buf, pos, len);
                    } catch (IllegalArgumentException e) {
                        throw new ShapeChanged("column " + (i + 1) + ", learned as text, holds bytes that are not UTF-8");
                    }
                }
                case BYTEA -> batch.setBytes(i, buf, pos, len);
            }
            pos += len;
        }
    }

    private static ThresherException malformed(String what) {
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard database sent a malformed binary COPY stream: " + what);
    }

    /** The stream does not fit the column types learned for the selector: learn them again. */
    static final class ShapeChanged extends RuntimeException {
        ShapeChanged(String message) {
            super(message, null, false, false);
        }
    }
}
