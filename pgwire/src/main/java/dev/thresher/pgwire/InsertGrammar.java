package dev.thresher.pgwire;

import dev.thresher.bindings.InsertCommand;
import dev.thresher.bindings.InsertCommand.Value;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.SqlLexer.Kind;
import dev.thresher.pgwire.SqlLexer.Token;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code INSERT} read into the table service's command:
 *
 * <pre>
 * INSERT INTO [public.]table [ ( column [, ...] ) ] VALUES ( value [, ...] ) [, ( ... ) ...]
 * value := literal | literal :: type | CAST ( literal AS type ) | type 'text'
 * literal := 'text' | E'text' | $$text$$ | [+|-] number | TRUE | FALSE | NULL | $n
 * </pre>
 *
 * Names fold to lower case unless quoted. A value is kept as text for the database to read as its column's type (the
 * cast's type is not applied: the column's is). Anything else is refused with what is served: {@code RETURNING},
 * {@code ON CONFLICT}, {@code INSERT ... SELECT} and {@code DEFAULT VALUES} ({@link ErrorCode#UNSUPPORTED_STATEMENT}),
 * a value that is no literal (an expression, a function, a column), or text that is no INSERT at all
 * ({@link ErrorCode#SYNTAX_ERROR}). The statement reaches here without its semicolon.
 */
final class InsertGrammar {
    static final String LITERALS = "only literal values are served (strings, numbers, TRUE, FALSE, NULL, and casts of them)";

    private final TokenCursor c;

    private InsertGrammar(TokenCursor c) {
        this.c = c;
    }

    /**
     * The INSERT as a command, its {@code $n} kept as parameters.
     *
     * @throws ThresherException as the class says
     */
    static InsertCommand parse(String sql) {
        return new InsertGrammar(TokenCursor.of(sql, SqlLexer.STATEMENTS)).insert();
    }

    private InsertCommand insert() {
        expect("INSERT");
        expect("INTO");
        String table = name("a table name");
        if (c.acceptSymbol(".")) {
            if (!table.equals("public")) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "tables live in the public schema, not "
                        + Quoted.of(table));
            }
            table = name("a table name");
        }
        List<String> columns = new ArrayList<>();
        if (c.acceptSymbol("(")) {
            do {
                columns.add(name("a column name"));
            } while (c.acceptSymbol(","));
            expectSymbol(")");
        }
        if (c.peekIs("SELECT") || c.peekIs("WITH") || c.peekIs("DEFAULT") || c.peekSymbol("(")) {
            throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                    "INSERT ... SELECT is not served; insert rows with VALUES, or load with COPY FROM STDIN");
        }
        expect("VALUES");
        List<List<Value>> rows = new ArrayList<>();
        do {
            expectSymbol("(");
            List<Value> row = new ArrayList<>();
            do {
                row.add(value(rows.size() + 1, row.size() + 1));
            } while (c.acceptSymbol(","));
            expectSymbol(")");
            rows.add(row);
        } while (c.acceptSymbol(","));
        if (c.peekIs("RETURNING") || c.peekIs("ON")) {
            throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                    "INSERT ... RETURNING and ON CONFLICT are not served; insert plain rows");
        }
        if (!c.atEnd()) {
            throw syntax("unexpected " + describe(c.peek()) + " after the rows");
        }
        return new InsertCommand(table, columns, rows);
    }

    /** One value: a literal, perhaps cast; the cast's type is read past and not applied. */
    private Value value(int row, int column) {
        int start = c.index();
        Value v;
        if (c.peekIs("CAST") && c.peek(1) != null && c.peek(1).isSymbol("(")) {
            c.next();
            c.next();
            v = literal(row, column, start);
            expect("AS");
            type(row, column, start);
            expectSymbol(")");
        } else {
            v = literal(row, column, start);
        }
        while (c.acceptSymbol("::")) {
            type(row, column, start);
        }
        if (c.atEnd()) {
            throw syntax("expected ')', found the end of the statement");
        }
        if (!c.peekSymbol(",") && !c.peekSymbol(")")) {
            throw notLiteral(row, column, start);
        }
        return v;
    }

    /** @param start the index of the value's first token */
    private Value literal(int row, int column, int start) {
        Token t = c.next();
        if (t == null) {
            throw syntax("the statement ends inside its VALUES");
        }
        switch (t.kind()) {
            case STRING, DOLLAR_STRING -> {
                return new Value.Text(t.text());
            }
            case ESCAPE_STRING -> {
                return new Value.Text(escaped(t));
            }
            case NUMBER -> {
                return new Value.Text(t.text());
            }
            case PARAMETER -> {
                return new Value.Parameter(parameter(t));
            }
            case SYMBOL -> {
                Token n = c.peek();
                if ((t.isSymbol("-") || t.isSymbol("+")) && n != null && n.kind() == Kind.NUMBER) {
                    c.next();
                    return new Value.Text(t.isSymbol("-") ? "-" + n.text() : n.text());
                }
                throw notLiteral(row, column, start);
            }
            case WORD -> {
                if (t.is("NULL")) {
                    return Value.NULL;
                }
                if (t.is("TRUE") || t.is("FALSE")) {
                    return new Value.Text(t.folded());
                }
                Token typed = c.peek(); // type 'text', as PostgreSQL reads a typed literal
                if (typed != null && (typed.kind() == Kind.STRING || typed.kind() == Kind.ESCAPE_STRING)) {
                    c.next();
                    return new Value.Text(typed.kind() == Kind.STRING ? typed.text() : escaped(typed));
                }
                throw notLiteral(row, column, start);
            }
            default -> throw notLiteral(row, column, start);
        }
    }

    /** A cast's type, read past: words, a parenthesized modifier, array brackets ({@code start} as {@link #literal}'s). */
    private void type(int row, int column, int start) {
        Token first = c.next();
        if (first == null || first.kind() != Kind.WORD && first.kind() != Kind.QUOTED_NAME) {
            throw notLiteral(row, column, start);
        }
        while (c.peek() != null && c.peek().kind() == Kind.WORD && !c.peekIs("AS")) {
            c.next();
        }
        if (c.acceptSymbol("(")) {
            do {
                Token n = c.next();
                if (n == null || n.kind() != Kind.NUMBER) {
                    throw notLiteral(row, column, start);
                }
            } while (c.acceptSymbol(","));
            expectSymbol(")");
        }
        while (c.acceptSymbol("[")) {
            expectSymbol("]");
        }
    }

    private static int parameter(Token t) {
        if (t.text().length() > 5) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no parameter $" + Quoted.of(t.text()));
        }
        int n = Integer.parseInt(t.text());
        if (n < 1) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no parameter $" + n);
        }
        return n;
    }

    /** An escape string's value, its backslash escapes decoded. */
    private String escaped(Token t) {
        return SqlLexer.escapeStringValue(c.sql(), t);
    }

    /** A table's or column's name: a word, folded to lower case, or a quoted name as written. */
    private String name(String what) {
        Token t = c.next();
        if (t == null || t.kind() != Kind.WORD && t.kind() != Kind.QUOTED_NAME) {
            throw syntax("expected " + what + ", found " + describe(t));
        }
        return t.folded();
    }

    private void expect(String keyword) {
        Token t = c.peek();
        if (!c.accept(keyword)) {
            throw syntax("expected " + keyword + ", found " + describe(t));
        }
    }

    private void expectSymbol(String symbol) {
        Token t = c.peek();
        if (!c.acceptSymbol(symbol)) {
            throw syntax("expected '" + symbol + "', found " + describe(t));
        }
    }

    /** The refusal of the value whose first token has index {@code start}, quoting it to its end as written. */
    private ThresherException notLiteral(int row, int column, int start) {
        c.reset(start);
        int from = c.position();
        int end = from;
        int depth = 0;
        for (Token t = c.peek(); t != null; t = c.peek()) { // to the comma or parenthesis closing the value
            if (depth == 0 && (t.isSymbol(",") || t.isSymbol(")"))) {
                break;
            }
            depth += t.isSymbol("(") ? 1 : t.isSymbol(")") ? -1 : 0;
            end = t.end();
            c.next();
        }
        String written = c.sql().substring(from, end).strip();
        return new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "row " + row + ", value " + column + ": " + LITERALS
                + ", not '" + Quoted.of(written) + "'");
    }

    private ThresherException syntax(String problem) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, "INSERT cannot be parsed at position " + (c.position() + 1)
                + ": " + problem);
    }

    private static String describe(Token t) {
        return t == null ? "the end of the statement" : "'" + Quoted.of(t.text()) + "'";
    }
}
