package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;

/**
 * The tokens of a statement as PostgreSQL reads them, for the grammars of the statements pgwire serves:
 *
 * <pre>
 * word        := letter ( letter | digit | '$' )*           -- a keyword or an unquoted name, kept as written
 *                                                         -- (a grammar folds it: {@link Token#folded()})
 * letter      := [A-Za-z_] | a letter past ASCII ({@link Dialect#unicodeWords})
 * quotedName  := '"' ( any but '"' | '""' )* '"'            -- the name as written, '""' standing for '"'
 * string      := '\'' ( any but '\'' | '\'\'' )* '\''        -- standard_conforming_strings: no backslash escapes
 * escape      := [Ee] '\'' ( any but '\'' or '\\' | '\'\'' | '\\' any )* '\''   -- text kept undecoded
 * dollar      := '$' tag? '$' any '$' tag? '$'                -- tag: [A-Za-z0-9_]*, not starting with a digit
 * parameter   := '$' digit+
 * number      := digit+ ( '.' digit* )? ( [Ee] [+-]? digit+ )? | '.' digit+ ...
 * symbol      := '::' | '<=' | '>=' | '<>' | '!=' | '||' | any other single character
 * </pre>
 *
 * Between tokens: whitespace, {@code -- line} comments and nested {@code /* block * /} comments. Positions are 0-based
 * offsets into the text (messages show them 1-based).
 *
 * <p>The grammars read what they read today, to the character, so the lexer keeps the few differences they had as a
 * {@link Dialect}: which characters are whitespace, whether a word may hold letters past ASCII, and whether
 * {@code E'...'} is one token. A grammar checks the rest itself, over the tokens and the text around them (the
 * journal's grammar refuses {@code B'...'}, a number followed by a letter, a lone {@code $}).
 *
 * <p>The lexer reads a token when asked ({@link #next}), so a grammar that stops at the first thing it refuses never
 * reads, nor reports, what follows.
 */
final class SqlLexer {
    /**
     * How a grammar reads text.
     *
     * @param anyWhitespace every {@link Character#isWhitespace} character separates tokens, not only space, tab,
     *     newline, carriage return and form feed
     * @param unicodeWords a word may start with any letter ({@link Character#isLetter}) and go on with any letter or
     *     digit, not only ASCII ones
     * @param escapeStrings {@code E'...'} is one token, not the word {@code E} and a string
     * @param unicodeDigits a number, a parameter's number and a dollar quote's tag may hold any digit
     *     ({@link Character#isDigit}), not only ASCII ones
     * @param dollarQuotes {@code $tag$...$tag$} is one token, not a {@code $} symbol and what follows it
     * @param hyphenWords a word goes on over {@code -} ({@code ann-b} one name), as the access statements' own
     *     tokenizer read user names
     */
    record Dialect(boolean anyWhitespace, boolean unicodeWords, boolean escapeStrings, boolean unicodeDigits,
                   boolean dollarQuotes, boolean hyphenWords) {
    }

    /** The table and binding statements. */
    static final Dialect STATEMENTS = new Dialect(false, true, true, false, true, false);
    /** The user and grant statements: as {@code AccessStatement}'s own tokenizer read user names. */
    static final Dialect ACCESS = new Dialect(false, true, true, false, true, true);
    /**
     * The statements {@link CallStatementParser} reads itself (CALL, SET, COPY, ...), and the text it skips to a
     * statement's end: words of ASCII letters only.
     */
    static final Dialect CALL = new Dialect(false, false, true, false, true, false);
    /** The journal's SELECT: as its own lexer read it. */
    static final Dialect JOURNAL = new Dialect(true, false, false, true, true, false);
    /** The session's queries ({@link SessionQueries}): as their own lexer read them. */
    static final Dialect SESSION = new Dialect(true, true, true, true, false, false);

    /**
     * Text the lexer cannot read: an unterminated string, quoted name, dollar quote or comment
     * ({@link ErrorCode#SYNTAX_ERROR}), or an escape string that is no text ({@link #code()} says which).
     */
    static final class LexError extends RuntimeException {
        private final int at;
        private final ErrorCode code;

        LexError(int at, String problem) {
            this(at, problem, ErrorCode.SYNTAX_ERROR);
        }

        LexError(int at, String problem, ErrorCode code) {
            super(problem, null, false, false);
            this.at = at;
            this.code = code;
        }

        /** The offset of what is wrong (where the unterminated thing opens, the bad escape starts). */
        int at() {
            return at;
        }

        /** What is wrong, e.g. {@code unterminated quoted string}; a whole message when the code is not a syntax error. */
        String problem() {
            return getMessage();
        }

        ErrorCode code() {
            return code;
        }

        /** As the client is told it: a syntax error at its position, or the whole message of another code. */
        ThresherException toThresher() {
            return new ThresherException(code, code == ErrorCode.SYNTAX_ERROR
                    ? "syntax error at position " + (at + 1) + ": " + problem() : problem());
        }
    }

    /**
     * The value of the escape string {@code t} (a {@link Kind#ESCAPE_STRING} token of {@code sql}): its backslash
     * escapes decoded.
     *
     * @throws ThresherException a malformed escape ({@link ErrorCode#SYNTAX_ERROR}) or bytes that are not UTF-8
     */
    static String escapeStringValue(String sql, Token t) {
        try {
            return new EscapeString(sql, t.start() + 1, t.end()).decode();
        } catch (LexError e) {
            throw e.toThresher();
        }
    }

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
    private final Dialect dialect;
    private int pos;

