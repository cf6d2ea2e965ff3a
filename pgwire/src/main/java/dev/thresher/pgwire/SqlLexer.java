package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;

/**
 * The tokens of a statement as PostgreSQL reads them, for the grammars of the statements pgwire serves:
 *
 * <pre>
 * word        := letter ( letter | digit | '_' | '$' )*     -- a keyword or an unquoted name, kept as written
 *                                                         -- (a grammar folds it: {@link Token#folded()})
 * letter      := [A-Za-z_] | any character from U+0080 that is a letter
 * quotedName  := '"' ( any but '"' | '""' )* '"'            -- the name as written, '""' standing for '"'
 * string      := '\'' ( any but '\'' | '\'\'' )* '\''        -- standard_conforming_strings: no backslash escapes
 * escape      := [Ee] '\'' ( any but '\'' or '\\' | '\'\'' | '\\' any )* '\''   -- text kept undecoded
 * dollar      := '$' tag? '$' any '$' tag? '$'                -- tag: [A-Za-z0-9_]*, not starting with a digit
 * parameter   := '$' digit+
 * number      := digit+ ( '.' digit* )? ( [Ee] [+-]? digit+ )? | '.' digit+ ...
 * symbol      := '::' | '<=' | '>=' | '<>' | '!=' | any other single character
 * </pre>
 *
 * Between tokens: whitespace (space, tab, newline, carriage return, form feed), {@code -- line} comments and nested
 * {@code /* block * /} comments. Positions are 0-based offsets into the text (messages show them 1-based).
 */
final class SqlLexer {
    /** What a token is. */
    enum Kind { WORD, QUOTED_NAME, STRING, ESCAPE_STRING, DOLLAR_STRING, PARAMETER, NUMBER, SYMBOL }

    /**
     * One token.
     *
     * @param text a word or symbol as written; the value of a quoted name, string or dollar-quoted string; the
     *     undecoded text of an escape string; the digits of a parameter or the text of a number
     * @param start the offset of its first character
     * @param end the offset just past its last character
     */
    record Token(Kind kind, String text, int start, int end) {
        /** Whether this is the keyword {@code keyword} (a word, without regard to case). */
        boolean is(String keyword) {
            return kind == Kind.WORD && text.equalsIgnoreCase(keyword);
        }

        /** Whether this is the symbol {@code symbol}. */
        boolean isSymbol(String symbol) {
            return kind == Kind.SYMBOL && text.equals(symbol);
        }

        /** A word folded to lower case as PostgreSQL folds an unquoted name; any other token's text. */
        String folded() {
            return kind == Kind.WORD ? text.toLowerCase(java.util.Locale.ROOT) : text;
        }
    }

    private final String sql;
    private final int to;
    private int pos;

    private SqlLexer(String sql, int from, int to) {
        this.sql = sql;
        this.pos = from;
        this.to = to;
    }

    /** The tokens of all of {@code sql}. */
    static List<Token> tokens(String sql) {
        return tokens(sql, 0, sql.length());
    }

    /**
     * The tokens of {@code sql} between {@code from} and {@code to}.
     *
     * @throws ThresherException {@link ErrorCode#SYNTAX_ERROR} for an unterminated string, quoted name, dollar quote
     *     or comment, naming its position
     */
    static List<Token> tokens(String sql, int from, int to) {
        SqlLexer lexer = new SqlLexer(sql, from, to);
        List<Token> out = new ArrayList<>();
        for (Token t = lexer.next(); t != null; t = lexer.next()) {
            out.add(t);
        }
        return out;
    }

