package dev.thresher.errors;

/**
 * Input of a caller as an error message may show it: at most {@value #MAX_CODE_POINTS} characters, then
 * {@code …(N bytes)} naming the whole input's UTF-8 length, with every character that could corrupt a log line or a
 * terminal escaped: control characters as {@code \n}, {@code \r}, {@code \t} or {@code \xNN}, other invisible or
 * reordering characters (format characters such as U+202E, line and paragraph separators, lone surrogates) as
 * {@code \\uNNNN}, and the backslash itself as {@code \\}, so the rendering is unambiguous.
 *
 * <p>Example: the text {@code a}, U+0001, {@code b}, a line feed is shown as {@code a\x01b\n}; the text of a 1 MiB name is its first 64
 * characters and {@code …(1048576 bytes)}. Callers keep their own quotes around it:
 * {@code "prepared statement \"" + Quoted.of(name) + "\" does not exist"}.
 */
public final class Quoted {
    /** Characters of the input shown before it is cut. */
    public static final int MAX_CODE_POINTS = 64;

    private Quoted() {
    }

    /** The input as a message may show it; {@code null} is {@code null}. */
    public static String of(String input) {
        if (input == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder(Math.min(input.length(), MAX_CODE_POINTS) + 16);
        int shown = 0;
        int i = 0;
        while (i < input.length() && shown < MAX_CODE_POINTS) {
            int c = input.codePointAt(i);
            int width = Character.charCount(c);
            escape(out, c);
            i += width;
            shown++;
        }
        if (i < input.length()) {
            out.append("…(").append(utf8Length(input)).append(" bytes)");
        }
        return out.toString();
    }

    private static void escape(StringBuilder out, int c) {
        switch (c) {
            case '\\' -> out.append("\\\\");
            case '\n' -> out.append("\\n");
            case '\r' -> out.append("\\r");
            case '\t' -> out.append("\\t");
            default -> {
                if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
                    out.append(String.format("\\x%02x", c));
                } else if (invisible(c)) {
                    out.append(String.format("\\u%04x", c));
                } else {
                    out.appendCodePoint(c);
                }
            }
        }
    }

    /** The most characters of a whole message a front door sends ({@link #message}). */
    public static final int MAX_MESSAGE_CODE_POINTS = 8_192;

    /**
     * A whole error message as a front door sends it, whoever built it: every control character but newline and tab
     * and every invisible or reordering character escaped as {@link #of} escapes them (the backslash left as it is, so
     * what {@link #of} quoted inside it reads the same), at most {@value #MAX_MESSAGE_CODE_POINTS} characters. What a
     * stranger sent cannot reach a terminal or a log line raw through a message that forgot to quote it.
     */
    public static String message(String message) {
        if (message == null) {
            return "";
        }
        StringBuilder out = null;
        int shown = 0;
        int i = 0;
        while (i < message.length()) {
            int c = message.codePointAt(i);
            boolean unsafe = c != '\n' && c != '\t' && c != '\\' && (c < 0x20 || (c >= 0x7f && c <= 0x9f) || invisible(c));
            if ((unsafe || shown == MAX_MESSAGE_CODE_POINTS) && out == null) {
                out = new StringBuilder(message.length() + 16).append(message, 0, i);
            }
            if (shown == MAX_MESSAGE_CODE_POINTS) {
                out.append("…(").append(utf8Length(message)).append(" bytes)");
                return out.toString();
            }
            if (out != null) {
                if (unsafe) {
                    escape(out, c);
                } else {
                    out.appendCodePoint(c);
                }
            }
            i += Character.charCount(c);
            shown++;
        }
        return out == null ? message : out.toString();
    }

    private static boolean invisible(int c) {
        int type = Character.getType(c);
        return type == Character.FORMAT || type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR
                || type == Character.SURROGATE;
    }

    /** The input's length in UTF-8 bytes (a lone surrogate counts as the 3 bytes of its replacement). */
    public static long utf8Length(String s) {
        long bytes = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }

    /** Whether {@code s} is longer than {@code maxBytes} in UTF-8. */
    public static boolean longerThan(String s, int maxBytes) {
        // a char is at most 3 bytes (a surrogate pair 4 for 2 chars): the count is needed only in between
        return s.length() > maxBytes || (s.length() * 3L > maxBytes && utf8Length(s) > maxBytes);
    }
}
