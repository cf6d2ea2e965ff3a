package dev.thresher.pgwire;

import dev.thresher.pgwire.SqlLexer.Token;
import java.util.List;

/** A grammar's place in a statement's tokens ({@link SqlLexer}): what comes next, taken one at a time. */
final class TokenCursor {
    private final String sql;
    private final List<Token> tokens;
    private int at;

    TokenCursor(String sql, List<Token> tokens) {
        this.sql = sql;
        this.tokens = tokens;
    }

    /** A cursor over the tokens of all of {@code sql}, in {@code dialect}. */
    static TokenCursor of(String sql, SqlLexer.Dialect dialect) {
        return new TokenCursor(sql, SqlLexer.tokens(sql, dialect));
    }

    String sql() {
        return sql;
    }

    boolean atEnd() {
        return at >= tokens.size();
    }

    /** The next token, or null at the end. */
    Token peek() {
        return peek(0);
    }

    /** The token {@code ahead} tokens after the next, or null past the end. */
    Token peek(int ahead) {
        return at + ahead < tokens.size() ? tokens.get(at + ahead) : null;
    }

    /** Takes the next token; null at the end. */
    Token next() {
        return atEnd() ? null : tokens.get(at++);
    }

    /** Whether the next token is the keyword {@code keyword}. */
    boolean peekIs(String keyword) {
        return !atEnd() && tokens.get(at).is(keyword);
    }

    /** Whether the next token is the symbol {@code symbol}. */
    boolean peekSymbol(String symbol) {
        return !atEnd() && tokens.get(at).isSymbol(symbol);
    }

    /** Takes the keyword {@code keyword} if it comes next. */
    boolean accept(String keyword) {
        if (peekIs(keyword)) {
            at++;
            return true;
        }
        return false;
    }

    /** Takes the symbol {@code symbol} if it comes next. */
    boolean acceptSymbol(String symbol) {
        if (peekSymbol(symbol)) {
            at++;
            return true;
        }
        return false;
    }

    /** The offset where the next token starts, or the length of the text at the end. */
    int position() {
        return atEnd() ? sql.length() : tokens.get(at).start();
    }

    /** The index of the next token: where {@link #reset} comes back to. */
    int index() {
        return at;
    }

    /** Goes back (or on) to the token of index {@code index}: 0 for the first. */
    void reset(int index) {
        at = index;
    }

    /** Whether any token from here on is the keyword {@code keyword}. */
    boolean anyAhead(String keyword) {
        for (int i = at; i < tokens.size(); i++) {
            if (tokens.get(i).is(keyword)) {
                return true;
            }
        }
        return false;
    }
}
