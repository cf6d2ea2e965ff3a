package dev.thresher.bindings;

import java.util.Locale;
import java.util.Set;
import net.sf.jsqlparser.expression.BinaryExpression;
import net.sf.jsqlparser.expression.BooleanValue;
import net.sf.jsqlparser.expression.CastExpression;
import net.sf.jsqlparser.expression.DoubleValue;
import net.sf.jsqlparser.expression.Expression;
import net.sf.jsqlparser.expression.LongValue;
import net.sf.jsqlparser.expression.NotExpression;
import net.sf.jsqlparser.expression.NullValue;
import net.sf.jsqlparser.expression.Parenthesis;
import net.sf.jsqlparser.expression.SignedExpression;
import net.sf.jsqlparser.expression.StringValue;
import net.sf.jsqlparser.expression.operators.arithmetic.Addition;
import net.sf.jsqlparser.expression.operators.arithmetic.Division;
import net.sf.jsqlparser.expression.operators.arithmetic.Modulo;
import net.sf.jsqlparser.expression.operators.arithmetic.Multiplication;
import net.sf.jsqlparser.expression.operators.arithmetic.Subtraction;
import net.sf.jsqlparser.expression.operators.conditional.AndExpression;
import net.sf.jsqlparser.expression.operators.conditional.OrExpression;
import net.sf.jsqlparser.expression.operators.relational.Between;
import net.sf.jsqlparser.expression.operators.relational.EqualsTo;
import net.sf.jsqlparser.expression.operators.relational.ExpressionList;
import net.sf.jsqlparser.expression.operators.relational.GreaterThan;
import net.sf.jsqlparser.expression.operators.relational.GreaterThanEquals;
import net.sf.jsqlparser.expression.operators.relational.InExpression;
import net.sf.jsqlparser.expression.operators.relational.IsBooleanExpression;
import net.sf.jsqlparser.expression.operators.relational.IsDistinctExpression;
import net.sf.jsqlparser.expression.operators.relational.IsNullExpression;
import net.sf.jsqlparser.expression.operators.relational.LikeExpression;
import net.sf.jsqlparser.expression.operators.relational.MinorThan;
import net.sf.jsqlparser.expression.operators.relational.MinorThanEquals;
import net.sf.jsqlparser.expression.operators.relational.NotEqualsTo;
import net.sf.jsqlparser.expression.operators.relational.OldOracleJoinBinaryExpression;
import net.sf.jsqlparser.schema.Column;

/**
 * What a selector's {@code WHERE} may hold. An allow-list, not a deny-list: every node of the parsed
 * filter must be one of the forms below, so a function call ({@code set_config(...)}, {@code pg_sleep},
 * {@code nextval}, {@code dblink}), a SQL value function ({@code current_user}), a parameter, a regular
 * expression operator or anything the parser learns later is refused when the binding is read, before
 * a shard database sees it.
 *
 * <p>The lexical check runs on the text first, with PostgreSQL's quoting rules (single-quoted strings
 * and double-quoted identifiers, each with its doubled-quote escape): outside them no {@code ;},
 * {@code --}, {@code /*}, {@code $} or backslash; inside string literals no backslash, so the parser and
 * PostgreSQL cannot read a literal's end in different places.
 */
final class WhereAllowList {
    /** Built-in types a filter may cast to (the batch encoding's types and their usual spellings). */
    static final Set<String> CAST_TYPES = Set.of(
            "smallint", "int2", "integer", "int", "int4", "bigint", "int8", "real", "float4", "double precision",
            "float8", "float", "numeric", "decimal", "text", "varchar", "character varying", "char", "character",
            "boolean", "bool", "date", "timestamp", "timestamptz", "timestamp with time zone",
            "timestamp without time zone", "bytea");

    /** Names PostgreSQL reads as calls to SQL value functions, not as columns. */
    static final Set<String> VALUE_FUNCTIONS = Set.of(
            "current_user", "session_user", "user", "current_role", "current_catalog", "current_schema",
            "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp", "system_user");

    private WhereAllowList() {}

