package dev.thresher.store.replica;

import static dev.thresher.store.replica.RowFilter.NULL;
import static dev.thresher.store.replica.RowFilter.of;
import static dev.thresher.store.replica.RowFilter.trimmedLength;

import dev.thresher.store.replica.RowFilter.And;
import dev.thresher.store.replica.RowFilter.Any;
import dev.thresher.store.replica.RowFilter.BoolColumn;
import dev.thresher.store.replica.RowFilter.BoolCompare;
import dev.thresher.store.replica.RowFilter.ColumnIsNull;
import dev.thresher.store.replica.RowFilter.Constant;
import dev.thresher.store.replica.RowFilter.DoubleCompare;
import dev.thresher.store.replica.RowFilter.IsBoolean;
import dev.thresher.store.replica.RowFilter.IsNull;
import dev.thresher.store.replica.RowFilter.LongCompare;
import dev.thresher.store.replica.RowFilter.Node;
import dev.thresher.store.replica.RowFilter.Not;
import dev.thresher.store.replica.RowFilter.Op;
import dev.thresher.store.replica.RowFilter.Or;
import dev.thresher.store.replica.RowFilter.TextEquals;
import dev.thresher.store.shard.PgType;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import net.sf.jsqlparser.expression.BooleanValue;
import net.sf.jsqlparser.expression.DoubleValue;
import net.sf.jsqlparser.expression.Expression;
import net.sf.jsqlparser.expression.LongValue;
import net.sf.jsqlparser.expression.NotExpression;
import net.sf.jsqlparser.expression.NullValue;
import net.sf.jsqlparser.expression.SignedExpression;
import net.sf.jsqlparser.expression.StringValue;
import net.sf.jsqlparser.expression.operators.conditional.AndExpression;
import net.sf.jsqlparser.expression.operators.conditional.OrExpression;
import net.sf.jsqlparser.expression.operators.relational.Between;
import net.sf.jsqlparser.expression.operators.relational.ComparisonOperator;
import net.sf.jsqlparser.expression.operators.relational.EqualsTo;
import net.sf.jsqlparser.expression.operators.relational.GreaterThan;
import net.sf.jsqlparser.expression.operators.relational.GreaterThanEquals;
import net.sf.jsqlparser.expression.operators.relational.InExpression;
import net.sf.jsqlparser.expression.operators.relational.IsBooleanExpression;
import net.sf.jsqlparser.expression.operators.relational.IsNullExpression;
import net.sf.jsqlparser.expression.operators.relational.MinorThan;
import net.sf.jsqlparser.expression.operators.relational.MinorThanEquals;
import net.sf.jsqlparser.expression.operators.relational.NotEqualsTo;
import net.sf.jsqlparser.expression.operators.relational.OldOracleJoinBinaryExpression;
import net.sf.jsqlparser.expression.operators.relational.ParenthesedExpressionList;
import net.sf.jsqlparser.schema.Column;

/**
 * Compiles a selector's {@code WHERE}, as JSqlParser parses it, to the evaluation tree of a {@link RowFilter} (its
 * javadoc says what compiles), or declines ({@link Declined}) whatever could be answered otherwise than PostgreSQL
 * answers it.
 */
final class RowFilterCompiler {
    /** Longest decimal literal, in digits or exponent, taken; longer ones are left to PostgreSQL. */
    private static final int MAX_LITERAL_DIGITS = 1000;

