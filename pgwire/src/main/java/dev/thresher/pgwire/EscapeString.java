package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * An escape string's value ({@code E'...'}), read from its quote on ({@code E} before it): {@code ''} and the
 * backslash escapes {@code \b \f \n \r \t}, octal {@code \o}..{@code \ooo}, hex {@code \xh} or {@code \xhh}, a
 * backslash and {@code uXXXX} or {@code UXXXXXXXX} (a surrogate pair in two escapes); any other character after a
 * backslash stands for itself. Octal and hex escapes give bytes, which together with the rest must be valid UTF-8.
 * The string is read and decoded in one pass, so the first thing wrong in it is the one reported.
 */
final class EscapeString {
    private final String sql;
    private final int to;
    private final int open;
    private int pos;

    /** The escape string whose quote is at {@code open}, in {@code sql} up to {@code to}. */
    EscapeString(String sql, int open, int to) {
        this.sql = sql;
        this.open = open;
        this.to = to;
        this.pos = open;
    }

    /** The offset just past the closing quote, once {@link #decode} returned. */
    int end() {
        return pos;
    }

    /**
     * The value.
     *
     * @throws SqlLexer.LexError for an unterminated string (at its quote) or a malformed escape (at its backslash),
     *     {@link ErrorCode#INVALID_TEXT_ENCODING} when the bytes are not UTF-8
     */
    String decode() {
        pos++;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (true) {
            if (pos >= to) {
                throw new SqlLexer.LexError(open, "unterminated quoted string");
            }
            char c = sql.charAt(pos++);
            if (c == '\'') {
                if (pos < to && sql.charAt(pos) == '\'') {
                    out.write('\'');
                    pos++;
                    continue;
                }
                break;
            }
            if (c != '\\') {
                int end = Character.isHighSurrogate(c) && pos < to ? pos + 1 : pos;
                out.writeBytes(sql.substring(pos - 1, end).getBytes(StandardCharsets.UTF_8));
                pos = end;
                continue;
            }
            if (pos >= to) {
                continue; // the unterminated string is reported above
            }
            escape(out);
        }
        return dev.thresher.bindings.abi.Utf8.decode(ByteBuffer.wrap(out.toByteArray()))
                .orElseThrow(() -> new SqlLexer.LexError(open, "the escape string at position " + (open + 1)
                        + " is not valid UTF-8", ErrorCode.INVALID_TEXT_ENCODING));
    }

    /** One escape, its backslash just read. */
    private void escape(ByteArrayOutputStream out) {
        int at = pos - 1;
        char e = sql.charAt(pos++);
        switch (e) {
            case 'b' -> out.write('\b');
            case 'f' -> out.write('\f');
            case 'n' -> out.write('\n');
            case 'r' -> out.write('\r');
            case 't' -> out.write('\t');
            case 'x' -> {
                int value = digits(16, 1, 2);
                out.write(value < 0 ? 'x' : value);
            }
            case 'u', 'U' -> out.writeBytes(new String(Character.toChars(unicode(e, at))).getBytes(StandardCharsets.UTF_8));
            default -> {
                if (e >= '0' && e <= '7') {
                    pos--;
                    int value = digits(8, 1, 3);
                    if (value == 0) {
                        throw new SqlLexer.LexError(at, "invalid null character in an escape string");
                    }
                    out.write(value & 0xFF);
                } else {
                    int end = Character.isHighSurrogate(e) && pos < to ? pos + 1 : pos;
                    out.writeBytes(sql.substring(pos - 1, end).getBytes(StandardCharsets.UTF_8));
                    pos = end;
                }
            }
        }
    }

    /** The code point of a {@code \\u} or {@code \\U} escape ({@code e}), its backslash at {@code at}. */
    private int unicode(char e, int at) {
        int length = e == 'u' ? 4 : 8;
        int cp = digits(16, length, length);
        if (cp < 0) {
            throw new SqlLexer.LexError(at, "invalid Unicode escape: \\" + e + " takes " + length + " hexadecimal digits");
        }
        boolean surrogate = cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE;
        if (surrogate && Character.isHighSurrogate((char) cp)) {
            int low = -1;
            if (sql.startsWith("\\u", pos)) {
                pos += 2;
                low = digits(16, 4, 4);
            }
            if (low < 0 || !Character.isLowSurrogate((char) low)) {
                throw new SqlLexer.LexError(at, "invalid Unicode surrogate pair");
            }
            return Character.toCodePoint((char) cp, (char) low);
        }
        if (cp > Character.MAX_CODE_POINT || surrogate || cp == 0) {
            throw new SqlLexer.LexError(at, "invalid Unicode escape value");
        }
        return cp;
    }

    /** Between {@code min} and {@code max} digits in {@code radix} as a number; -1 (nothing read) when there are fewer. */
    private int digits(int radix, int min, int max) {
        int start = pos;
        long value = 0;
        while (pos < to && pos - start < max && Character.digit(sql.charAt(pos), radix) >= 0) {
            value = value * radix + Character.digit(sql.charAt(pos), radix);
            pos++;
        }
        if (pos - start < min) {
            pos = start;
            return -1;
        }
        return value > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) value;
    }
}
