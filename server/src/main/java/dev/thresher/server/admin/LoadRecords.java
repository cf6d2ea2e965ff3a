package dev.thresher.server.admin;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.replica.CopyText;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * What a load reads: rows as fields, from a CSV file or {@code COPY}'s CSV and text formats ({@link CsvReader},
 * {@link TextReader}), or the rows of an {@code INSERT}; each record with the line (or row) it started on, for the
 * messages that name it.
 */
public final class LoadRecords {
    private LoadRecords() {}

    /**
     * One field as read, and whether it was quoted: an unquoted empty field is NULL (as CSV's COPY reads
     * it), so a NULL is {@link #NULL} and an empty string is a quoted empty field.
     */
    public record Field(String text, boolean quoted) {
        /** SQL NULL. */
        public static final Field NULL = new Field("", false);

        /** A value, never NULL. */
        public static Field of(String text) {
            return new Field(text, true);
        }

        public boolean isNull() {
            return !quoted && text.isEmpty();
        }

        void appendCsv(StringBuilder out) {
            if (quoted || text.indexOf(',') >= 0 || text.indexOf('"') >= 0 || text.indexOf('\n') >= 0
                    || text.indexOf('\r') >= 0) {
                out.append('"').append(text.replace("\"", "\"\"")).append('"');
            } else {
                out.append(text);
            }
        }
    }

    /** Rows as lists of fields, each with the line it started on. */
    public interface Records {
        /** The next record, or null at the end of the input. */
        List<Field> next() throws IOException;

        int recordLine();

        /** What {@link #recordLine} counts, for messages: "line", or "row" for the rows of an INSERT. */
        default String unit() {
            return "line";
        }
    }