    /**
     * Words PostgreSQL does not read as a column name when unquoted (its reserved keywords, and the column-name
     * keywords that start expressions of their own); such a column must be quoted.
     */
    private static final Set<String> KEYWORDS = Set.of(
            "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both", "case", "cast",
            "check", "collate", "column", "constraint", "create", "current_catalog", "current_date", "current_role",
            "current_time", "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do",
            "else", "end", "except", "false", "fetch", "for", "foreign", "from", "grant", "group", "having", "in",
            "initially", "intersect", "into", "lateral", "leading", "limit", "localtime", "localtimestamp", "not",
            "null", "offset", "on", "only", "or", "order", "placing", "primary", "references", "returning", "select",
            "session_user", "some", "symmetric", "system_user", "table", "then", "to", "trailing", "true", "union",
            "unique", "user", "using", "variadic", "when", "where", "window", "with",
            "authorization", "binary", "collation", "concurrently", "cross", "current_schema", "freeze", "full",
            "ilike", "inner", "is", "isnull", "join", "left", "like", "natural", "notnull", "outer", "overlaps",
            "right", "similar", "tablesample", "verbose",
            "between", "bigint", "bit", "boolean", "char", "character", "coalesce", "dec", "decimal", "exists",
            "extract", "float", "greatest", "grouping", "inout", "int", "integer", "interval", "json", "json_array",
            "json_arrayagg", "json_exists", "json_object", "json_objectagg", "json_query", "json_scalar",
            "json_serialize", "json_table", "json_value", "least", "merge_action", "national", "nchar", "none",
            "normalize", "nullif", "numeric", "out", "overlay", "position", "precision", "real", "row", "setof",
            "smallint", "substring", "time", "timestamp", "treat", "trim", "values", "varchar", "xmlattributes",
            "xmlconcat", "xmlelement", "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot",
            "xmlserialize", "xmltable");

    /** Thrown inside the compiler for anything it declines. */
    static final class Declined extends RuntimeException {
        Declined() {
            super(null, null, false, false);
        }
    }

    /** A literal of the filter: NULL, a number (exact), a string, a boolean. */
    private sealed interface Literal {}

    private record NullLiteral() implements Literal {}

    private record NumberLiteral(BigDecimal value) implements Literal {}

    private record StringLiteral(String value) implements Literal {}

    private record BooleanLiteral(boolean value) implements Literal {}

    private final List<ReplicaColumn> columns;
    private final Map<String, Integer> byName = new HashMap<>();

    RowFilterCompiler(List<ReplicaColumn> columns) {
        this.columns = columns;
        for (int i = 0; i < columns.size(); i++) {
            byName.putIfAbsent(columns.get(i).name(), i);
        }
    }

    /** A boolean condition. */
    Node condition(Expression e) {
        Expression inner = unparenthesized(e);
        if (inner != e) {
            return condition(inner);
        }
        if (e instanceof AndExpression and) {
            if (and.isUseOperator()) {
                throw new Declined();
            }
            return new And(condition(and.getLeftExpression()), condition(and.getRightExpression()));
        }
        if (e instanceof OrExpression or) {
            return new Or(condition(or.getLeftExpression()), condition(or.getRightExpression()));
        }
        if (e instanceof NotExpression not) {
            if (not.isExclamationMark()) {
                throw new Declined();
            }
            return new Not(condition(not.getExpression()));
        }
        if (e instanceof Column c) {
            int column = column(c);
            if (columns.get(column).type() != PgType.BOOL) {
                throw new Declined(); // PostgreSQL refuses a non-boolean condition
            }
            return new BoolColumn(column);
        }
        if (e instanceof BooleanValue b) {
            return new Constant(of(b.getValue()));
        }
        if (e instanceof NullValue) {
            return new Constant(NULL);
        }
        if (e instanceof IsNullExpression isNull) {
            return isNull(isNull);
        }
        if (e instanceof IsBooleanExpression isBoolean) {
            Expression operand = isOperand(isBoolean.getLeftExpression());
            return new IsBoolean(condition(operand), isBoolean.isTrue(), isBoolean.isNot());
        }
        if (e instanceof ComparisonOperator comparison) {
            return comparison(comparison);
        }
        if (e instanceof Between between) {
            return between(between);
        }
        if (e instanceof InExpression in) {
            return in(in);
        }
        throw new Declined();
    }

    private Node isNull(IsNullExpression isNull) {
        if (isNull.isUseIsNull() || isNull.isUseNotNull()) {
            throw new Declined(); // ISNULL / NOTNULL spellings: left to PostgreSQL
        }
        Expression operand = isOperand(isNull.getLeftExpression());
        Expression inner = unparenthesized(operand);
        if (inner instanceof Column c) {
            return new ColumnIsNull(column(c), isNull.isNot());
        }
        if (literal(inner) instanceof Literal) {
            throw new Declined();
        }
        return new IsNull(condition(inner), isNull.isNot());
    }

