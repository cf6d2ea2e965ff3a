package dev.thresher.store.replica;

import dev.thresher.store.shard.PgType;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One column of a {@link PartitionRows}: a primitive vector indexed by row, and a null bitmap when the
 * column is nullable. Values arrive in their PostgreSQL text form and are converted once, as the SQL read
 * path converts them ({@code ShardReader}): integers to {@code long}, {@code float4} to its exact value
 * widened, {@code float8} bit for bit, {@code numeric} as {@code numeric::float8}, text as its UTF-8 bytes,
 * {@code bytea} decoded, {@code bool} from {@code t}/{@code f}.
 *
 * <p>Rows are compared for the replica identity by what is stored. Where that is not the value itself (a
 * {@code numeric} kept as a double, a column of a type a batch cannot carry) and the column belongs to an
 * identity key that is not the whole row, the text form is kept too, so two different keys never look alike.
 *
 * <p>Not thread-safe.
 */
abstract sealed class ColumnVector {
    /** Bytes of an array's header (with compressed class pointers) and of one reference. */
    static final int ARRAY_HEADER = 16;
    static final int REFERENCE = 4;
    /** The one empty value, shared (and counted once, here: never). */
    static final byte[] EMPTY = new byte[0];
    private static final int NULL_HASH = 0x9E3779B9;

    final ReplicaColumn column;
    final PgType type;
    /** One bit per row, set for SQL NULL; null when the column is NOT NULL. */
    long[] nulls;

    ColumnVector(ReplicaColumn column, int capacity) {
        this.column = column;
        this.type = column.type();
        this.nulls = column.notNull() ? null : new long[words(capacity)];
    }

    /**
     * The vector for a column.
     *
     * @param keyText whether the column is part of an identity key narrower than the row, so that it must
     *     compare exactly even where the stored value is not exact
     */
    static ColumnVector of(ReplicaColumn column, boolean keyText, int capacity) {
        PgType type = column.type();
        if (type == null) {
            return keyText ? new BytesVector(column, capacity, BytesVector.RAW) : new AbsentVector(column, capacity);
        }
        return switch (type) {
            case INT2, INT4, INT8 -> new LongVector(column, capacity);
            case FLOAT4, FLOAT8 -> new DoubleVector(column, capacity, false);
            case NUMERIC -> new DoubleVector(column, capacity, keyText);
            case BOOL -> new BoolVector(column, capacity);
            case TEXT -> new BytesVector(column, capacity, BytesVector.TEXT);
            case BYTEA -> new BytesVector(column, capacity, BytesVector.BYTEA);
        };
    }

    /** Whether a batch can carry the column (false for a type it cannot, kept only to find rows by). */
    boolean carried() {
        return type != null;
    }

    final boolean isNull(int row) {
        return nulls != null && (nulls[row >>> 6] & (1L << row)) != 0;
    }

    private void markNull(int row, boolean isNull) {
        if (nulls == null) {
            return;
        }
        if (isNull) {
            nulls[row >>> 6] |= 1L << row;
        } else {
            nulls[row >>> 6] &= ~(1L << row);
        }
    }

    /**
     * Stores a value in its text form, or SQL NULL.
     *
     * @throws IllegalArgumentException for NULL in a NOT NULL column, or text that is not a value of the type
     */
    final void set(int row, byte[] text) {
        if (text == null) {
            if (nulls == null) {
                throw new IllegalArgumentException("column " + column.name() + " is NOT NULL but the row has NULL");
            }
            markNull(row, true);
            clearValue(row);
        } else {
            markNull(row, false);
            try {
                parse(row, text);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("column " + column.name() + ": '"
                        + new String(text, 0, Math.min(text.length, 64), StandardCharsets.UTF_8)
                        + "' is not a value of type OID " + column.typeOid() + " (" + e.getMessage() + ")", e);
            }
        }
    }

    /** Copies row {@code from}'s value (and nullness) to row {@code to}; references are shared. */
    final void copy(int from, int to) {
        markNull(to, isNull(from));
        copyValue(from, to);
    }

