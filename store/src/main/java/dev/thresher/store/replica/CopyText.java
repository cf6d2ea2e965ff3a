package dev.thresher.store.replica;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * PostgreSQL's text format of COPY, the one codec of it: rows of {@code COPY ... TO STDOUT} (the default: tab
 * between columns, {@code \N} for NULL, backslash escapes) parsed into {@link Tuple}s holding each column's text
 * form, the same bytes {@code pgoutput} sends for it, and the fields of a line of {@code COPY ... FROM STDIN} with
 * its {@code DELIMITER} and {@code NULL} options ({@link #fields}).
 *
 * <p>Escapes are decoded at byte level as {@code COPY FROM} does: {@code \b \f \n \r \t \v} are the
 * control characters, {@code \\} a backslash, {@code \} and one to three octal digits the byte of that
 * value (modulo 256), {@code \x} and one or two hex digits the byte of that value, a backslash before any
 * other byte that byte. A column is NULL only when it is exactly {@code \N}. Every other byte is copied as
 * it is, so a value's bytes are its UTF-8 text. A raw newline or carriage return, a lone trailing
 * backslash, or the wrong number of columns is refused with {@link IllegalArgumentException}.
 */
public final class CopyText {
    private CopyText() {}

    /** Parses one row, without its trailing newline, of {@code columns} columns. */
    public static Tuple parse(byte[] line, int columns) {
        return parse(line, 0, line.length, columns);
    }

    /**
     * Parses one row as pgjdbc's {@code CopyOut.readFromCopy()} returns it: the line and its terminating
     * newline, which must be there.
     */
    public static Tuple parseRow(byte[] row, int columns) {
        if (row.length == 0 || row[row.length - 1] != '\n') {
            throw new IllegalArgumentException("COPY text: a row must end with a newline");
        }
        return parse(row, 0, row.length - 1, columns);
    }

    /** Parses the row in {@code line[offset, offset + length)}, without its trailing newline. */
    public static Tuple parse(byte[] line, int offset, int length, int columns) {
        if (columns < 0) {
            throw new IllegalArgumentException("COPY text: negative column count " + columns);
        }
        return new Tuple(split(line, offset, length, (byte) '\t', NULL_MARKER, columns));
    }

    /**
     * The fields of one line of COPY's text format as {@code COPY FROM} reads them with options: separated by the
     * one-byte {@code delimiter} (an escaped one is data), {@code null} for a field whose bytes are exactly
     * {@code nullMarker}, every other field's escapes decoded; as many fields as the line holds.
     *
     * @throws IllegalArgumentException for a raw line break, a lone trailing backslash, or a delimiter that is not one
     *     byte of ASCII
     */
    public static byte[][] fields(byte[] line, byte delimiter, byte[] nullMarker) {
        if (delimiter < 0 || delimiter == '\\' || delimiter == '\n' || delimiter == '\r') {
            throw new IllegalArgumentException("COPY text: the delimiter must be one byte of ASCII other than a backslash"
                    + " or a line break");
        }
        return split(line, 0, line.length, delimiter, Objects.requireNonNull(nullMarker, "nullMarker"), -1);
    }

    private static final byte[] NULL_MARKER = {'\\', 'N'};

    /**
     * Long because: one pass over the row's bytes, escapes decoded inline: the inner loop of every replica's copy.
     * The fields of {@code line[offset, offset + length)}: exactly {@code columns} of them, or any number for -1. An
     * escape decoded by a method of its own would hand back both the byte and the new position per escaped byte.
     */
    private static byte[][] split(byte[] line, int offset, int length, byte delimiter, byte[] nullMarker, int columns) {
        Objects.checkFromIndexSize(offset, length, line.length);
        if (columns == 0) {
            if (length != 0) {
                throw new IllegalArgumentException("COPY text: a row of no columns must be empty, got " + length + " bytes");
            }
            return new byte[0][];
        }
        byte[][] values = new byte[columns < 0 ? 4 : columns][];
        byte[] scratch = new byte[length];
        int end = offset + length;
        int p = offset;
        int column = 0;
        while (true) {
            int start = p;
            int n = 0;
            while (p < end && line[p] != delimiter) {
                byte c = line[p++];
                if (c == '\n' || c == '\r') {
                    throw new IllegalArgumentException("COPY text: raw " + (c == '\n' ? "newline" : "carriage return")
                            + " in column " + (column + 1));
                }
                if (c != '\\') {
                    scratch[n++] = c;
                    continue;
                }
                if (p == end) {
                    throw new IllegalArgumentException("COPY text: the row ends in a lone backslash");
                }
                c = line[p++];
                switch (c) {
                    case 'b' -> scratch[n++] = '\b';
                    case 'f' -> scratch[n++] = '\f';
                    case 'n' -> scratch[n++] = '\n';
                    case 'r' -> scratch[n++] = '\r';
                    case 't' -> scratch[n++] = '\t';
                    case 'v' -> scratch[n++] = 0x0b;
                    case '0', '1', '2', '3', '4', '5', '6', '7' -> {
                        int value = c - '0';
                        for (int digits = 1; digits < 3 && p < end && line[p] >= '0' && line[p] <= '7'; digits++) {
                            value = (value << 3) + (line[p++] - '0');
                        }
                        scratch[n++] = (byte) value;
                    }
                    case 'x' -> {
                        int high = p < end ? Character.digit(line[p], 16) : -1;
                        if (high < 0) {
                            scratch[n++] = 'x';
                        } else {
                            p++;
                            int value = high;
                            int low = p < end ? Character.digit(line[p], 16) : -1;
                            if (low >= 0) {
                                p++;
                                value = (value << 4) + low;
                            }
                            scratch[n++] = (byte) value;
                        }
                    }
                    case '\n', '\r' -> throw new IllegalArgumentException(
                            "COPY text: escaped raw line break in column " + (column + 1));
                    default -> scratch[n++] = c;
                }
            }
            if (column == columns) {
                throw new IllegalArgumentException("COPY text: more than " + columns + " columns");
            }
            if (column == values.length) {
                values = Arrays.copyOf(values, values.length * 2);
            }
            boolean isNull = Arrays.equals(line, start, p, nullMarker, 0, nullMarker.length);
            values[column++] = isNull ? null : Arrays.copyOf(scratch, n);
            if (p == end) {
                break;
            }
            p++; // the delimiter
        }
        if (columns < 0) {
            return column == values.length ? values : Arrays.copyOf(values, column);
        }
        if (column != columns) {
            throw new IllegalArgumentException("COPY text: " + column + " columns, expected " + columns);
        }
        return values;
    }

    /**
     * An output stream for pgjdbc's {@code CopyManager.copyOut(String, OutputStream)}: splits what is
     * written into newline-terminated rows, however it is chunked, and hands each parsed row to
     * {@code rows} (a parse failure propagates out of {@code write}). {@code close()} refuses a last row
     * without its newline.
     */
    public static OutputStream rowSink(int columns, Consumer<Tuple> rows) {
        Objects.requireNonNull(rows, "rows");
        if (columns < 0) {
            throw new IllegalArgumentException("COPY text: negative column count " + columns);
        }
        return new RowSink(columns, rows);
    }

    private static final class RowSink extends OutputStream {
        private final int columns;
        private final Consumer<Tuple> rows;
        private byte[] pending = new byte[256];
        private int size;

        RowSink(int columns, Consumer<Tuple> rows) {
            this.columns = columns;
            this.rows = rows;
        }

        @Override
        public void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) {
            Objects.checkFromIndexSize(off, len, b.length);
            int end = off + len;
            int lineStart = off;
            for (int i = off; i < end; i++) {
                if (b[i] != '\n') {
                    continue;
                }
                if (size == 0) {
                    rows.accept(parse(b, lineStart, i - lineStart, columns));
                } else {
                    append(b, lineStart, i - lineStart);
                    int length = size;
                    size = 0;
                    rows.accept(parse(pending, 0, length, columns));
                }
                lineStart = i + 1;
            }
            append(b, lineStart, end - lineStart);
        }

        private void append(byte[] b, int off, int len) {
            if (len == 0) {
                return;
            }
            if (size + len > pending.length) {
                pending = Arrays.copyOf(pending, Math.max(pending.length * 2, size + len));
            }
            System.arraycopy(b, off, pending, size, len);
            size += len;
        }

        @Override
        public void close() throws IOException {
            if (size != 0) {
                int unterminated = size;
                size = 0;
                throw new IOException("COPY text: the last row (" + unterminated + " bytes) has no newline");
            }
        }
    }
}