    /**
     * The operand of {@code IS}: a column or something parenthesized. PostgreSQL's {@code IS} binds tighter
     * than {@code NOT}, {@code AND}, {@code OR}, so anything else under it is a tree JSqlParser built
     * differently ({@code NOT NOT b IS NULL}).
     */
    private static Expression isOperand(Expression e) {
        if (e instanceof Column || unparenthesized(e) != e) {
            return e;
        }
        throw new Declined();
    }

    private Node comparison(ComparisonOperator comparison) {
        if (comparison instanceof OldOracleJoinBinaryExpression o
                && (o.getOldOracleJoinSyntax() != 0 || o.getOraclePriorPosition() != 0)) {
            throw new Declined();
        }
        Op op = switch (comparison) {
            case EqualsTo x when "=".equals(x.getStringExpression()) -> Op.EQ;
            case NotEqualsTo x when "<>".equals(x.getStringExpression()) || "!=".equals(x.getStringExpression()) -> Op.NE;
            case MinorThan x when "<".equals(x.getStringExpression()) -> Op.LT;
            case MinorThanEquals x when "<=".equals(x.getStringExpression()) -> Op.LE;
            case GreaterThan x when ">".equals(x.getStringExpression()) -> Op.GT;
            case GreaterThanEquals x when ">=".equals(x.getStringExpression()) -> Op.GE;
            default -> throw new Declined();
        };
        Expression left = unparenthesized(comparison.getLeftExpression());
        Expression right = unparenthesized(comparison.getRightExpression());
        if (left instanceof Column c) {
            return compare(column(c), op, literalOrDecline(right), false);
        }
        if (right instanceof Column c) {
            return compare(column(c), op.flipped(), literalOrDecline(left), false);
        }
        throw new Declined();
    }

    private Node between(Between between) {
        Expression left = unparenthesized(between.getLeftExpression());
        if (!(left instanceof Column c)) {
            throw new Declined();
        }
        int column = column(c);
        Node inRange = new And(
                compare(column, Op.GE, literalOrDecline(unparenthesized(between.getBetweenExpressionStart())), false),
                compare(column, Op.LE, literalOrDecline(unparenthesized(between.getBetweenExpressionEnd())), false));
        return between.isNot() ? new Not(inRange) : inRange;
    }

    private Node in(InExpression in) {
        if (in.isGlobal() || in.getOldOracleJoinSyntax() != 0 || in.getOraclePriorPosition() != 0) {
            throw new Declined();
        }
        Expression left = unparenthesized(in.getLeftExpression());
        // Anything but a plain list on the right is a tree JSqlParser built differently from PostgreSQL
        // ("a IN (1, 2) AND b" parses as "a IN ((1, 2) AND b)"), or not a list of literals.
        if (!(left instanceof Column c) || !(in.getRightExpression() instanceof ParenthesedExpressionList<?> list)
                || list.isEmpty()) {
            throw new Declined();
        }
        int column = column(c);
        // PostgreSQL resolves a list of two or more items to one type with the column: for float4 that is
        // float4 (the items rounded to float4), where a single item is compared as float8.
        boolean asFloat4 = list.size() >= 2 && columns.get(column).type() == PgType.FLOAT4;
        Node[] equalities = new Node[list.size()];
        for (int i = 0; i < equalities.length; i++) {
            equalities[i] = compare(column, Op.EQ, literalOrDecline(unparenthesized(list.get(i))), asFloat4);
        }
        Node any = new Any(equalities);
        return in.isNot() ? new Not(any) : any;
    }

    /** {@code column op literal}, exactly as PostgreSQL would compare them, or declined. */
    private Node compare(int column, Op op, Literal literal, boolean asFloat4) {
        ReplicaColumn c = columns.get(column);
        PgType type = c.type();
        if (type == null) {
            throw new Declined();
        }
        if (literal instanceof NullLiteral) {
            return new Constant(NULL);
        }
        switch (type) {
            case INT2, INT4, INT8 -> {
                if (literal instanceof NumberLiteral n) {
                    return LongCompare.of(column, op, n.value());
                }
            }
            case FLOAT4, FLOAT8 -> {
                if (literal instanceof NumberLiteral n) {
                    return new DoubleCompare(column, op, asFloat4 ? toFloat4(n.value()) : toFloat8(n.value()));
                }
            }
            case BOOL -> {
                if (literal instanceof BooleanLiteral b) {
                    return new BoolCompare(column, op, b.value());
                }
            }
            case TEXT -> {
                if (literal instanceof StringLiteral s && (op == Op.EQ || op == Op.NE)) {
                    byte[] value = s.value().getBytes(StandardCharsets.UTF_8);
                    if (c.blankPadded()) {
                        value = Arrays.copyOf(value, trimmedLength(value));
                    }
                    return new TextEquals(column, value, c.blankPadded(), op == Op.NE);
                }
            }
            default -> {
                // numeric (held as doubles, not exactly), bytea: left to PostgreSQL
            }
        }
        throw new Declined();
    }

