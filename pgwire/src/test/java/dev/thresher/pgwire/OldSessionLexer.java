package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** {@link SessionQueries}' own lexer as it was before it read {@link SqlLexer}'s tokens: the oracle of {@link LexerEquivalenceTest}. */
final class OldSessionLexer {
    private static final Map<Character, Integer> SIMPLE_ESCAPES = Map.of('b', 8, 'f', 12, 'n', 10, 'r', 13, 't', 9);
    private final String sql;
    private final int to;
    private int pos;

    OldSessionLexer(String sql, int from, int to) {
        this.sql = sql;
        this.pos = from;
        this.to = to;
    }

    List<String> all() {
        List<String> out = new ArrayList<>();
        while (true) {
            skipTrivia();
            if (pos >= to) {
                out.add(tok("END", ""));
                return out;
            }
            out.add(token());
        }
    }

    private String token() {
        char c = sql.charAt(pos);
        if ((c == 'E' || c == 'e') && pos + 1 < to && sql.charAt(pos + 1) == '\'') {
            pos++;
            return tok("STRING", escaped());
        }
        if (c == '_' || Character.isLetter(c)) {
            int at = pos;
            while (pos < to && (sql.charAt(pos) == '_' || sql.charAt(pos) == '$'
                    || Character.isLetterOrDigit(sql.charAt(pos)))) {
                pos++;
            }
            return tok("WORD", sql.substring(at, pos).toLowerCase(Locale.ROOT));
        }
        if (c == '"' || c == '\'') {
            return tok(c == '"' ? "QUOTED" : "STRING", quoted(c));
        }
        if (c >= '0' && c <= '9') {
            int at = pos;
            while (pos < to && (Character.isLetterOrDigit(sql.charAt(pos)) || sql.charAt(pos) == '.')) {
                pos++;
            }
            return tok("NUMBER", sql.substring(at, pos));
        }
        if (c == '$' && pos + 1 < to && Character.isDigit(sql.charAt(pos + 1))) {
            int at = ++pos;
            while (pos < to && Character.isDigit(sql.charAt(pos))) {
                pos++;
            }
            String digits = sql.substring(at, pos);
            return tok("PARAM", digits.length() > 6 ? "999999" : digits);
        }
        if (c == ':' && pos + 1 < to && sql.charAt(pos + 1) == ':') {
            pos += 2;
            return tok("SYMBOL", "::");
        }
        pos++;
        return tok("SYMBOL", String.valueOf(c));
    }

    private String quoted(char quote) {
        int open = pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            int close = sql.indexOf(quote, pos);
            if (close < 0 || close >= to) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "unterminated quote at position " + (open + 1));
            }
            out.append(sql, pos, close);
            pos = close + 1;
            if (pos < to && sql.charAt(pos) == quote) {
                out.append(quote);
                pos++;
            } else {
                return out.toString();
            }
        }
    }

    /** An escape string's body from its quote on ({@code E'a\'b'}): psql writes names with backslashes so. */
    private String escaped() {
        int open = pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            if (pos >= to) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "unterminated quote at position " + (open + 1));
            }
            char c = sql.charAt(pos++);
            if (c == '\'') {
                if (pos < to && sql.charAt(pos) == '\'') {
                    out.append('\'');
                    pos++;
                    continue;
                }
                return out.toString();
            }
            if (c != '\\' || pos >= to) {
                out.append(c);
                continue;
            }
            char e = sql.charAt(pos++);
            Integer simple = SIMPLE_ESCAPES.get(e);
            if (simple != null) {
                out.append((char) simple.intValue());
            } else {
                out.append(e); // \\, \', and anything else stands for itself; no octal or hex in names psql writes
            }
        }
    }

    private void skipTrivia() {
        while (pos < to) {
            char c = sql.charAt(pos);
            if (Character.isWhitespace(c)) {
                pos++;
            } else if (sql.startsWith("--", pos)) {
                int eol = sql.indexOf('\n', pos);
                pos = eol < 0 || eol >= to ? to : eol + 1;
            } else if (sql.startsWith("/*", pos)) {
                int depth = 0;
                do {
                    if (pos >= to) {
                        throw new ThresherException(ErrorCode.SYNTAX_ERROR, "unterminated comment");
                    }
                    if (sql.startsWith("/*", pos)) {
                        depth++;
                        pos += 2;
                    } else if (sql.startsWith("*/", pos)) {
                        depth--;
                        pos += 2;
                    } else {
                        pos++;
                    }
                } while (depth > 0);
            } else {
                return;
            }
        }
    }

    private static String tok(String kind, String text) {
        return kind + ":" + text;
    }
}
