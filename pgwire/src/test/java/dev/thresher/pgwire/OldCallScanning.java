package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;

/**
 * {@link CallStatementParser}'s own scanning of strings, quoted names, escape strings, dollar quotes and comments as
 * it was before it read them through {@link SqlLexer}: the oracle of {@link LexerEquivalenceTest}. A failure is a
 * {@link ThresherException} whose message is {@code position: problem}.
 */
final class OldCallScanning {
    private final String sql;
    private int pos;

    OldCallScanning(String sql, int pos) {
        this.sql = sql;
        this.pos = pos;
    }

    int pos() {
        return pos;
    }

    String readQuoted(char quote) {
        return quoted(quote);
    }

    String readEscapeString() {
        return escapeString();
    }

    String readDollarQuoted() {
        return dollarQuoted();
    }

    int skipSpace() {
        skipTrivia();
        return pos;
    }

    /** Text between {@code quote} characters, a doubled quote standing for one. */
    private String quoted(char quote) {
        int open = pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            int close = sql.indexOf(quote, pos);
            if (close < 0) {
                pos = open;
                throw syntax(quote == '"' ? "unterminated quoted identifier" : "unterminated quoted string");
            }
            out.append(sql, pos, close);
            pos = close + 1;
            if (!atEnd() && peek() == quote) {
                out.append(quote);
                pos++;
            } else {
                return out.toString();
            }
        }
    }

    /**
     * An escape string's text from its quote on ({@code E} already read): {@code ''} and the backslash escapes
     * {@code \b \f \n \r \t}, octal {@code \o}..{@code \ooo}, hex {@code \xh} or {@code \xhh}, a backslash and
     * {@code uXXXX} or {@code UXXXXXXXX} (a surrogate pair in two escapes); any other character after a backslash
     * stands for itself.
     * Octal and hex escapes give bytes, which together with the rest must be valid UTF-8.
     */
    private String escapeString() {
        int open = pos++;
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        while (true) {
            if (atEnd()) {
                pos = open;
                throw syntax("unterminated quoted string");
            }
            char c = sql.charAt(pos++);
            if (c == '\'') {
                if (!atEnd() && peek() == '\'') {
                    out.write('\'');
                    pos++;
                    continue;
                }
                break;
            }
            if (c != '\\') {
                int end = Character.isHighSurrogate(c) && !atEnd() ? pos + 1 : pos;
                out.writeBytes(sql.substring(pos - 1, end).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                pos = end;
                continue;
            }
            if (atEnd()) {
                continue; // the unterminated string is reported above
            }
            int at = pos - 1;
            char e = sql.charAt(pos++);
            switch (e) {
                case 'b' -> out.write('\b');
                case 'f' -> out.write('\f');
                case 'n' -> out.write('\n');
                case 'r' -> out.write('\r');
                case 't' -> out.write('\t');
                case 'x' -> {
                    int value = digits(16, 2);
                    if (value < 0) {
                        out.write('x');
                    } else {
                        out.write(value);
                    }
                }
                case 'u', 'U' -> {
                    int length = e == 'u' ? 4 : 8;
                    int cp = digits(16, length, length);
                    if (cp < 0) {
                        pos = at;
                        throw syntax("invalid Unicode escape: \\" + e + " takes " + length + " hexadecimal digits");
                    }
                    boolean surrogate = cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE;
                    if (surrogate && Character.isHighSurrogate((char) cp)) {
                        int low = -1;
                        if (sql.startsWith("\\u", pos)) {
                            pos += 2;
                            low = digits(16, 4, 4);
                        }
                        if (low < 0 || !Character.isLowSurrogate((char) low)) {
                            pos = at;
                            throw syntax("invalid Unicode surrogate pair");
                        }
                        cp = Character.toCodePoint((char) cp, (char) low);
                    } else if (cp > Character.MAX_CODE_POINT || surrogate || cp == 0) {
                        pos = at;
                        throw syntax("invalid Unicode escape value");
                    }
                    out.writeBytes(new String(Character.toChars(cp)).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                }
                default -> {
                    if (e >= '0' && e <= '7') {
                        pos--;
                        int value = digits(8, 3);
                        if (value == 0) {
                            pos = at;
                            throw syntax("invalid null character in an escape string");
                        }
                        out.write(value & 0xFF);
                    } else {
                        int end = Character.isHighSurrogate(e) && !atEnd() ? pos + 1 : pos;
                        out.writeBytes(sql.substring(pos - 1, end).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                        pos = end;
                    }
                }
            }
        }
        return dev.thresher.bindings.abi.Utf8.decode(java.nio.ByteBuffer.wrap(out.toByteArray()))
                .orElseThrow(() -> new ThresherException(ErrorCode.INVALID_TEXT_ENCODING, "the escape string at position "
                        + (open + 1) + " is not valid UTF-8"));
    }

    /** Up to {@code max} digits in {@code radix} as a number; -1 when there is none. */
    private int digits(int radix, int max) {
        return digits(radix, 1, max);
    }

    /** Between {@code min} and {@code max} digits in {@code radix} as a number; -1 when there are fewer. */
    private int digits(int radix, int min, int max) {
        int start = pos;
        long value = 0;
        while (!atEnd() && pos - start < max && Character.digit(peek(), radix) >= 0) {
            value = value * radix + Character.digit(peek(), radix);
            pos++;
        }
        if (pos - start < min) {
            pos = start;
            return -1;
        }
        return value > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) value;
    }

    private String dollarQuoted() {
        int open = pos;
        int tagEnd = pos + 1;
        while (tagEnd < sql.length() && isIdentifierPart(sql.charAt(tagEnd))) {
            tagEnd++;
        }
        if (tagEnd >= sql.length() || sql.charAt(tagEnd) != '$') {
            return null;
        }
        String delimiter = sql.substring(open, tagEnd + 1);
        int close = sql.indexOf(delimiter, tagEnd + 1);
        if (close < 0) {
            throw syntax("unterminated dollar-quoted string");
        }
        pos = close + delimiter.length();
        return sql.substring(tagEnd + 1, close);
    }
    /** Skips whitespace, {@code --} line comments and nested block comments. */
    private void skipTrivia() {
        while (!atEnd()) {
            char c = peek();
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
                pos++;
            } else if (sql.startsWith("--", pos)) {
                int eol = sql.indexOf('\n', pos);
                pos = eol < 0 ? sql.length() : eol + 1;
            } else if (sql.startsWith("/*", pos)) {
                int open = pos;
                int depth = 0;
                do {
                    if (sql.startsWith("/*", pos)) {
                        depth++;
                        pos += 2;
                    } else if (sql.startsWith("*/", pos)) {
                        depth--;
                        pos += 2;
                    } else if (atEnd()) {
                        pos = open;
                        throw syntax("unterminated /* comment");
                    } else {
                        pos++;
                    }
                } while (depth > 0);
            } else {
                return;
            }
        }
    }

    private boolean atEnd() {
        return pos >= sql.length();
    }

    private char peek() {
        return sql.charAt(pos);
    }

    private static boolean isIdentifierPart(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }

    private ThresherException syntax(String message) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, pos + ": " + message);
    }
}