    /** The literal as PostgreSQL's {@code numeric::float8} makes it; out of range is PostgreSQL's error. */
    private static double toFloat8(BigDecimal value) {
        double d = Double.parseDouble(value.toString());
        if (Double.isInfinite(d) || d == 0 && value.signum() != 0) {
            throw new Declined();
        }
        return d;
    }

    /** The literal as a {@code float4} (PostgreSQL's {@code numeric::float4}, {@code int::float4}), widened. */
    private static double toFloat4(BigDecimal value) {
        float f = Float.parseFloat(value.toString());
        if (Float.isInfinite(f) || f == 0 && value.signum() != 0) {
            throw new Declined();
        }
        return f;
    }

    private int column(Column c) {
        if (c.getTable() != null && c.getTable().getName() != null || c.getArrayConstructor() != null) {
            throw new Declined();
        }
        String name = c.getColumnName();
        String resolved;
        if (name.length() >= 2 && name.startsWith("\"") && name.endsWith("\"")) {
            resolved = name.substring(1, name.length() - 1).replace("\"\"", "\"");
        } else {
            // Unquoted: PostgreSQL folds ASCII letters only; keywords are not column names there.
            if (!name.matches("[A-Za-z_][A-Za-z0-9_$]*")) {
                throw new Declined();
            }
            resolved = name.toLowerCase(Locale.ROOT);
            if (KEYWORDS.contains(resolved)) {
                throw new Declined();
            }
        }
        Integer i = byName.get(resolved);
        if (i == null) {
            throw new Declined(); // PostgreSQL's error, from the SQL read
        }
        return i;
    }

    private static Literal literalOrDecline(Expression e) {
        Literal l = literal(e);
        if (l == null) {
            throw new Declined();
        }
        return l;
    }

    /** The literal an expression is, or null when it is none (a column, an operator...). */
    private static Literal literal(Expression e) {
        e = unparenthesized(e);
        if (e instanceof NullValue) {
            return new NullLiteral();
        }
        if (e instanceof BooleanValue b) {
            return new BooleanLiteral(b.getValue());
        }
        if (e instanceof LongValue l) {
            return new NumberLiteral(number(l.getStringValue()));
        }
        if (e instanceof DoubleValue d) {
            return new NumberLiteral(number(d.toString()));
        }
        if (e instanceof SignedExpression s) {
            if ((s.getSign() == '-' || s.getSign() == '+') && literal(s.getExpression()) instanceof NumberLiteral n) {
                return new NumberLiteral(s.getSign() == '-' ? n.value().negate() : n.value());
            }
            throw new Declined();
        }
        if (e instanceof StringValue s) {
            String v = s.getNotExcapedValue();
            if (s.getPrefix() != null || v.indexOf('\\') >= 0 || v.indexOf('\0') >= 0) {
                throw new Declined();
            }
            return new StringLiteral(v);
        }
        return null;
    }

    private static BigDecimal number(String text) {
        if (!text.matches("[0-9]*\\.?[0-9]*([eE][-+]?[0-9]+)?") || text.length() > MAX_LITERAL_DIGITS) {
            throw new Declined();
        }
        BigDecimal value;
        try {
            value = new BigDecimal(text);
        } catch (NumberFormatException e) {
            throw new Declined();
        }
        if (Math.abs((long) value.scale()) > MAX_LITERAL_DIGITS || value.precision() > MAX_LITERAL_DIGITS) {
            throw new Declined();
        }
        return value;
    }

    /** The expression inside its parentheses (a list of one), or the expression itself. */
    private static Expression unparenthesized(Expression e) {
        while (e instanceof ParenthesedExpressionList<?> list && list.size() == 1) {
            e = list.get(0);
        }
        return e;
    }
}
