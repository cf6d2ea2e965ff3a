package dev.thresher.pgwire;

import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalSelect.Filter;
import dev.thresher.bindings.JournalSelect.Literal;
import dev.thresher.bindings.JournalView;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A journal query's tokens and the place in them, with the steps every part of the journal's grammar takes (what
 * comes next, a symbol or word expected, a name) and the messages of what is refused, each naming its 1-based
 * position. {@link JournalValues} reads the literals, {@link JournalSqlParser} the rest of the statement.
 */
abstract class JournalTokens {
    enum Kind { WORD, QUOTED, STRING, NUMBER, PARAM, SYMBOL, END }

    /** One token; {@code text} is a word folded to lower case, a string's value, a symbol. */
    record Token(Kind kind, String text, int at) {
        boolean is(String word) {
            return kind == Kind.WORD && text.equals(word);
        }

        boolean symbol(String s) {
            return kind == Kind.SYMBOL && text.equals(s);
        }
    }

    final String sql;
    final List<Token> tokens;
    int next;
    /** The view the query reads, once its FROM is read. */
    JournalView view;

    JournalTokens(String sql, int from, int to) {
        this.sql = sql;
        this.tokens = tokens(sql, from, to);
    }

    // ---- tokens

    Token peek() {
        return tokens.get(next);
    }

    boolean accept(String symbol) {
        if (peek().symbol(symbol)) {
            next++;
            return true;
        }
        return false;
    }

    void expect(String symbol) {
        if (!accept(symbol)) {
            throw syntax(peek(), "expected '" + symbol + "', found " + describe(peek()));
        }
    }

    void expectWord(String word) {
        if (!peek().is(word)) {
            throw syntax(peek(), "expected " + word.toUpperCase(Locale.ROOT) + ", found " + describe(peek()));
        }
        next++;
    }

    /** A name: a word folded to lower case, or a quoted identifier as written. */
    String name(String what) {
        Token t = peek();
        if (t.kind() != Kind.WORD && t.kind() != Kind.QUOTED) {
            throw syntax(t, "expected " + what + ", found " + describe(t));
        }
        next++;
        return t.text();
    }

    String describe(Token t) {
        return switch (t.kind()) {
            case END -> "the end of the statement";
            case STRING -> "a string";
            default -> "'" + Quoted.of(sql.substring(t.at(), Math.min(sql.length(), t.at() + Math.max(1, Math.min(20,
                    t.text().length()))))) + "'";
        };
    }

    static String shorten(String s) {
        return Quoted.of(s);
    }

    static ThresherException syntax(Token t, String message) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (t.at() + 1) + ": " + message);
    }

    static ThresherException unsupported(Token t, String message) {
        return new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, message + " (position " + (t.at() + 1) + "); "
                + "a query of the journal reads SELECT columns FROM thresher.invocations or thresher.shard_runs"
                + " [WHERE column op literal AND|OR|NOT ...] [ORDER BY column [DESC], ...] [LIMIT n] [OFFSET n]");
    }

    static ThresherException invalid(Token t, String message) {
        return new ThresherException(ErrorCode.INVALID_ARGUMENTS, message + " (position " + (t.at() + 1) + ")");
    }

    /**
     * The statement's tokens ({@link SqlLexer}, its {@link SqlLexer#JOURNAL} dialect), then four ENDs (lookahead past
     * the end stays END); words folded and names checked ({@value CallStatementParser#MAX_NAME_BYTES} bytes at most).
     * Refused here: string constants with a prefix ({@code E'...'}, {@code B'...'}, {@code X'...'}, {@code N'...'},
     * {@code U&'...'}), a zero-length quoted name, a number with a letter right after it, a {@code $} that opens no
     * dollar quote; all of a statement is read before any of it is parsed, so the first of these in the text is
     * the one reported.
     */
    static List<Token> tokens(String sql, int from, int to) {
        List<Token> out = new ArrayList<>();
        SqlLexer lexer = new SqlLexer(sql, from, to, SqlLexer.JOURNAL);
        try {
            for (SqlLexer.Token t = lexer.next(); t != null; t = lexer.next()) {
                out.add(token(sql, to, t));
            }
        } catch (SqlLexer.LexError e) {
            throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (e.at() + 1) + ": "
                    + e.problem());
        }
        for (int i = 0; i < 4; i++) {
            out.add(new Token(Kind.END, "", to));
        }
        return out;
    }

    static Token token(String sql, int to, SqlLexer.Token t) {
        int at = t.start();
        char after = t.end() < to ? sql.charAt(t.end()) : 0;
        return switch (t.kind()) {
            case WORD -> {
                String word = t.text();
                if (after == '\'' && word.length() == 1 && "eEbBxXnNuU".indexOf(word.charAt(0)) >= 0) {
                    throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "string constants with a prefix ("
                            + word + "'...') are not supported (position " + (at + 1) + "); write '...'");
                }
                if (after == '&' && word.equalsIgnoreCase("u")) {
                    throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                            "Unicode escapes (U&) are not supported (position " + (at + 1) + ")");
                }
                yield new Token(Kind.WORD, CallStatementParser.checkedName(t.folded(), "a name", at), at);
            }
            case QUOTED_NAME -> {
                if (t.text().isEmpty()) {
                    throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (at + 1)
                            + ": zero-length quoted identifier");
                }
                yield new Token(Kind.QUOTED, CallStatementParser.checkedName(t.text(), "a name", at), at);
            }
            case STRING, DOLLAR_STRING, ESCAPE_STRING -> new Token(Kind.STRING, t.text(), at);
            case PARAMETER -> new Token(Kind.PARAM, t.text(), at);
            case NUMBER -> {
                if (after == '_' || after >= 'a' && after <= 'z' || after >= 'A' && after <= 'Z') {
                    throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (at + 1)
                            + ": trailing junk after numeric literal");
                }
                yield new Token(Kind.NUMBER, t.text(), at);
            }
            case SYMBOL -> {
                if (t.text().equals("$")) {
                    throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (at + 1)
                            + ": unexpected '$'");
                }
                yield new Token(Kind.SYMBOL, t.text(), at);
            }
        };
    }
}
