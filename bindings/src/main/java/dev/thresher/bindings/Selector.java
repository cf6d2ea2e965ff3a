package dev.thresher.bindings;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import net.sf.jsqlparser.JSQLParserException;
import net.sf.jsqlparser.expression.Expression;
import net.sf.jsqlparser.parser.CCJSqlParserUtil;
import net.sf.jsqlparser.schema.Column;
import net.sf.jsqlparser.schema.Table;
import net.sf.jsqlparser.statement.Statement;
import net.sf.jsqlparser.statement.select.PlainSelect;
import net.sf.jsqlparser.statement.select.SelectItem;

/**
 * A binding's fixed selector: one literal single-table {@code SELECT} of plain columns with an
 * optional {@code WHERE}. Nothing that needs more than one partition's rows is allowed (no joins,
 * grouping, ordering, limits, distinct, subqueries, set operations), and the filter is built only from
 * an allow-list ({@link WhereAllowList}): columns, literals, comparisons, {@code AND}/{@code OR}/{@code NOT},
 * {@code IN} lists, {@code BETWEEN}, {@code IS [NOT] NULL|TRUE|FALSE|DISTINCT FROM}, {@code [I]LIKE}, arithmetic and casts to built-in
 * types. No function call, no comment, no second statement, no dollar quoting, no backslash: what the
 * shard database runs is exactly the filter checked here, and it cannot change a session or write.
 *
 * @param sql the selector as declared
 * @param table the table read
 * @param columns the columns, in batch order
 * @param where the filter, rendered back from the parsed tree, if any
 */
public record Selector(String sql, String table, List<String> columns, Optional<String> where) {
    /** The longest selector accepted, in characters. */
    public static final int MAX_LENGTH = 8192;

    public Selector {
        Objects.requireNonNull(sql, "sql");
        Objects.requireNonNull(table, "table");
        columns = List.copyOf(columns);
        Objects.requireNonNull(where, "where");
        if (columns.isEmpty()) {
            throw new IllegalArgumentException("a selector reads at least one column");
        }
    }

    /**
     * Parses and checks a selector.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_SELECTOR} naming what is not allowed
     */
    public static Selector parse(String sql) {
        Objects.requireNonNull(sql, "sql");
        if (sql.length() > MAX_LENGTH) {
            throw new ThresherException(ErrorCode.INVALID_SELECTOR, "invalid selector: it is " + sql.length()
                    + " characters long, more than " + MAX_LENGTH);
        }
        String lexical = WhereAllowList.lexicalProblem(sql);
        if (lexical != null) {
            throw invalid(sql, lexical);
        }
        Statement statement;
        try {
            statement = CCJSqlParserUtil.parse(sql, Selector::bounded);
        } catch (JSQLParserException e) {
            throw invalid(sql, e.getCause() instanceof java.util.concurrent.TimeoutException
                    ? "it is too complex to parse within " + PARSE_TIMEOUT_MS + " ms" : "it does not parse as SQL");
        }
        if (!(statement instanceof PlainSelect select)) {
            throw invalid(sql, "it is not one plain SELECT");
        }
        if (select.getWithItemsList() != null) {
            throw invalid(sql, "WITH is not allowed");
        }
        if (!(select.getFromItem() instanceof Table table)) {
            throw invalid(sql, "it must read exactly one table");
        }
        if (select.getJoins() != null && !select.getJoins().isEmpty()) {
            throw invalid(sql, "joins are not allowed");
        }
        if (select.getDistinct() != null || select.getGroupBy() != null || select.getHaving() != null
                || select.getOrderByElements() != null || select.getLimit() != null || select.getOffset() != null
                || select.getFetch() != null || select.getIntoTables() != null || select.getForMode() != null) {
            throw invalid(sql, "DISTINCT, GROUP BY, HAVING, ORDER BY, LIMIT, OFFSET, FETCH, INTO and FOR are not allowed");
        }
        List<String> columns = new ArrayList<>();
        for (SelectItem<?> item : select.getSelectItems()) {
            if (!(item.getExpression() instanceof Column c) || item.getAlias() != null) {
                throw invalid(sql, "select items must be plain column names, not '" + item + "'");
            }
            String name = unquote(c.getColumnName());
            if (columns.contains(name)) {
                throw invalid(sql, "column '" + name + "' is selected twice");
            }
            columns.add(name);
        }
        Expression where = select.getWhere();
        if (where != null) {
            String refused = WhereAllowList.refusal(where, unquote(table.getName()));
            if (refused != null) {
                throw invalid(sql, refused);
            }
        }
        if (table.getSchemaName() != null || table.getDatabaseName() != null) {
            throw invalid(sql, "the table must be named without schema or database");
        }
        if (where != null) {
            unqualify(where);
        }
        return new Selector(sql, unquote(table.getName()), columns,
                Optional.ofNullable(where).map(Expression::toString));
    }

    /**
     * How long the parser may spend on one selector, in milliseconds. Its first pass reads every usual selector in a
     * few milliseconds; its second, "complex" pass (for forms such as {@code (a > 1) IS TRUE}) backtracks
     * exponentially in parentheses, so a 44-character selector nesting 15 of them once took its whole default
     * timeout of 6 seconds of a core. Past this bound the selector is refused, and the parser's thread stops.
     */
    static final int PARSE_TIMEOUT_MS = 1_000;

    static void bounded(net.sf.jsqlparser.parser.CCJSqlParser parser) {
        parser.withTimeOut(PARSE_TIMEOUT_MS);
    }

    /** Whether the selector reads {@code column}: selects it, or its filter names it. */
    public boolean reads(String column) {
        if (columns.contains(column)) {
            return true;
        }
        if (where.isEmpty()) {
            return false;
        }
        boolean[] named = {false};
        try {
            CCJSqlParserUtil.parseCondExpression(where.get(), false, Selector::bounded).accept(
                    new net.sf.jsqlparser.util.deparser.ExpressionDeParser() {
                        @Override
                        public <S> StringBuilder visit(Column c, S context) {
                            named[0] |= unquote(c.getColumnName()).equals(column);
                            return super.visit(c, context);
                        }
                    }, null);
        } catch (JSQLParserException e) {
            return true; // the filter was rendered from a parsed tree: if it no longer parses, assume it reads it
        }
        return named[0];
    }

    /**
     * Drops the table qualifier of every column in the filter (the allow-list let only the selector's own table
     * qualify one): PostgreSQL reads {@code orders.f} with no column {@code f} as the function call {@code f(orders)},
     * so a qualified name could run a function on every row; unqualified, it can only name a column.
     */
    private static void unqualify(Expression where) {
        where.accept(new net.sf.jsqlparser.util.deparser.ExpressionDeParser() {
            @Override
            public <S> StringBuilder visit(Column column, S context) {
                column.setTable(null);
                return super.visit(column, context);
            }
        }, null);
    }

    static String unquote(String identifier) {
        if (identifier.length() >= 2 && identifier.startsWith("\"") && identifier.endsWith("\"")) {
            return identifier.substring(1, identifier.length() - 1).replace("\"\"", "\"");
        }
        return identifier.toLowerCase(java.util.Locale.ROOT);
    }

    private static ThresherException invalid(String sql, String why) {
        return new ThresherException(ErrorCode.INVALID_SELECTOR, "invalid selector '" + dev.thresher.errors.Quoted.of(sql)
                + "': " + why);
    }
}