    /** Whether two rows hold the same value for the replica identity (NULL matches NULL). */
    final boolean same(int a, int b) {
        boolean na = isNull(a);
        return na == isNull(b) && (na || sameValue(a, b));
    }

    final int hash(int row) {
        return isNull(row) ? NULL_HASH : hashValue(row);
    }

    /** Resizes to hold {@code capacity} rows (at least the rows in use). */
    final void resize(int capacity) {
        if (nulls != null) {
            nulls = Arrays.copyOf(nulls, words(capacity));
        }
        resizeValues(capacity);
    }

    /** Heap bytes of the vectors at their capacity (not the arrays of variable-length values). */
    final long vectorBytes() {
        return (nulls == null ? 0 : ARRAY_HEADER + 8L * nulls.length) + valueVectorBytes();
    }

    /** Heap bytes of the row's own variable-length value, beyond its slot in the vector. */
    long heapOf(int row) {
        return 0;
    }

    /** Drops what the row references (a slot past the last row keeps nothing alive). */
    abstract void clearValue(int row);

    abstract void parse(int row, byte[] text);

    abstract void copyValue(int from, int to);

    abstract boolean sameValue(int a, int b);

    abstract int hashValue(int row);

    abstract void resizeValues(int capacity);

    abstract long valueVectorBytes();

    static int words(int capacity) {
        return (capacity + 63) >>> 6;
    }

    /** Bytes an array of {@code length} bytes takes on the heap. */
    static long arrayHeap(int length) {
        return length == 0 ? 0 : ARRAY_HEADER + ((length + 7L) & ~7L);
    }

    /** An integer's text form ({@code int2}, {@code int4}, {@code int8}): an optional sign and decimal digits. */
    static long parseLong(byte[] b) {
        int n = b.length;
        int i = 0;
        boolean negative = false;
        if (n > 0 && (b[0] == '-' || b[0] == '+')) {
            negative = b[0] == '-';
            i = 1;
        }
        if (i == n) {
            throw new IllegalArgumentException("no digits");
        }
        // Accumulated negatively, so Long.MIN_VALUE fits.
        long limit = negative ? Long.MIN_VALUE : -Long.MAX_VALUE;
        long multMin = limit / 10;
        long result = 0;
        for (; i < n; i++) {
            int digit = b[i] - '0';
            if (digit < 0 || digit > 9) {
                throw new IllegalArgumentException("not a digit");
            }
            if (result < multMin) {
                throw new IllegalArgumentException("out of range");
            }
            result *= 10;
            if (result < limit + digit) {
                throw new IllegalArgumentException("out of range");
            }
            result -= digit;
        }
        return negative ? result : -result;
    }

    /** A {@code float8} or {@code numeric} text form as {@code Double.parseDouble} (and {@code numeric::float8}) read it. */
    static double parseDouble(byte[] b) {
        if (b.length == 0) {
            throw new IllegalArgumentException("empty");
        }
        String s = new String(b, StandardCharsets.ISO_8859_1);
        char last = s.charAt(s.length() - 1);
        if (last == 'd' || last == 'D' || last == 'f' || last == 'F' || s.charAt(0) <= ' ' || last <= ' ') {
            throw new IllegalArgumentException("not a number"); // Java would take these; PostgreSQL never writes them
        }
        return Double.parseDouble(s);
    }

    /** A {@code float4} text form, its exact value widened to a double. */
    static double parseFloat4(byte[] b) {
        double d = parseDouble(b); // the same checks; the value is read again as a float
        return Double.isNaN(d) ? Double.NaN : (double) Float.parseFloat(new String(b, StandardCharsets.ISO_8859_1));
    }