    /**
     * The deepest nesting of parentheses a selector may have. Checked on the text, before the parser runs: a deeply
     * nested expression costs the parser time that grows much faster than its length (200 levels took seconds), and a
     * selector is parsed whenever a binding is read.
     */
    static final int MAX_NESTING = 32;

    /** Why the text cannot be a selector, or {@code null} if its tokens are acceptable. */
    static String lexicalProblem(String sql) {
        int i = 0;
        int n = sql.length();
        int depth = 0;
        while (i < n) {
            char c = sql.charAt(i);
            if (c == '(' && ++depth > MAX_NESTING) {
                return "parentheses nest more than " + MAX_NESTING + " deep";
            }
            if (c == ')') {
                depth--;
            }
            if (c == '\'' || c == '"') {
                int j = i + 1;
                while (true) {
                    if (j >= n) {
                        return "a quoted " + (c == '\'' ? "string" : "identifier") + " is not closed";
                    }
                    char d = sql.charAt(j);
                    if (c == '\'' && d == '\\') {
                        return "backslashes are not allowed in string literals";
                    }
                    if (d == c) {
                        if (j + 1 < n && sql.charAt(j + 1) == c) {
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    j++;
                }
                i = j + 1;
                continue;
            }
            if (c == ';') {
                return "only one statement is allowed (no ';')";
            }
            if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-' || c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
                return "comments are not allowed";
            }
            if (c == '$') {
                return "'$' (dollar quoting, parameters) is not allowed";
            }
            if (c == '\\') {
                return "backslashes are not allowed";
            }
            if (c == 0) {
                return "NUL characters are not allowed";
            }
            i++;
        }
        return null;
    }

    /**
     * Long because: one case per kind of node the allow-list admits, so the whole allow-list reads top to bottom.
     * Why the filter is refused, or {@code null} if every node is allowed.
     *
     * @param table the selector's table (unquoted), the only qualifier a column may carry
     */
    static String refusal(Expression e, String table) {
        if (e == null) {
            return "an empty expression is not allowed";
        }
        if (e instanceof Column c) {
            if (c.getTable() != null && c.getTable().getName() != null) {
                if (c.getTable().getSchemaName() != null || !Selector.unquote(c.getTable().getName()).equals(table)) {
                    return "column '" + c + "' names another table";
                }
            }
            String name = c.getColumnName();
            if (!name.startsWith("\"") && VALUE_FUNCTIONS.contains(name.toLowerCase(Locale.ROOT))) {
                return "'" + name + "' is a function, and functions are not allowed";
            }
            if (c.getArrayConstructor() != null) {
                return "array subscripts are not allowed";
            }
            return null;
        }
        if (e instanceof LongValue || e instanceof DoubleValue || e instanceof NullValue || e instanceof BooleanValue) {
            return null;
        }
        if (e instanceof StringValue s) {
            return s.getPrefix() == null ? null : "string literals with a prefix (" + s.getPrefix() + "'...') are not allowed";
        }
        if (e instanceof SignedExpression s) {
            return s.getSign() == '-' || s.getSign() == '+' ? refusal(s.getExpression(), table) : "the operator '" + s.getSign() + "' is not allowed";
        }
        if (e instanceof NotExpression not) {
            return not.isExclamationMark() ? "'!' is not allowed; write NOT" : refusal(not.getExpression(), table);
        }
        if (e instanceof Parenthesis p) {
            return refusal(p.getExpression(), table);
        }
        if (e instanceof ExpressionList<?> list) {
            if (list.isEmpty()) {
                return "an empty list is not allowed";
            }
            for (Expression item : list) {
                String r = refusal(item, table);
                if (r != null) {
                    return r;
                }
            }
            return null;
        }
        if (e instanceof AndExpression || e instanceof OrExpression || e instanceof Addition || e instanceof Subtraction
                || e instanceof Multiplication || e instanceof Division || e instanceof Modulo
                || e instanceof EqualsTo || e instanceof NotEqualsTo || e instanceof GreaterThan
                || e instanceof GreaterThanEquals || e instanceof MinorThan || e instanceof MinorThanEquals
                || e instanceof IsDistinctExpression) {
            BinaryExpression b = (BinaryExpression) e;
            if (b instanceof OldOracleJoinBinaryExpression o && (o.getOldOracleJoinSyntax() != 0 || o.getOraclePriorPosition() != 0)) {
                return "Oracle join syntax is not allowed";
            }
            if (b instanceof NotEqualsTo ne && !"<>".equals(ne.getStringExpression()) && !"!=".equals(ne.getStringExpression())) {
                return "the operator '" + ne.getStringExpression() + "' is not allowed";
            }
            String r = refusal(b.getLeftExpression(), table);
            return r != null ? r : refusal(b.getRightExpression(), table);
        }
        if (e instanceof IsNullExpression isNull) {
            return isNull.isUseIsNull() ? "ISNULL is not allowed; write IS NULL" : refusal(isNull.getLeftExpression(), table);
        }
        if (e instanceof IsBooleanExpression isBoolean) {
            return refusal(isBoolean.getLeftExpression(), table);
        }
        if (e instanceof Between b) {
            String r = refusal(b.getLeftExpression(), table);
            r = r != null ? r : refusal(b.getBetweenExpressionStart(), table);
            return r != null ? r : refusal(b.getBetweenExpressionEnd(), table);
        }
        if (e instanceof InExpression in) {
            if (in.isGlobal() || in.getOldOracleJoinSyntax() != 0) {
                return "this form of IN is not allowed";
            }
            // Not necessarily a list: JSqlParser reads "a IN (1, 2) AND b" as "a IN ((1, 2) AND b)". The filter
            // goes to PostgreSQL as text rendered back from this tree, so what matters is that every node of it
            // is allowed, wherever the parser hung it.
            String r = refusal(in.getLeftExpression(), table);
            return r != null ? r : refusal(in.getRightExpression(), table);
        }
        if (e instanceof LikeExpression like) {
            if (like.getLikeKeyWord() != LikeExpression.KeyWord.LIKE && like.getLikeKeyWord() != LikeExpression.KeyWord.ILIKE) {
                return "only LIKE and ILIKE are allowed, not " + like.getLikeKeyWord();
            }
            if (like.isUseBinary()) {
                return "LIKE BINARY is not allowed";
            }
            String r = refusal(like.getLeftExpression(), table);
            r = r != null ? r : refusal(like.getRightExpression(), table);
            return r != null || like.getEscape() == null ? r : refusal(like.getEscape(), table);
        }
        if (e instanceof CastExpression cast) {
            if (cast.keyword != null && !"CAST".equalsIgnoreCase(cast.keyword)) {
                return cast.keyword + " is not allowed";
            }
            if (cast.getColDataType() == null || cast.getFormat() != null || cast.getColumnDefinitions() != null
                    && !cast.getColumnDefinitions().isEmpty()) {
                return "this form of cast is not allowed";
            }
            var type = cast.getColDataType();
            if (type.getArrayData() != null && !type.getArrayData().isEmpty()) {
                return "casts to arrays are not allowed";
            }
            String name = type.getDataType().toLowerCase(Locale.ROOT).replaceAll("\\s+", " ").trim();
            if (!CAST_TYPES.contains(name)) {
                return "casts to '" + type.getDataType() + "' are not allowed (built-in scalar types only)";
            }
            return refusal(cast.getLeftExpression(), table);
        }
        return "'" + e + "' is not allowed in a selector's WHERE (" + describe(e) + ")";
    }

    private static String describe(Expression e) {
        String kind = e.getClass().getSimpleName();
        return switch (kind) {
            case "Function" -> "function calls are not allowed";
            case "ParenthesedSelect", "Select", "PlainSelect", "ExistsExpression", "AnyComparisonExpression" ->
                    "subqueries are not allowed";
            case "JdbcParameter", "JdbcNamedParameter", "NumericBind", "UserVariable" -> "parameters are not allowed";
            default -> kind + " is not on the allow-list";
        };
    }
}
