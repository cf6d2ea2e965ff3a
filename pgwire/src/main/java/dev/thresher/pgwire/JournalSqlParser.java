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
 * A strict, hand-written parser for the one {@code SELECT} pgwire serves: a query of a journal view. The grammar,
 * keywords case-insensitive, whitespace and comments allowed between all tokens:
 *
 * <pre>
 * select    := SELECT ALL? ( '*' | column ( ',' column )* ) FROM view
 *              ( WHERE or )? ( ORDER BY order ( ',' order )* )? page
 * view      := thresher '.' ( invocations | shard_runs )        -- names as in CALL: folded, or quoted
 * page      := ( LIMIT ( n | ALL ) )? ( OFFSET n ( ROW | ROWS )? )?   -- in either order
 * order     := column ( ASC | DESC )?
 * or        := and ( OR and )*
 * and       := not ( AND not )*
 * not       := NOT not | '(' or ')' | predicate
 * predicate := column ( cmp value | IS NOT? NULL | NOT? IN '(' value ( ',' value )* ')'
 *                     | NOT? ( LIKE | ILIKE ) value | NOT? BETWEEN value AND value )
 * cmp       := '=' | '&lt;&gt;' | '!=' | '&lt;' | '&lt;=' | '&gt;' | '&gt;='
 * value     := ( '+' | '-' )? number ( '::' type )?
 *            | string ( '::' type )? shift*        -- a string reads as its column's type
 *            | '$' n ( '::' type )?               -- extended protocol only
 *            | ( now '(' ')' | current_timestamp ) shift*
 *            | ( timestamptz | timestamp ( with time zone )? | date ) string shift*
 * shift     := ( '+' | '-' ) ( interval string | string '::' interval )   -- '1 hour', '90 minutes', '1 day 2 hours',
 *                                                                        -- '00:30:00', 'PT1H'; no months or years
 * type      := text | varchar | uuid | smallint | int2 | integer | int | int4 | bigint | int8
 *            | timestamptz | timestamp ( with time zone )? | date
 * </pre>
 *
 * <p>Everything else is refused before anything runs: {@link ErrorCode#UNSUPPORTED_STATEMENT} ({@code 0A000}) naming
 * what is not served (another table, a function, an alias, a join, grouping, a subquery, a comparison of two columns
 * or with the literal on the left, arithmetic, {@code NULLS FIRST}, more than {@value #MAX_CONDITIONS}
 * conditions, parentheses and {@code NOT} nested more than {@value #MAX_NESTING} deep, ...),
 * {@link ErrorCode#UNKNOWN_COLUMN} ({@code 42703}) for a column the view lacks, {@link ErrorCode#SYNTAX_ERROR} for malformed text and
 * {@link ErrorCode#INVALID_ARGUMENTS} for a literal its column's type does not read; each names the 1-based position.
 */
final class JournalSqlParser extends JournalValues {
    static final String VIEWS = "the journal views are thresher.invocations and thresher.shard_runs"
            + " (docs/operations.md, \"Reading the journal\")";

    /** {@code SHOW CALLS}: the most recent calls, newest first. */
    static final int SHOW_CALLS_LIMIT = 20;
    static final List<String> SHOW_CALLS_COLUMNS = List.of("call_id", "binding", "state", "error_name", "attempts",
            "slot_count", "created_at", "duration_ms");

    private static final Set<String> NOT_SERVED_CLAUSES = Set.of("group", "having", "window", "union", "intersect",
            "except", "for", "fetch", "join", "inner", "left", "right", "full", "cross", "natural", "lateral", "into",
            "returning", "tablesample", "using", "on");

    /** Words that are never a column unless quoted. */
    private static final Set<String> RESERVED = Set.of("select", "from", "where", "order", "by", "limit", "offset",
            "and", "or", "not", "as", "in", "is", "like", "ilike", "between", "group", "having", "union", "distinct",
            "all", "asc", "desc", "case", "when", "then", "else", "end", "with");

    /**
     * The most conditions (comparisons, {@code IN}, {@code LIKE}, {@code BETWEEN}, {@code IS NULL}) one {@code WHERE}
     * holds, and how deep parentheses and {@code NOT} may nest: the filter is a tree that is checked, bound and
     * written as SQL by walking it, so its size and depth are bounded before it is built.
     */
    static final int MAX_CONDITIONS = 500;
    static final int MAX_NESTING = 100;

    /** Conditions read so far, and the parentheses and NOTs open now. */
    private int conditions;
    private int nesting;

    private JournalSqlParser(String sql, int from, int to) {
        super(sql, from, to);
    }

    /**
     * Parses the statement {@code sql.substring(from, to)} (positions in messages count from the start of
     * {@code sql}); it starts with {@code SELECT}.
     */
    static JournalSelect parse(String sql, int from, int to) {
        try {
            return new JournalSqlParser(sql, from, to).select();
        } catch (ArithmeticException | java.time.DateTimeException | NumberFormatException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a value of the query is out of range: "
                    + e.getMessage());
        }
    }

    static JournalSelect parse(String sql) {
        return parse(sql, 0, sql.length());
    }

    /** {@code SHOW CALLS}. */
    static JournalSelect showCalls() {
        return new JournalSelect(JournalView.INVOCATIONS, SHOW_CALLS_COLUMNS, Optional.empty(),
                List.of(new JournalSelect.Order("created_at", true)), OptionalLong.of(SHOW_CALLS_LIMIT), 0);
    }

    // ---- the statement

    private JournalSelect select() {
        expectWord("select");
        if (peek().is("distinct")) {
            throw unsupported(peek(), "SELECT DISTINCT is not supported");
        }
        if (peek().is("all")) {
            next++;
        }
        // the select list is resolved against the view, which comes after it
        int listStart = next;
        skipSelectList();
        expectWord("from");
        view = view();
        int afterFrom = next;
        next = listStart;
        List<String> columns = selectList();
        next = afterFrom;
        Token t = peek();
        if (t.symbol(",")) {
            throw unsupported(t, "a query reads one view; joins are not supported");
        }
        if (t.kind() == Kind.QUOTED || t.kind() == Kind.WORD && !Set.of("where", "order", "limit", "offset").contains(t.text())
                && (t.is("as") || !NOT_SERVED_CLAUSES.contains(t.text()))) {
            throw unsupported(t, "table aliases are not supported; name columns without a qualifier");
        }
        Optional<Filter> where = Optional.empty();
        if (peek().is("where")) {
            next++;
            where = Optional.of(or());
        }
        List<JournalSelect.Order> order = new ArrayList<>();
        if (peek().is("order")) {
            next++;
            expectWord("by");
            do {
                order.add(orderItem());
            } while (accept(","));
        }
        OptionalLong limit = OptionalLong.empty();
        long offset = 0;
        boolean sawLimit = false;
        boolean sawOffset = false;
        while (true) {
            Token p = peek();
            if (p.is("limit") && !sawLimit) {
                next++;
                sawLimit = true;
                if (peek().is("all")) {
                    next++;
                } else {
                    limit = OptionalLong.of(count("LIMIT"));
                }
            } else if (p.is("offset") && !sawOffset) {
                next++;
                sawOffset = true;
                offset = count("OFFSET");
                if (peek().is("row") || peek().is("rows")) {
                    next++;
                }
            } else {
                break;
            }
        }
        end();
        return new JournalSelect(view, columns, where, order, limit, offset);
    }

    /** Moves past the select list, to FROM, refusing what no select list of a view holds. */
    private void skipSelectList() {
        if (peek().kind() == Kind.END || peek().symbol(";")) {
            throw syntax(peek(), "expected a select list");
        }
        int depth = 0;
        while (true) {
            Token t = peek();
            if (t.kind() == Kind.END) {
                throw unsupported(t, "a SELECT without FROM is answered for constants and the session functions only"
                        + " (version(), current_schema(), current_database(), current_user, session_user,"
                        + " current_setting('name'), pg_backend_pid()); " + VIEWS);
            }
            if (depth == 0 && t.is("from")) {
                return;
            }
            if (t.symbol("(")) {
                depth++;
            } else if (t.symbol(")")) {
                depth--;
            }
            next++;
        }
    }

    private JournalView view() {
        Token first = peek();
        String schema = name("a view");
        if (!accept(".")) {
            throw unsupported(first, "relation " + Quoted.of(schema) + " is not served; " + VIEWS);
        }
        Token second = peek();
        String name = name("a view");
        if (accept(".")) {
            throw unsupported(first, "relation " + Quoted.of(schema + "." + name + "." + peek().text()) + " is not served; "
                    + VIEWS);
        }
        if (peek().symbol("(")) {
            throw unsupported(first, "functions in FROM are not supported; " + VIEWS);
        }
        if (schema.equals("pg_catalog") || schema.equals("information_schema")) {
            throw unsupported(first, "relation " + schema + "." + name + " is not served: the system catalogs are not"
                    + " (pgwire answers the type lookups drivers make, docs/clients.md); " + VIEWS);
        }
        if (!schema.equals(JournalView.SCHEMA)) {
            throw unsupported(first, "relation " + Quoted.of(schema + "." + name) + " is not served; " + VIEWS);
        }
        return JournalView.named(name).filter(v -> v.answersTo(name))
                .orElseThrow(() -> unsupported(second, "relation " + Quoted.of(schema + "." + name) + " is not served; "
                        + VIEWS));
    }

    private List<String> selectList() {
        if (accept("*")) {
            if (!peek().is("from")) {
                throw unsupported(peek(), "only * alone, or a list of columns, is supported in the select list");
            }
            return view.columns().stream().map(JournalColumn::name).toList();
        }
        List<String> columns = new ArrayList<>();
        do {
            columns.add(column("in the select list"));
            Token t = peek();
            if (t.is("as") || t.kind() == Kind.WORD && !t.is("from") || t.kind() == Kind.QUOTED) {
                throw unsupported(t, "column aliases are not supported");
            }
        } while (accept(","));
        if (!peek().is("from")) {
            throw unsupported(peek(), "the select list names columns of the view; expressions are not supported");
        }
        return columns;
    }

    /** A column of the view, checked to exist. */
    private String column(String where) {
        Token t = peek();
        if (t.kind() == Kind.NUMBER || t.kind() == Kind.STRING || t.kind() == Kind.PARAM) {
            throw unsupported(t, "a literal " + where + " is not supported; name a column of " + view.qualifiedName());
        }
        if (t.symbol("*")) {
            throw unsupported(t, "* is supported alone in the select list only");
        }
        if (t.symbol("(")) {
            throw unsupported(t, "a parenthesized expression " + where + " is not supported; name a column");
        }
        if (t.kind() == Kind.WORD && Set.of("true", "false", "null").contains(t.text())) {
            throw unsupported(t, t.text().toUpperCase(Locale.ROOT) + " " + where + " is not supported; name a column");
        }
        if (t.kind() == Kind.WORD && RESERVED.contains(t.text())) {
            throw syntax(t, "expected a column " + where + ", found " + describe(t));
        }
        String name = name("a column");
        if (peek().symbol("(")) {
            throw unsupported(t, "function " + Quoted.of(name) + "() is not supported");
        }
        if (peek().symbol(".")) {
            throw unsupported(t, "qualified column names are not supported; name the column alone");
        }
        if (peek().symbol("::")) {
            throw unsupported(peek(), "casts of columns are not supported");
        }
        if (view.column(name).isEmpty()) {
            throw new ThresherException(ErrorCode.UNKNOWN_COLUMN, "column \"" + Quoted.of(name) + "\" does not exist in "
                    + view.qualifiedName() + " (position " + (t.at() + 1) + "); its columns are "
                    + String.join(", ", view.columns().stream().map(JournalColumn::name).toList()));
        }
        return name;
    }

    private JournalSelect.Order orderItem() {
        Token t = peek();
        if (t.kind() == Kind.NUMBER) {
            throw unsupported(t, "ORDER BY a column's position is not supported; name the column");
        }
        String c = column("in ORDER BY");
        boolean descending = false;
        if (peek().is("desc")) {
            next++;
            descending = true;
        } else if (peek().is("asc")) {
            next++;
        }
        if (peek().is("nulls") || peek().is("using")) {
            throw unsupported(peek(), "ORDER BY ... " + peek().text().toUpperCase(Locale.ROOT) + " is not supported");
        }
        return new JournalSelect.Order(c, descending);
    }

    private long count(String clause) {
        Token t = peek();
        if (t.kind() == Kind.PARAM) {
            throw unsupported(t, clause + " takes a number, not a parameter");
        }
        if (t.kind() != Kind.NUMBER || !t.text().matches("\\d+")) {
            throw syntax(t, clause + " takes a whole number, found " + describe(t));
        }
        next++;
        try {
            return Long.parseLong(t.text());
        } catch (NumberFormatException e) {
            throw new ThresherException(ErrorCode.NUMBER_OUT_OF_RANGE, clause + " " + Quoted.of(t.text())
                    + " is out of range for bigint");
        }
    }

    private void end() {
        while (peek().symbol(";") && tokens.get(next + 1).kind() == Kind.END) {
            next++;
        }
        Token t = peek();
        if (t.kind() == Kind.END) {
            return;
        }
        if (t.kind() == Kind.SYMBOL && Set.of("+", "-", "*", "/", "%", "||", "^").contains(t.text())) {
            throw unsupported(t, "arithmetic (" + t.text() + ") is not supported; compare a column with a literal");
        }
        if (t.kind() == Kind.WORD && NOT_SERVED_CLAUSES.contains(t.text())) {
            throw unsupported(t, t.text().toUpperCase(Locale.ROOT) + " is not supported");
        }
        if (t.is("limit") || t.is("offset")) {
            throw syntax(t, t.text().toUpperCase(Locale.ROOT) + " is given twice");
        }
        if (t.is("where") || t.is("order")) {
            throw syntax(t, t.text().toUpperCase(Locale.ROOT) + " comes before ORDER BY, LIMIT and OFFSET");
        }
        throw syntax(t, "unexpected " + describe(t));
    }

    // ---- the filter

    private Filter or() {
        Filter f = and();
        while (peek().is("or")) {
            next++;
            f = new JournalSelect.Or(f, and());
        }
        return f;
    }

    private Filter and() {
        Filter f = not();
        while (peek().is("and")) {
            next++;
            f = new JournalSelect.And(f, not());
        }
        return f;
    }

    private Filter not() {
        Token t = peek();
        if (t.is("not") || t.symbol("(")) {
            if (++nesting > MAX_NESTING) {
                throw unsupported(t, "conditions nested more than " + MAX_NESTING + " deep (parentheses and NOT)"
                        + " are not supported");
            }
            next++;
            Filter f;
            if (t.is("not")) {
                f = new JournalSelect.Not(not());
            } else {
                if (peek().is("select") || peek().is("with") || peek().is("values")) {
                    throw unsupported(peek(), "subqueries are not supported");
                }
                f = or();
                if (peek().symbol(",")) {
                    throw unsupported(peek(), "row comparisons are not supported; compare one column at a time");
                }
                expect(")");
            }
            nesting--;
            return f;
        }
        if (t.is("exists")) {
            throw unsupported(t, "subqueries are not supported");
        }
        if (++conditions > MAX_CONDITIONS) {
            throw unsupported(t, "a WHERE of more than " + MAX_CONDITIONS + " conditions is not supported");
        }
        return predicate();
    }

    /**
     * Long because: it is the grammar's {@code predicate} rule, one sequence of alternatives as in the class comment.
     * One condition: a column, then a comparison, {@code IS [NOT] NULL}, {@code [NOT] IN}, {@code [NOT] LIKE|ILIKE}
     * or {@code [NOT] BETWEEN}, each refused with what is not served.
     */
    private Filter predicate() {
        Token start = peek();
        if (start.kind() == Kind.NUMBER || start.kind() == Kind.STRING || start.kind() == Kind.PARAM
                || start.symbol("-") || start.symbol("+")
                || start.kind() == Kind.WORD && Set.of("now", "current_timestamp", "timestamptz", "timestamp", "date",
                        "interval").contains(start.text())) {
            throw unsupported(start, "a condition is a column compared with a literal, the column first;"
                    + " a literal on the left is not supported");
        }
        if (start.kind() == Kind.WORD && Set.of("true", "false").contains(start.text())) {
            throw unsupported(start, "a condition is a column compared with a literal; " + start.text().toUpperCase(Locale.ROOT)
                    + " alone is not supported");
        }
        String column = column("in WHERE");
        JournalColumn col = view.column(column).orElseThrow();
        Token op = peek();
        if (op.kind() == Kind.SYMBOL) {
            JournalSelect.Op cmp = switch (op.text()) {
                case "=" -> JournalSelect.Op.EQ;
                case "<>", "!=" -> JournalSelect.Op.NE;
                case "<" -> JournalSelect.Op.LT;
                case "<=" -> JournalSelect.Op.LE;
                case ">" -> JournalSelect.Op.GT;
                case ">=" -> JournalSelect.Op.GE;
                default -> throw op.text().equals("+") || op.text().equals("-") || op.text().equals("*") || op.text().equals("/")
                        || op.text().equals("||") || op.text().equals("%")
                        ? unsupported(op, "arithmetic (" + op.text() + ") is not supported; compare a column with a literal")
                        : unsupported(op, "operator " + op.text() + " is not supported");
            };
            next++;
            return new JournalSelect.Compare(column, cmp, value(col));
        }
        boolean negated = false;
        if (op.is("is")) {
            next++;
            if (peek().is("not")) {
                next++;
                negated = true;
            }
            Token what = peek();
            if (what.is("null")) {
                next++;
                return new JournalSelect.Null(column, negated);
            }
            if (what.is("true") || what.is("false") || what.is("distinct") || what.is("unknown")) {
                throw unsupported(what, "IS " + (negated ? "NOT " : "") + what.text().toUpperCase(Locale.ROOT)
                        + " is not supported; IS [NOT] NULL is");
            }
            throw syntax(what, "expected NULL after IS");
        }
        if (op.is("not")) {
            next++;
            negated = true;
            op = peek();
        }
        if (op.is("in")) {
            next++;
            expect("(");
            if (peek().is("select") || peek().is("with") || peek().is("values")) {
                throw unsupported(peek(), "subqueries are not supported");
            }
            List<Literal> values = new ArrayList<>();
            do {
                values.add(value(col));
            } while (accept(","));
            expect(")");
            return new JournalSelect.In(column, values, negated);
        }
        if (op.is("like") || op.is("ilike")) {
            next++;
            Literal pattern = value(view.column(column).map(c -> new JournalColumn(c.name(), dev.thresher.bindings.JournalType.TEXT,
                    c.description())).orElseThrow());
            if (peek().is("escape")) {
                throw unsupported(peek(), "LIKE ... ESCAPE is not supported; the escape character is \\");
            }
            return new JournalSelect.Like(column, pattern, op.is("ilike"), negated);
        }
        if (op.is("between")) {
            next++;
            if (peek().is("symmetric") || peek().is("asymmetric")) {
                throw unsupported(peek(), "BETWEEN " + peek().text().toUpperCase(Locale.ROOT) + " is not supported");
            }
            Literal low = value(col);
            expectWord("and");
            Literal high = value(col);
            Filter range = new JournalSelect.And(new JournalSelect.Compare(column, JournalSelect.Op.GE, low),
                    new JournalSelect.Compare(column, JournalSelect.Op.LE, high));
            return negated ? new JournalSelect.Not(range) : range;
        }
        if (op.is("similar") || op.is("glob") || op.is("regexp")) {
            throw unsupported(op, op.text().toUpperCase(Locale.ROOT) + " is not supported; LIKE and ILIKE are");
        }
        throw syntax(op, "expected a comparison after column " + column + ", found " + describe(op));
    }
}