    private Token next() {
        skipTrivia();
        if (pos >= to) {
            return null;
        }
        int start = pos;
        char c = sql.charAt(pos);
        if (c == '\'') {
            return new Token(Kind.STRING, quoted('\''), start, pos);
        }
        if (c == '"') {
            return new Token(Kind.QUOTED_NAME, quoted('"'), start, pos);
        }
        if ((c == 'E' || c == 'e') && pos + 1 < to && sql.charAt(pos + 1) == '\'') {
            pos++;
            return new Token(Kind.ESCAPE_STRING, escapeText(start), start, pos);
        }
        if (startsWord(c)) {
            pos++;
            while (pos < to && continuesWord(sql.charAt(pos))) {
                pos++;
            }
            return new Token(Kind.WORD, sql.substring(start, pos), start, pos);
        }
        if (c == '$' && pos + 1 < to && isDigit(sql.charAt(pos + 1))) {
            pos++;
            while (pos < to && isDigit(sql.charAt(pos))) {
                pos++;
            }
            return new Token(Kind.PARAMETER, sql.substring(start + 1, pos), start, pos);
        }
        if (c == '$') {
            String value = dollarQuoted();
            if (value != null) {
                return new Token(Kind.DOLLAR_STRING, value, start, pos);
            }
            pos = start + 1;
            return new Token(Kind.SYMBOL, "$", start, pos);
        }
        if (isDigit(c) || c == '.' && pos + 1 < to && isDigit(sql.charAt(pos + 1))) {
            number();
            return new Token(Kind.NUMBER, sql.substring(start, pos), start, pos);
        }
        for (String two : new String[] {"::", "<=", ">=", "<>", "!="}) {
            if (sql.startsWith(two, pos) && pos + 2 <= to) {
                pos += 2;
                return new Token(Kind.SYMBOL, two, start, pos);
            }
        }
        pos += Character.isHighSurrogate(c) && pos + 1 < to ? 2 : 1;
        return new Token(Kind.SYMBOL, sql.substring(start, pos), start, pos);
    }

    private void number() {
        while (pos < to && isDigit(sql.charAt(pos))) {
            pos++;
        }
        if (pos < to && sql.charAt(pos) == '.') {
            pos++;
            while (pos < to && isDigit(sql.charAt(pos))) {
                pos++;
            }
        }
        if (pos + 1 < to && (sql.charAt(pos) == 'e' || sql.charAt(pos) == 'E')) {
            int exponent = pos + 1;
            if (exponent + 1 < to && (sql.charAt(exponent) == '+' || sql.charAt(exponent) == '-')) {
                exponent++;
            }
            if (exponent < to && isDigit(sql.charAt(exponent))) {
                pos = exponent;
                while (pos < to && isDigit(sql.charAt(pos))) {
                    pos++;
                }
            }
        }
    }

    /** Text between {@code quote} characters, a doubled quote standing for one. */
    private String quoted(char quote) {
        int open = pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            int close = sql.indexOf(quote, pos);
            if (close < 0 || close >= to) {
                throw syntax(open, quote == '"' ? "unterminated quoted identifier" : "unterminated quoted string");
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

    /** An escape string's text as written, from its quote ({@code E} already read) to its closing quote. */
    private String escapeText(int start) {
        int open = pos++;
        while (true) {
            if (pos >= to) {
                throw syntax(start, "unterminated quoted string");
            }
            char c = sql.charAt(pos++);
            if (c == '\\') {
                pos++;
            } else if (c == '\'') {
                if (pos < to && sql.charAt(pos) == '\'') {
                    pos++;
                } else {
                    return sql.substring(open + 1, pos - 1);
                }
            }
        }
    }

    /** A dollar-quoted string's value, or null (nothing consumed) when {@code $} does not open one. */
    private String dollarQuoted() {
        int open = pos;
        int tagEnd = pos + 1;
        while (tagEnd < to && isAsciiWordPart(sql.charAt(tagEnd))) {
            tagEnd++;
        }
        if (tagEnd >= to || sql.charAt(tagEnd) != '$') {
            return null;
        }
        String delimiter = sql.substring(open, tagEnd + 1);
        int close = sql.indexOf(delimiter, tagEnd + 1);
        if (close < 0 || close + delimiter.length() > to) {
            throw syntax(open, "unterminated dollar-quoted string");
        }
        pos = close + delimiter.length();
        return sql.substring(tagEnd + 1, close);
    }

    private void skipTrivia() {
        while (pos < to) {
            char c = sql.charAt(pos);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
                pos++;
            } else if (sql.startsWith("--", pos)) {
                int eol = sql.indexOf('\n', pos);
                pos = eol < 0 || eol >= to ? to : eol + 1;
            } else if (sql.startsWith("/*", pos)) {
                int open = pos;
                int depth = 0;
                do {
                    if (pos >= to) {
                        throw syntax(open, "unterminated /* comment");
                    } else if (sql.startsWith("/*", pos)) {
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

    private static boolean startsWord(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80 && Character.isLetter(c);
    }

    private static boolean continuesWord(char c) {
        return startsWord(c) || isDigit(c) || c == '$';
    }

    private static boolean isAsciiWordPart(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static ThresherException syntax(int at, String message) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (at + 1) + ": " + message);
    }
}