    /**
     * Refuses a record past {@code maxChars}, before it is held: no call could ever read a row larger than a batch
     * ({@code limits.batchMaxBytes}), and a record that never ends (an unclosed quote, a file with no line break)
     * must not grow a node's memory with its sender's bytes.
     */
    static ThresherException tooLarge(String unit, int recordLine, int maxChars) {
        return new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, unit + " " + recordLine + " is longer than "
                + maxChars + " characters (limits.batchMaxBytes): no call could read a row that large");
    }

    /**
     * RFC 4180 records: fields separated by the delimiter (a comma unless told), quoted fields may hold it,
     * quotes ("") and newlines; an unquoted field equal to the NULL string is NULL. A record holds at most
     * {@code maxRecordChars} characters.
     */
    public static final class CsvReader implements Records {
        private final Reader in;
        private final char delimiter;
        private final String nullString;
        private final int maxRecordChars;
        private int line = 1;
        private int recordLine;
        private int pushed = -2;
        private int recordChars;

        public CsvReader(Reader in, char delimiter, String nullString, int maxRecordChars) {
            if (maxRecordChars < 1) {
                throw new IllegalArgumentException("maxRecordChars " + maxRecordChars);
            }
            this.in = in;
            this.delimiter = delimiter;
            this.nullString = nullString;
            this.maxRecordChars = maxRecordChars;
        }

        @Override
        public int recordLine() {
            return recordLine;
        }

        /** The next character, counted in the record being read (once, however often it was given back). */
        private int read() throws IOException {
            int c;
            if (pushed != -2) {
                c = pushed;
                pushed = -2;
            } else {
                c = in.read();
            }
            if (c != -1 && ++recordChars > maxRecordChars) {
                throw tooLarge("line", recordLine, maxRecordChars);
            }
            return c;
        }

        /** Gives {@code c} back, to be read next, by this record or the next. */
        private void unread(int c) {
            pushed = c;
            if (c != -1) {
                recordChars--;
            }
        }

        private Field field(StringBuilder text, boolean quoted) {
            String t = text.toString();
            if (!quoted && t.equals(nullString)) {
                return Field.NULL;
            }
            return quoted || !t.isEmpty() ? new Field(t, quoted) : Field.of(t);
        }

        @Override
        public List<Field> next() throws IOException {
            recordLine = line;
            recordChars = 0;
            int c = read();
            if (c == -1) {
                return null;
            }
            unread(c);
            List<Field> fields = new ArrayList<>();
            StringBuilder field = new StringBuilder();
            boolean quoted = false;
            while (true) {
                c = read();
                if (c == '"' && field.isEmpty() && !quoted) {
                    quoted = true;
                    while (true) {
                        c = read();
                        if (c == -1) {
                            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "line " + recordLine
                                    + ": a quoted field is not closed");
                        }
                        if (c == '"') {
                            int d = read();
                            if (d == '"') {
                                field.append('"');
                                continue;
                            }
                            unread(d);
                            break;
                        }
                        if (c == '\n') {
                            line++;
                        }
                        field.append((char) c);
                    }
                    continue;
                }
                if (c == delimiter) {
                    fields.add(field(field, quoted));
                    field.setLength(0);
                    quoted = false;
                    continue;
                }
                if (c == '\r') {
                    int d = read();
                    if (d != '\n') {
                        unread(d);
                    }
                    c = '\n';
                }
                if (c == '\n' || c == -1) {
                    if (!quoted && fields.isEmpty() && field.toString().equals("\\.")) {
                        return null; // psql's end-of-data marker
                    }
                    fields.add(field(field, quoted));
                    if (c == '\n') {
                        line++;
                    }
                    return fields;
                }
                if (quoted) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "line " + recordLine
                            + ": text after a closing quote");
                }
                field.append((char) c);
            }
        }
    }

    /**
     * PostgreSQL's text format of COPY: one row per line, fields separated by the delimiter (a tab unless
     * told), the NULL string ({@code \N} unless told) for NULL, and backslash escapes, decoded by the codec the
     * replicas read COPY's text with ({@link CopyText#fields}); a line {@code \.} ends the data. A field whose
     * escapes make bytes that are not UTF-8 is refused. A line ends at {@code \n}, {@code \r\n} or {@code \r}, and
     * holds at most {@code maxLineChars} characters.
     */
    static final class TextReader implements Records {
        private final BufferedReader in;
        private final byte delimiter;
        private final byte[] nullString;
        private final int maxLineChars;
        private final StringBuilder lineText = new StringBuilder();
        private int line;

        TextReader(BufferedReader in, char delimiter, String nullString, int maxLineChars) {
            if (delimiter > 0x7f) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "COPY DELIMITER must be a single one-byte character");
            }
            if (maxLineChars < 1) {
                throw new IllegalArgumentException("maxLineChars " + maxLineChars);
            }
            this.in = in;
            this.delimiter = (byte) delimiter;
            this.nullString = nullString.getBytes(StandardCharsets.UTF_8);
            this.maxLineChars = maxLineChars;
        }

        /** The next line without its end, as {@link BufferedReader#readLine} reads it, or null at the end. */
        private String readLine() throws IOException {
            lineText.setLength(0);
            int c = in.read();
            if (c == -1) {
                return null;
            }
            while (c != -1 && c != '\n' && c != '\r') {
                if (lineText.length() == maxLineChars) {
                    throw tooLarge("line", line, maxLineChars);
                }
                lineText.append((char) c);
                c = in.read();
            }
            if (c == '\r') {
                in.mark(1);
                if (in.read() != '\n') {
                    in.reset();
                }
            }
            return lineText.toString();
        }

        @Override
        public int recordLine() {
            return line;
        }

        @Override
        public List<Field> next() throws IOException {
            line++;
            String text = readLine();
            if (text == null || text.equals("\\.")) {
                return null;
            }
            byte[][] raw;
            try {
                raw = CopyText.fields(text.getBytes(StandardCharsets.UTF_8), delimiter, nullString);
            } catch (IllegalArgumentException e) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "line " + line + ": "
                        + e.getMessage().replaceFirst("^COPY text: ", ""));
            }
            List<Field> fields = new ArrayList<>(raw.length);
            for (byte[] value : raw) {
                fields.add(value == null ? Field.NULL : Field.of(utf8(value)));
            }
            return fields;
        }

        private String utf8(byte[] bytes) {
            try {
                return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
            } catch (CharacterCodingException ex) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "line " + line
                        + ": an escape makes a byte sequence that is not UTF-8");
            }
        }
    }
}
