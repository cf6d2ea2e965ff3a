package dev.thresher.pgwire;

import java.util.ArrayList;
import java.util.List;

/**
 * The tokens {@link SessionQueries} matches its queries over ({@link SqlLexer}, its {@link SqlLexer#SESSION} dialect),
 * and its cursor over them.
 */
final class SessionTokens {
    private SessionTokens() {
    }

    enum Kind { WORD, QUOTED, STRING, NUMBER, PARAM, SYMBOL, END }

    /** One token: a word folded to lower case, a quoted name or a string's value, a number, a parameter's number. */
    record Tok(Kind kind, String text) {
        boolean is(Kind k, String t) {
            return kind == k && text.equals(t);
        }
    }

    /** A parameter ({@code parameter} its number) or a literal ({@code text}), casts and parentheses removed. */
    record Value(int parameter, String text) {
    }

    static final class Cursor {
        private final List<Tok> tokens;
        private int next;

        Cursor(List<Tok> tokens) {
            this.tokens = tokens;
        }

        Tok peek() {
            return peek(0);
        }

        Tok peek(int ahead) {
            return tokens.get(Math.min(next + ahead, tokens.size() - 1));
        }

        Tok next() {
            Tok t = peek();
            if (t.kind() != Kind.END) {
                next++;
            }
            return t;
        }

        boolean at(Kind kind) {
            return peek().kind() == kind;
        }

        boolean atSymbol(String s) {
            return peek().is(Kind.SYMBOL, s);
        }

        boolean atEnd() {
            return at(Kind.END);
        }

        boolean take(Tok expected) {
            if (peek().equals(expected)) {
                next++;
                return true;
            }
            return false;
        }

        boolean word(String w) {
            return take(new Tok(Kind.WORD, w));
        }

        boolean symbol(String s) {
            return take(new Tok(Kind.SYMBOL, s));
        }

        /**
         * {@code $n}, a string, or an optionally negative integer, each optionally in parentheses and cast
         * ({@code ('3802'::int8)}, {@code '114'::pg_catalog.oid}), as drivers write a bound value; null if none.
         */
        Value value() {
            return value(0);
        }

        private Value value(int depth) {
            Value v;
            if (symbol("(")) {
                v = depth < 16 ? value(depth + 1) : null;
                if (v == null || !symbol(")")) {
                    return null;
                }
            } else if (at(Kind.PARAM)) {
                v = new Value(Integer.parseInt(next().text()), null);
            } else if (at(Kind.STRING)) {
                v = new Value(0, next().text());
            } else if (at(Kind.NUMBER) || atSymbol("-") && peek(1).kind() == Kind.NUMBER) {
                v = new Value(0, (symbol("-") ? "-" : "") + next().text());
            } else {
                return null;
            }
            while (symbol("::")) {
                if (!at(Kind.WORD)) {
                    return null;
                }
                next();
                if (symbol(".")) {
                    if (!at(Kind.WORD)) {
                        return null;
                    }
                    next();
                }
            }
            return v;
        }
    }


    /**
     * The tokens of {@code sql} between {@code from} and {@code to} ({@link SqlLexer}, its {@link SqlLexer#SESSION}
     * dialect), then END: words folded to lower case, escape strings decoded as every grammar decodes them
     * ({@link SqlLexer#escapeStringValue}). A number is a digit and
     * every letter, digit and '.' after it (so {@code 1abc} or {@code 1.5} is no integer), and the only symbol of two
     * characters is {@code ::}: no form matched here holds another, nor a dollar-quoted string ({@code $} is a symbol).
     *
     * @throws SqlLexer.LexError for an unterminated string, quoted name or comment
     * @throws dev.thresher.errors.ThresherException for a malformed escape ({@code SYNTAX_ERROR}), as PostgreSQL refuses it
     */
    static List<Tok> tokens(String sql, int from, int to) {
        List<Tok> out = new ArrayList<>();
        SqlLexer lexer = new SqlLexer(sql, from, to, SqlLexer.SESSION);
        for (SqlLexer.Token t = lexer.next(); t != null; t = lexer.next()) {
            int at = t.start();
            switch (t.kind()) {
                case WORD -> out.add(new Tok(Kind.WORD, t.folded()));
                case QUOTED_NAME -> out.add(new Tok(Kind.QUOTED, t.text()));
                case STRING -> out.add(new Tok(Kind.STRING, t.text()));
                case ESCAPE_STRING -> out.add(new Tok(Kind.STRING, SqlLexer.escapeStringValue(sql, t)));
                case PARAMETER -> out.add(new Tok(Kind.PARAM, t.text().length() > 6 ? "999999" : t.text()));
                case NUMBER -> {
                    char c = sql.charAt(at);
                    if (c < '0' || c > '9') { // '.5', or a digit past ASCII: a symbol, then on after it
                        out.add(new Tok(Kind.SYMBOL, String.valueOf(c)));
                        lexer.resumeAt(at + 1);
                        continue;
                    }
                    int end = at;
                    while (end < to && (Character.isLetterOrDigit(sql.charAt(end)) || sql.charAt(end) == '.')) {
                        end++;
                    }
                    out.add(new Tok(Kind.NUMBER, sql.substring(at, end)));
                    lexer.resumeAt(end);
                }
                case SYMBOL -> {
                    for (char c : t.text().equals("::") ? new char[0] : t.text().toCharArray()) {
                        out.add(new Tok(Kind.SYMBOL, String.valueOf(c)));
                    }
                    if (t.text().equals("::")) {
                        out.add(new Tok(Kind.SYMBOL, "::"));
                    }
                }
                case DOLLAR_STRING -> throw new IllegalStateException("no dollar quotes in the session dialect");
            }
        }
        out.add(new Tok(Kind.END, ""));
        return out;
    }
}
