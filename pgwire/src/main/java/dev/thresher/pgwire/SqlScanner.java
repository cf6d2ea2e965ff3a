package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import java.util.Locale;

/**
 * A place in a statement's text and the steps every statement grammar of {@link CallStatementParser} takes from it:
 * whitespace and comments, words, names, strings (through {@link SqlLexer}, its {@link SqlLexer#CALL} dialect), the
 * skip to a statement's end, and the messages of what is refused, with its 1-based position and the forms served
 * ({@link CallStatementParser#USAGE}). A grammar for one family of statements ({@link SessionGrammar},
 * {@link CopyGrammar}) is a scanner started where the statement parser is, which takes back its position when the
 * statement is read.
 */
abstract class SqlScanner {
    final String sql;
    int pos;

    SqlScanner(String sql, int pos) {
        this.sql = sql;
        this.pos = pos;
    }

    /**
     * Moves to the end of the statement (its semicolon or the end), over quoted strings, quoted names,
     * dollar quotes and comments, and escape strings when {@code escapes} (else they are refused: the table service
     * does not read them); returns the highest {@code $n} parameter seen.
     */
    int skipToEnd(boolean escapes) {
        int parameters = 0;
        while (!atEnd() && peek() != ';') {
            char c = peek();
            if (c == '\'' || c == '"') {
                quoted(c);
            } else if (c == '$' && pos + 1 < sql.length() && isDigit(sql.charAt(pos + 1))) {
                int from = ++pos;
                while (!atEnd() && isDigit(peek())) {
                    pos++;
                }
                parameters = Math.max(parameters, Integer.parseInt(sql.substring(from, Math.min(pos, from + 6))));
            } else if (c == '$') {
                dollarQuoted();
            } else if (c == '-' && sql.startsWith("--", pos) || c == '/' && sql.startsWith("/*", pos)) {
                skipTrivia();
            } else if (c == 'E' || c == 'e') {
                if (pos + 1 < sql.length() && sql.charAt(pos + 1) == '\'' && (pos == 0 || !isIdentifierPart(sql.charAt(pos - 1)))) {
                    if (!escapes) {
                        throw unsupported(pos, "escape string constants (E'...') are not served");
                    }
                    pos++;
                    escapeString();
                } else {
                    pos++;
                }
            } else {
                pos++;
            }
        }
        return parameters;
    }

    /** Skips one of {@code words} (case-insensitive) if it comes next. */
    void optionalWord(String... words) {
        skipTrivia();
        int at = pos;
        String w = word();
        for (String each : words) {
            if (w.equalsIgnoreCase(each)) {
                return;
            }
        }
        pos = at;
    }

    void requireWords(String... words) {
        for (String each : words) {
            skipTrivia();
            int at = pos;
            if (!word().equalsIgnoreCase(each)) {
                pos = at;
                throw syntax("expected " + each + ", found " + describe(at));
            }
        }
    }

    /** An unquoted identifier folded to lower case, or a quoted one as written; at most {@value #MAX_NAME_BYTES} bytes. */
    String identifier(String what) {
        if (atEnd()) {
            throw syntax("expected " + what + ", found the end of the statement");
        }
        int at = pos;
        String name;
        if (peek() == '"') {
            name = quoted('"');
            if (name.isEmpty()) {
                pos = at;
                throw syntax("zero-length quoted identifier");
            }
        } else if (!startsIdentifier()) {
            throw syntax("expected " + what + ", found " + describe(pos));
        } else {
            name = word().toLowerCase(Locale.ROOT);
        }
        return CallStatementParser.checkedName(name, what, at);
    }

    /** Text between {@code quote} characters, a doubled quote standing for one ({@link SqlLexer}). */
    String quoted(char quote) {
        SqlLexer lexer = lexerAt(pos);
        try {
            String value = lexer.readQuoted(quote);
            pos = lexer.position();
            return value;
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
    }

    /** An escape string's value from its quote on ({@code E} already read): {@link EscapeString}. */
    String escapeString() {
        SqlLexer lexer = lexerAt(pos);
        try {
            String value = lexer.readEscapeString();
            pos = lexer.position();
            return value;
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
    }

    /** A dollar-quoted string's value from its {@code $} on ({@link SqlLexer}). */
    String dollarQuoted() {
        SqlLexer lexer = lexerAt(pos);
        String value;
        try {
            value = lexer.readDollarQuoted();
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
        if (value == null) {
            throw syntax("expected a string literal or $1, found " + describe(pos));
        }
        pos = lexer.position();
        return value;
    }

    /** Skips whitespace, {@code --} line comments and nested block comments ({@link SqlLexer}). */
    void skipTrivia() {
        try {
            pos = lexerAt(pos).skipSpace();
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
    }

    SqlLexer lexerAt(int at) {
        return new SqlLexer(sql, at, sql.length(), SqlLexer.CALL);
    }

    /** What the lexer could not read, as this parser reports it: at the lexer's position, with the forms served. */
    ThresherException lexError(SqlLexer.LexError e) {
        if (e.code() != ErrorCode.SYNTAX_ERROR) {
            return new ThresherException(e.code(), e.problem());
        }
        pos = e.at();
        return syntax(e.problem());
    }

    /** A run of identifier characters (possibly empty); keywords are read with it too. */
    String word() {
        int start = pos;
        if (startsIdentifier()) {
            pos++;
            while (!atEnd() && isIdentifierPart(peek())) {
                pos++;
            }
        }
        return sql.substring(start, pos);
    }

    void expect(char c) {
        if (atEnd() || peek() != c) {
            throw syntax("expected '" + c + "', found " + describe(pos));
        }
        pos++;
    }

    void skipSemicolons() {
        skipTrivia();
        while (!atEnd() && peek() == ';') {
            pos++;
            skipTrivia();
        }
    }

    boolean startsIdentifier() {
        if (atEnd()) {
            return false;
        }
        char c = peek();
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    static boolean isIdentifierPart(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c);
    }

    static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    boolean atEnd() {
        return pos >= sql.length();
    }

    char peek() {
        return sql.charAt(pos);
    }

    /** A short quote of the text at {@code at} for messages (at most 20 characters, control characters escaped). */
    String describe(int at) {
        if (at >= sql.length()) {
            return "the end of the statement";
        }
        int end = at;
        while (end < sql.length() && end - at < 20 && !Character.isWhitespace(sql.charAt(end))) {
            end++;
        }
        return "'" + Quoted.of(sql.substring(at, Math.max(end, at + 1))) + "'";
    }

    ThresherException syntax(String message) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR,
                "syntax error at position " + (pos + 1) + ": " + message + "; " + CallStatementParser.USAGE);
    }

    static ThresherException unsupported(int at, String message) {
        return new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                message + " (position " + (at + 1) + "); " + CallStatementParser.USAGE);
    }
}