    /** A lexer of {@code sql} between {@code from} and {@code to}. */
    SqlLexer(String sql, int from, int to, Dialect dialect) {
        this.sql = sql;
        this.pos = from;
        this.to = to;
        this.dialect = dialect;
    }

    /**
     * All the tokens of {@code sql}.
     *
     * @throws ThresherException {@link ErrorCode#SYNTAX_ERROR} for an unterminated string, quoted name, dollar quote
     *     or comment, naming its position
     */
    static List<Token> tokens(String sql, Dialect dialect) {
        SqlLexer lexer = new SqlLexer(sql, 0, sql.length(), dialect);
        List<Token> out = new ArrayList<>();
        try {
            for (Token t = lexer.next(); t != null; t = lexer.next()) {
                out.add(t);
            }
        } catch (LexError e) {
            throw e.toThresher(); // while tokenizing, only a syntax error: an escape string is decoded when read
        }
        return out;
    }

    /** Goes on reading at {@code offset}: for a grammar that reads a run of characters its own way. */
    void resumeAt(int offset) {
        pos = offset;
    }

    /** Where the lexer is: the offset just past what it read. */
    int position() {
        return pos;
    }

    /**
     * Skips whitespace and comments from where the lexer is, for a grammar that reads characters itself.
     *
     * @return the offset of what follows them
     * @throws LexError for an unterminated comment
     */
    int skipSpace() {
        skipTrivia();
        return pos;
    }

    /**
     * The string or quoted name opening at the lexer's position ({@code quote} there), doubled quotes standing for one.
     *
     * @throws LexError when it is unterminated
     */
    String readQuoted(char quote) {
        return quoted(quote);
    }

    /**
     * The dollar-quoted string opening at the lexer's position ({@code $} there); null, nothing read, when the
     * {@code $} opens none.
     *
     * @throws LexError when it is unterminated
     */
    String readDollarQuoted() {
        return dollarQuoted();
    }

    /**
     * The value of the escape string whose quote is at the lexer's position ({@code E} before it): see
     * {@link EscapeString}.
     *
     * @throws LexError for an unterminated string, a malformed escape, or bytes that are not UTF-8
     */
    String readEscapeString() {
        EscapeString e = new EscapeString(sql, pos, to);
        String value = e.decode();
        pos = e.end();
        return value;
    }

    /**
     * The next token, or null at the end.
     *
     * @throws LexError for an unterminated string, quoted name, dollar quote or comment
     */
    Token next() {
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
        if (dialect.escapeStrings() && (c == 'E' || c == 'e') && pos + 1 < to && sql.charAt(pos + 1) == '\'') {
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
        if (c == '$' && pos + 1 < to && digit(sql.charAt(pos + 1))) {
            pos++;
            while (pos < to && digit(sql.charAt(pos))) {
                pos++;
            }
            return new Token(Kind.PARAMETER, sql.substring(start + 1, pos), start, pos);
        }
        if (c == '$' && dialect.dollarQuotes()) {
            String value = dollarQuoted();
            if (value != null) {
                return new Token(Kind.DOLLAR_STRING, value, start, pos);
            }
            pos = start + 1;
            return new Token(Kind.SYMBOL, "$", start, pos);
        }
        if (digit(c) || c == '.' && pos + 1 < to && digit(sql.charAt(pos + 1))) {
            number();
            return new Token(Kind.NUMBER, sql.substring(start, pos), start, pos);
        }
        for (String two : new String[] {"::", "<=", ">=", "<>", "!=", "||"}) {
            if (sql.startsWith(two, pos) && pos + 2 <= to) {
                pos += 2;
                return new Token(Kind.SYMBOL, two, start, pos);
            }
        }
        pos++;
        return new Token(Kind.SYMBOL, String.valueOf(c), start, pos);
    }

    private void number() {
        while (pos < to && digit(sql.charAt(pos))) {
            pos++;
        }
        if (pos < to && sql.charAt(pos) == '.') {
            pos++;
            while (pos < to && digit(sql.charAt(pos))) {
                pos++;
            }
        }
        if (pos + 1 < to && (sql.charAt(pos) == 'e' || sql.charAt(pos) == 'E')) {
            int exponent = pos + 1;
            if (exponent + 1 < to && (sql.charAt(exponent) == '+' || sql.charAt(exponent) == '-')) {
                exponent++;
            }
            if (exponent < to && digit(sql.charAt(exponent))) {
                pos = exponent;
                while (pos < to && digit(sql.charAt(pos))) {
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
        while (tagEnd < to && (isAsciiWordPart(sql.charAt(tagEnd)) || digit(sql.charAt(tagEnd)))) {
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
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
                    || dialect.anyWhitespace() && Character.isWhitespace(c)) {
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

    private boolean startsWord(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                || dialect.unicodeWords() && c >= 0x80 && Character.isLetter(c);
    }

    private boolean continuesWord(char c) {
        return startsWord(c) || c == '-' && dialect.hyphenWords() || isDigit(c) || c == '$' || dialect.unicodeWords() && c >= 0x80 && Character.isDigit(c);
    }

    private static boolean isAsciiWordPart(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c);
    }

    /** An ASCII digit, or any digit in a dialect of {@link Dialect#unicodeDigits}. */
    private boolean digit(char c) {
        return isDigit(c) || dialect.unicodeDigits() && Character.isDigit(c);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static LexError syntax(int at, String problem) {
        return new LexError(at, problem);
    }
}
