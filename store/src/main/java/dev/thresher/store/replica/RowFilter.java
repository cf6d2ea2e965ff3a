package dev.thresher.store.replica;

import dev.thresher.store.replica.ColumnVector.BoolVector;
import dev.thresher.store.replica.ColumnVector.BytesVector;
import dev.thresher.store.replica.ColumnVector.DoubleVector;
import dev.thresher.store.replica.ColumnVector.LongVector;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import net.sf.jsqlparser.expression.Expression;
import net.sf.jsqlparser.parser.CCJSqlParserUtil;

/**
 * A selector's {@code WHERE}, compiled to run on a {@link PartitionRows} with exactly PostgreSQL's
 * answer, or not at all: {@link #compile} declines whatever it cannot answer exactly, and the caller then
 * reads the partition with SQL.
 *
 * <p>What compiles: {@code AND}, {@code OR}, {@code NOT} with SQL's three-valued logic; {@code IS [NOT] NULL}
 * on a column or a parenthesized condition; {@code IS [NOT] TRUE|FALSE} on a {@code bool} column or a
 * parenthesized condition; a bare {@code bool} column; {@code TRUE}, {@code FALSE}, {@code NULL};
 * comparisons ({@code =, <>, !=, <, <=, >, >=}), {@code [NOT] BETWEEN} and {@code [NOT] IN (list)} between a
 * column and literals, on either side, where
 * <ul>
 * <li>an integer column ({@code int2/4/8}) meets integer or decimal literals, compared exactly (PostgreSQL
 *     compares across integer types, or as {@code numeric});
 * <li>a {@code float4}/{@code float8} column meets numeric literals, compared as PostgreSQL compares
 *     {@code float8}: NaN equals NaN and is above everything else, {@code -0} equals {@code 0}. The literal
 *     becomes a {@code float8} ({@code float4} columns are widened, PostgreSQL's cross-type operators),
 *     except in an {@code IN} list of two or more items on a {@code float4} column, where PostgreSQL resolves
 *     the list to {@code float4} and so does this; a literal out of the type's range (which PostgreSQL
 *     refuses) is declined;
 * <li>a {@code bool} column meets {@code TRUE}/{@code FALSE};
 * <li>a text column meets string literals, for {@code =}, {@code <>} and {@code IN} only, as byte equality
 *     (PostgreSQL's, for a deterministic collation; {@code bpchar} ignores trailing spaces, as PostgreSQL does).
 *     Ordering text depends on the collation and is declined;
 * <li>any column carried in a batch meets {@code NULL} (the comparison is NULL).
 * </ul>
 * Declined: {@code numeric} columns in comparisons (stored as doubles, not exactly), {@code bytea},
 * arithmetic, casts, {@code LIKE}, functions, column against column, text ordering, parameters, qualified
 * or keyword column names, string literals with a prefix or a backslash, and trees JSqlParser builds
 * differently from PostgreSQL (an {@code IN} list followed by {@code AND}/{@code OR}, an unparenthesized
 * {@code NOT} under {@code IS}).
 *
 * <p>Immutable and thread-safe. The compiling is {@link RowFilterCompiler}'s; this class holds the evaluation tree
 * and runs it.
 */
public final class RowFilter {
    static final byte FALSE = 0;
    static final byte TRUE = 1;
    static final byte NULL = 2;

    private final String where;
    private final List<ReplicaColumn> columns;
    private final Node root;

    private RowFilter(String where, List<ReplicaColumn> columns, Node root) {
        this.where = where;
        this.columns = columns;
        this.root = root;
    }

    /**
     * Compiles a filter, or declines.
     *
     * @param where a selector's {@code WHERE} ({@code Selector.where()}), as the shard database would get it
     * @param columns the table's columns, as the {@link PartitionRows} the filter will run on has them
     * @return the filter, or empty when its answer could differ from PostgreSQL's (or PostgreSQL would refuse
     *     the filter): then read with SQL
     */
    public static Optional<RowFilter> compile(String where, List<ReplicaColumn> columns) {
        Objects.requireNonNull(where, "where");
        List<ReplicaColumn> cols = List.copyOf(columns);
        Expression parsed;
        try {
            parsed = CCJSqlParserUtil.parseCondExpression(where, false);
        } catch (Exception | StackOverflowError e) {
            return Optional.empty();
        }
        try {
            return Optional.of(new RowFilter(where, cols, new RowFilterCompiler(cols).condition(parsed)));
        } catch (RowFilterCompiler.Declined | StackOverflowError e) {
            return Optional.empty();
        }
    }

    /** The {@code WHERE} compiled. */
    public String where() {
        return where;
    }

    /** The columns the filter was compiled against. */
    public List<ReplicaColumn> columns() {
        return columns;
    }

    /** Whether the row passes: the condition is TRUE (not FALSE, not NULL). */
    boolean accepts(PartitionRows rows, int row) {
        return root.eval(rows, row) == TRUE;
    }

    @Override
    public String toString() {
        return "RowFilter[" + where + "]";
    }

    /** A condition's value for one row: {@link #TRUE}, {@link #FALSE} or {@link #NULL}. */
    interface Node {
        byte eval(PartitionRows rows, int row);
    }

    static byte of(boolean b) {
        return b ? TRUE : FALSE;
    }