    /** {@code bytea}'s text form: hex ({@code \x0aff}, PostgreSQL's default) or the escape format. */
    static byte[] parseBytea(byte[] b) {
        if (b.length >= 2 && b[0] == '\\' && b[1] == 'x') {
            int digits = b.length - 2;
            if ((digits & 1) != 0) {
                throw new IllegalArgumentException("odd number of hex digits");
            }
            if (digits == 0) {
                return EMPTY;
            }
            byte[] out = new byte[digits / 2];
            for (int i = 0; i < out.length; i++) {
                out[i] = (byte) (hex(b[2 + 2 * i]) << 4 | hex(b[3 + 2 * i]));
            }
            return out;
        }
        byte[] out = new byte[b.length];
        int n = 0;
        for (int i = 0; i < b.length; ) {
            if (b[i] != '\\') {
                out[n++] = b[i++];
            } else if (i + 1 < b.length && b[i + 1] == '\\') {
                out[n++] = '\\';
                i += 2;
            } else if (i + 3 < b.length && octal(b[i + 1]) <= 3 && octal(b[i + 2]) >= 0 && octal(b[i + 3]) >= 0) {
                out[n++] = (byte) (octal(b[i + 1]) << 6 | octal(b[i + 2]) << 3 | octal(b[i + 3]));
                i += 4;
            } else {
                throw new IllegalArgumentException("invalid escape in bytea");
            }
        }
        return n == 0 ? EMPTY : Arrays.copyOf(out, n);
    }

    private static int hex(byte c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        throw new IllegalArgumentException("not a hex digit");
    }

    private static int octal(byte c) {
        return c >= '0' && c <= '7' ? c - '0' : -1;
    }

    /** {@code int2}, {@code int4}, {@code int8}. */
    static final class LongVector extends ColumnVector {
        long[] values;

        LongVector(ReplicaColumn column, int capacity) {
            super(column, capacity);
            values = new long[capacity];
        }

        @Override
        void parse(int row, byte[] text) {
            values[row] = parseLong(text);
        }

        @Override
        void clearValue(int row) {
            values[row] = 0;
        }

        @Override
        void copyValue(int from, int to) {
            values[to] = values[from];
        }

        @Override
        boolean sameValue(int a, int b) {
            return values[a] == values[b];
        }

        @Override
        int hashValue(int row) {
            return Long.hashCode(values[row]);
        }

        @Override
        void resizeValues(int capacity) {
            values = Arrays.copyOf(values, capacity);
        }

        @Override
        long valueVectorBytes() {
            return ARRAY_HEADER + 8L * values.length;
        }
    }

    /** {@code float4} (widened), {@code float8}, {@code numeric} (as {@code numeric::float8}, its text kept when a key needs it). */
    static final class DoubleVector extends ColumnVector {
        double[] values;
        /** The text form of each row's value, for a {@code numeric} identity key column; else null. */
        byte[][] texts;

        DoubleVector(ReplicaColumn column, int capacity, boolean keepText) {
            super(column, capacity);
            values = new double[capacity];
            texts = keepText ? new byte[capacity][] : null;
        }

        @Override
        void parse(int row, byte[] text) {
            values[row] = type == PgType.FLOAT4 ? parseFloat4(text) : parseDouble(text);
            if (texts != null) {
                texts[row] = text.length == 0 ? EMPTY : text.clone();
            }
        }

        @Override
        void clearValue(int row) {
            values[row] = 0;
            if (texts != null) {
                texts[row] = null;
            }
        }

        @Override
        void copyValue(int from, int to) {
            values[to] = values[from];
            if (texts != null) {
                texts[to] = texts[from];
            }
        }

        @Override
        boolean sameValue(int a, int b) {
            return texts != null ? Arrays.equals(texts[a], texts[b])
                    : Double.doubleToRawLongBits(values[a]) == Double.doubleToRawLongBits(values[b]);
        }

        @Override
        int hashValue(int row) {
            return texts != null ? Arrays.hashCode(texts[row]) : Long.hashCode(Double.doubleToRawLongBits(values[row]));
        }

        @Override
        long heapOf(int row) {
            return texts == null || texts[row] == null ? 0 : arrayHeap(texts[row].length);
        }

        @Override
        void resizeValues(int capacity) {
            values = Arrays.copyOf(values, capacity);
            if (texts != null) {
                texts = Arrays.copyOf(texts, capacity);
            }
        }