    record Constant(byte value) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            return value;
        }
    }

    record And(Node left, Node right) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            byte l = left.eval(rows, row);
            if (l == FALSE) {
                return FALSE;
            }
            byte r = right.eval(rows, row);
            return r == FALSE ? FALSE : l == NULL || r == NULL ? NULL : TRUE;
        }
    }

    record Or(Node left, Node right) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            byte l = left.eval(rows, row);
            if (l == TRUE) {
                return TRUE;
            }
            byte r = right.eval(rows, row);
            return r == TRUE ? TRUE : l == NULL || r == NULL ? NULL : FALSE;
        }
    }

    /** {@code x IN (...)}: any of the equalities TRUE, else NULL if any is NULL, else FALSE. */
    record Any(Node[] equalities) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            byte result = FALSE;
            for (Node n : equalities) {
                byte v = n.eval(rows, row);
                if (v == TRUE) {
                    return TRUE;
                }
                if (v == NULL) {
                    result = NULL;
                }
            }
            return result;
        }
    }

    record Not(Node operand) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            byte v = operand.eval(rows, row);
            return v == NULL ? NULL : v == TRUE ? FALSE : TRUE;
        }
    }

    /** {@code x IS [NOT] NULL} of a condition. */
    record IsNull(Node operand, boolean not) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            return of((operand.eval(rows, row) == NULL) != not);
        }
    }

    /** {@code column IS [NOT] NULL}. */
    record ColumnIsNull(int column, boolean not) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            return of(rows.vector(column).isNull(row) != not);
        }
    }

    /** {@code x IS [NOT] TRUE|FALSE}. */
    record IsBoolean(Node operand, boolean truth, boolean not) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            return of((operand.eval(rows, row) == (truth ? TRUE : FALSE)) != not);
        }
    }

    /** A {@code bool} column as a condition. */
    record BoolColumn(int column) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            BoolVector v = (BoolVector) rows.vector(column);
            return v.isNull(row) ? NULL : of(v.get(row));
        }
    }

    /** The comparison operators, each as a test of a three-way comparison's sign. */
    enum Op {
        EQ, NE, LT, LE, GT, GE;

        boolean test(int sign) {
            return switch (this) {
                case EQ -> sign == 0;
                case NE -> sign != 0;
                case LT -> sign < 0;
                case LE -> sign <= 0;
                case GT -> sign > 0;
                case GE -> sign >= 0;
            };
        }

        /** The operator with its operands swapped ({@code 5 < a} is {@code a > 5}). */
        Op flipped() {
            return switch (this) {
                case EQ, NE -> this;
                case LT -> GT;
                case LE -> GE;
                case GT -> LT;
                case GE -> LE;
            };
        }
    }

    /**
     * An integer column against an exact decimal: the sign of {@code column - literal}, computed from what the
     * literal is to a {@code long} (equal to one, between two, or beyond the range).
     */
    record LongCompare(int column, Op op, int kind, long value) implements Node {
        static final int EXACT = 0;
        /** The literal lies strictly between {@code value} and {@code value + 1}. */
        static final int BETWEEN = 1;
        static final int ABOVE_ALL = 2;
        static final int BELOW_ALL = 3;

        static LongCompare of(int column, Op op, BigDecimal literal) {
            BigDecimal floor = literal.setScale(0, RoundingMode.FLOOR);
            boolean integral = floor.compareTo(literal) == 0;
            if (floor.compareTo(BigDecimal.valueOf(Long.MIN_VALUE)) < 0) {
                return new LongCompare(column, op, BELOW_ALL, 0);
            }
            if (floor.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0
                    || !integral && floor.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) == 0) {
                return new LongCompare(column, op, ABOVE_ALL, 0);
            }
            return new LongCompare(column, op, integral ? EXACT : BETWEEN, floor.longValueExact());
        }

        @Override
        public byte eval(PartitionRows rows, int row) {
            LongVector v = (LongVector) rows.vector(column);
            if (v.isNull(row)) {
                return NULL;
            }
            long x = v.values[row];
            int sign = switch (kind) {
                case EXACT -> Long.compare(x, value);
                case BETWEEN -> x <= value ? -1 : 1;
                case ABOVE_ALL -> -1;
                default -> 1;
            };
            return RowFilter.of(op.test(sign));
        }
    }

    /** A {@code float4}/{@code float8} column against a double, as PostgreSQL orders {@code float8}. */
    record DoubleCompare(int column, Op op, double value) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            DoubleVector v = (DoubleVector) rows.vector(column);
            return v.isNull(row) ? NULL : RowFilter.of(op.test(compareFloat8(v.values[row], value)));
        }
    }

    /** PostgreSQL's {@code float8_cmp_internal}: NaN equals NaN and sorts above every other value; -0 equals 0. */
    static int compareFloat8(double a, double b) {
        if (Double.isNaN(a)) {
            return Double.isNaN(b) ? 0 : 1;
        }
        if (Double.isNaN(b)) {
            return -1;
        }
        return a < b ? -1 : a > b ? 1 : 0;
    }

    record BoolCompare(int column, Op op, boolean value) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            BoolVector v = (BoolVector) rows.vector(column);
            return v.isNull(row) ? NULL : RowFilter.of(op.test(Boolean.compare(v.get(row), value)));
        }
    }

    /** A text column equal (or not) to a string, byte for byte; {@code bpchar} without trailing spaces. */
    record TextEquals(int column, byte[] value, boolean blankPadded, boolean not) implements Node {
        @Override
        public byte eval(PartitionRows rows, int row) {
            BytesVector v = (BytesVector) rows.vector(column);
            if (v.isNull(row)) {
                return NULL;
            }
            byte[] x = v.values[row];
            boolean equal = blankPadded
                    ? Arrays.equals(x, 0, trimmedLength(x), value, 0, value.length)
                    : Arrays.equals(x, value);
            return RowFilter.of(equal != not);
        }
    }

    /** The length without trailing spaces, as {@code bpchar} compares (PostgreSQL's {@code bcTruelen}). */
    static int trimmedLength(byte[] b) {
        int n = b.length;
        while (n > 0 && b[n - 1] == ' ') {
            n--;
        }
        return n;
    }


}