        @Override
        long valueVectorBytes() {
            return ARRAY_HEADER + 8L * values.length + (texts == null ? 0 : ARRAY_HEADER + (long) REFERENCE * texts.length);
        }
    }

    /** {@code bool}, one bit per row. */
    static final class BoolVector extends ColumnVector {
        long[] bits;

        BoolVector(ReplicaColumn column, int capacity) {
            super(column, capacity);
            bits = new long[words(capacity)];
        }

        boolean get(int row) {
            return (bits[row >>> 6] & (1L << row)) != 0;
        }

        private void put(int row, boolean v) {
            if (v) {
                bits[row >>> 6] |= 1L << row;
            } else {
                bits[row >>> 6] &= ~(1L << row);
            }
        }

        @Override
        void parse(int row, byte[] text) {
            if (text.length != 1 || text[0] != 't' && text[0] != 'f') {
                throw new IllegalArgumentException("not t or f");
            }
            put(row, text[0] == 't');
        }

        @Override
        void clearValue(int row) {
            put(row, false);
        }

        @Override
        void copyValue(int from, int to) {
            put(to, get(from));
        }

        @Override
        boolean sameValue(int a, int b) {
            return get(a) == get(b);
        }

        @Override
        int hashValue(int row) {
            return get(row) ? 1231 : 1237;
        }

        @Override
        void resizeValues(int capacity) {
            bits = Arrays.copyOf(bits, words(capacity));
        }

        @Override
        long valueVectorBytes() {
            return ARRAY_HEADER + 8L * bits.length;
        }
    }

    /**
     * Text ({@code text}, {@code varchar}, {@code bpchar}: the UTF-8 bytes as PostgreSQL wrote them),
     * {@code bytea} (decoded), or the raw text form of a type a batch cannot carry (kept for an identity key).
     */
    static final class BytesVector extends ColumnVector {
        static final int TEXT = 0;
        static final int BYTEA = 1;
        static final int RAW = 2;
        final int kind;
        byte[][] values;

        BytesVector(ReplicaColumn column, int capacity, int kind) {
            super(column, capacity);
            this.kind = kind;
            values = new byte[capacity][];
        }

        @Override
        boolean carried() {
            return kind != RAW;
        }

        @Override
        void parse(int row, byte[] text) {
            values[row] = kind == BYTEA ? parseBytea(text) : text.length == 0 ? EMPTY : text.clone();
        }

        @Override
        void clearValue(int row) {
            values[row] = null;
        }

        @Override
        void copyValue(int from, int to) {
            values[to] = values[from];
        }

        @Override
        boolean sameValue(int a, int b) {
            return Arrays.equals(values[a], values[b]);
        }

        @Override
        int hashValue(int row) {
            return Arrays.hashCode(values[row]);
        }

        @Override
        long heapOf(int row) {
            return values[row] == null ? 0 : arrayHeap(values[row].length);
        }

        @Override
        void resizeValues(int capacity) {
            values = Arrays.copyOf(values, capacity);
        }

        @Override
        long valueVectorBytes() {
            return ARRAY_HEADER + (long) REFERENCE * values.length;
        }
    }

    /**
     * A column of a type a batch cannot carry and no identity key needs: only whether it is NULL is kept. Rows
     * that differ only here look alike, which is harmless, since nothing that reads the replica can tell them
     * apart either (a whole-row identity finds some row that looks like the one meant, and that row's
     * stored values are the ones meant).
     */
    static final class AbsentVector extends ColumnVector {
        AbsentVector(ReplicaColumn column, int capacity) {
            super(column, capacity);
        }

        @Override
        void parse(int row, byte[] text) {
            // not kept
        }

        @Override
        void clearValue(int row) {
            // nothing kept
        }

        @Override
        void copyValue(int from, int to) {
            // nothing kept
        }

        @Override
        boolean sameValue(int a, int b) {
            return true;
        }

        @Override
        int hashValue(int row) {
            return 0;
        }

        @Override
        void resizeValues(int capacity) {
            // nothing kept
        }

        @Override
        long valueVectorBytes() {
            return 0;
        }
    }
}
