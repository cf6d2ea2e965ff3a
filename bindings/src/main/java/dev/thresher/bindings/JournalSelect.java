package dev.thresher.bindings;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One query of a journal view: the columns to answer, a filter of comparisons between a column and a literal
 * joined by {@code AND}, {@code OR} and {@code NOT}, an order and a page ({@code LIMIT}, {@code OFFSET}). What
 * pgwire parses from {@code SELECT ... FROM thresher.invocations ...} and HTTP builds from its query parameters;
 * a {@link JournalService} answers it for one tenant, never as SQL of the caller's: columns come from the view's
 * list, literals travel as values.
 *
 * <p>A query is checked when it is made: every column exists in the view ({@link ErrorCode#UNKNOWN_COLUMN}),
 * every literal reads as its column's type ({@link ErrorCode#INVALID_ARGUMENTS}: a string holding a number for an
 * integer column, a timestamp for a timestamptz column, a UUID for a uuid column), {@code LIKE} applies to text and
 * uuid columns, and a json column is neither compared nor ordered by ({@link ErrorCode#UNSUPPORTED_STATEMENT}).
 * A literal may be a {@link Parameter} the front door fills ({@link #bind}) before the query runs.
 *
 * @param columns the columns answered, in order (repeats allowed), at least one
 * @param where the filter, if any
 * @param orderBy the order asked for; the view's {@link JournalView#recencyOrder()} follows it, so the order is total
 * @param limit rows at most; at most {@value #MAX_ROWS} whatever is asked (the default too)
 * @param offset rows skipped first
 */
public record JournalSelect(JournalView view, List<String> columns, Optional<Filter> where, List<Order> orderBy,
                            OptionalLong limit, long offset) {
    /** The most rows one query answers, and what it answers without a {@code LIMIT}. */
    public static final int MAX_ROWS = 1000;
    /** The most values one {@code IN} list holds. */
    public static final int MAX_IN_VALUES = 1000;

    public JournalSelect {
        Objects.requireNonNull(view, "view");
        columns = List.copyOf(columns);
        Objects.requireNonNull(where, "where");
        orderBy = List.copyOf(orderBy);
        Objects.requireNonNull(limit, "limit");
        if (columns.isEmpty()) {
            throw new ThresherException(ErrorCode.SYNTAX_ERROR, "a query of " + view.qualifiedName()
                    + " answers at least one column");
        }
        for (String c : columns) {
            column(view, c);
        }
        where.ifPresent(f -> check(view, f));
        for (Order o : orderBy) {
            JournalColumn c = column(view, o.column());
            if (!c.type().ordered()) {
                throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "column " + c.name() + " is "
                        + c.type().sqlName() + ", which has no order; ORDER BY another column");
            }
        }
        if (limit.isPresent() && limit.getAsLong() < 0) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "LIMIT must not be negative, was " + limit.getAsLong());
        }
        if (offset < 0) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "OFFSET must not be negative, was " + offset);
        }
    }

    /** Every column of {@code view}, newest rows first, at most {@code limit} of them. */
    public static JournalSelect recent(JournalView view, Optional<Filter> where, long limit) {
        return new JournalSelect(view, view.columns().stream().map(JournalColumn::name).toList(), where,
                view.recencyOrder().stream().map(c -> new Order(c, true)).toList(), OptionalLong.of(limit), 0);
    }

    /** The rows answered at most: the {@code LIMIT} asked for, capped at {@value #MAX_ROWS}. */
    public int effectiveLimit() {
        return (int) Math.min(limit.orElse(MAX_ROWS), MAX_ROWS);
    }

    /** The answered columns with their types, in order. */
    public List<JournalColumn> resolvedColumns() {
        return columns.stream().map(c -> column(view, c)).toList();
    }

    /** The order the query's rows come in: its own, then the view's recency order for what it leaves tied. */
    public List<Order> totalOrder() {
        List<Order> out = new ArrayList<>(orderBy);
        for (String c : view.recencyOrder()) {
            if (out.stream().noneMatch(o -> o.column().equals(c))) {
                out.add(new Order(c, true));
            }
        }
        return out;
    }

    // ---- the filter

    /** A condition on a view's rows. */
    public sealed interface Filter permits Compare, Null, In, Like, And, Or, Not {
    }

    /** {@code column op literal}. */
    public record Compare(String column, Op op, Literal value) implements Filter {
        public Compare {
            Objects.requireNonNull(column, "column");
            Objects.requireNonNull(op, "op");
            Objects.requireNonNull(value, "value");
        }
    }

    /** {@code column IS NULL}, or {@code IS NOT NULL} when {@code negated}. */
    public record Null(String column, boolean negated) implements Filter {
        public Null {
            Objects.requireNonNull(column, "column");
        }
    }

    /** {@code column [NOT] IN (literal, ...)}. */
    public record In(String column, List<Literal> values, boolean negated) implements Filter {
        public In {
            Objects.requireNonNull(column, "column");
            values = List.copyOf(values);
        }
    }

    /** {@code column [NOT] LIKE pattern}, or {@code ILIKE} (case-insensitive); {@code _}, {@code %} and {@code \}. */
    public record Like(String column, Literal pattern, boolean caseInsensitive, boolean negated) implements Filter {
        public Like {
            Objects.requireNonNull(column, "column");
            Objects.requireNonNull(pattern, "pattern");
        }
    }

    public record And(Filter left, Filter right) implements Filter {
        public And {
            Objects.requireNonNull(left, "left");
            Objects.requireNonNull(right, "right");
        }
    }

    public record Or(Filter left, Filter right) implements Filter {
        public Or {
            Objects.requireNonNull(left, "left");
            Objects.requireNonNull(right, "right");
        }
    }

    public record Not(Filter filter) implements Filter {
        public Not {
            Objects.requireNonNull(filter, "filter");
        }
    }

    /** The comparison operators, as SQL spells them. */
    public enum Op {
        EQ("="), NE("<>"), LT("<"), LE("<="), GT(">"), GE(">=");

        private final String sql;

        Op(String sql) {
            this.sql = sql;
        }

        public String sql() {
            return sql;
        }
    }

    /** {@code ORDER BY column [DESC]}. */
    public record Order(String column, boolean descending) {
        public Order {
            Objects.requireNonNull(column, "column");
        }
    }

    // ---- literals

    /** A value a column is compared with. */
    public sealed interface Literal permits Text, Number, Timestamp, Now, Parameter {
    }

    /** A string literal; it must read as its column's type. */
    public record Text(String value) implements Literal {
        public Text {
            Objects.requireNonNull(value, "value");
        }
    }

    /** A numeric literal. */
    public record Number(BigDecimal value) implements Literal {
        public Number {
            Objects.requireNonNull(value, "value");
        }
    }

    /** A point in time. */
    public record Timestamp(Instant value) implements Literal {
        public Timestamp {
            Objects.requireNonNull(value, "value");
        }
    }

    /**
     * {@code now()} on the control database's clock (the time its statement started), moved by {@code offsetMicros}:
     * {@code now() - interval '1 hour'} is {@code Now(-3_600_000_000)}.
     */
    public record Now(long offsetMicros) implements Literal {
    }

    /** {@code $index} (1-based), filled by {@link #bind} before the query runs. */
    public record Parameter(int index) implements Literal {
        public Parameter {
            if (index < 1) {
                throw new IllegalArgumentException("parameters are numbered from 1, was $" + index);
            }
        }
    }

    // ---- parameters

    /** The parameters the query holds, by number, each with the type of the column it stands for. */
    public Map<Integer, JournalType> parameterTypes() {
        Map<Integer, JournalType> types = new TreeMap<>();
        where.ifPresent(f -> parameters(f, types));
        return types;
    }

    private void parameters(Filter f, Map<Integer, JournalType> types) {
        switch (f) {
            case Compare c -> parameter(c.value(), column(view, c.column()).type(), types);
            case In in -> in.values().forEach(v -> parameter(v, column(view, in.column()).type(), types));
            case Like l -> parameter(l.pattern(), JournalType.TEXT, types);
            case Null n -> { }
            case And a -> {
                parameters(a.left(), types);
                parameters(a.right(), types);
            }
            case Or o -> {
                parameters(o.left(), types);
                parameters(o.right(), types);
            }
            case Not n -> parameters(n.filter(), types);
        }
    }

    private static void parameter(Literal l, JournalType type, Map<Integer, JournalType> types) {
        if (l instanceof Parameter p) {
            types.putIfAbsent(p.index(), type);
        }
    }

    /**
     * This query with each {@code $n} replaced by {@code values.get(n - 1)}, checked again with them.
     *
     * @param values a {@link Text} or {@link Number} per parameter; null stands for a NULL, which is refused (compare
     *     with {@code IS NULL})
     */
    public JournalSelect bind(List<Literal> values) {
        return new JournalSelect(view, columns, where.map(f -> bind(f, values)), orderBy, limit, offset);
    }

    private static Filter bind(Filter f, List<Literal> values) {
        return switch (f) {
            case Compare c -> new Compare(c.column(), c.op(), bind(c.value(), values));
            case In in -> new In(in.column(), in.values().stream().map(v -> bind(v, values)).toList(), in.negated());
            case Like l -> new Like(l.column(), bind(l.pattern(), values), l.caseInsensitive(), l.negated());
            case Null n -> n;
            case And a -> new And(bind(a.left(), values), bind(a.right(), values));
            case Or o -> new Or(bind(o.left(), values), bind(o.right(), values));
            case Not n -> new Not(bind(n.filter(), values));
        };
    }

    private static Literal bind(Literal l, List<Literal> values) {
        if (!(l instanceof Parameter p)) {
            return l;
        }
        if (p.index() > values.size()) {
            throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "there is no parameter $" + p.index());
        }
        Literal v = values.get(p.index() - 1);
        if (v == null) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter $" + p.index()
                    + " is NULL, which equals nothing; compare with IS NULL instead");
        }
        if (v instanceof Parameter) {
            throw new IllegalArgumentException("a parameter is bound to a value, not to another parameter");
        }
        return v;
    }

    /** Whether a parameter is still to be bound. */
    public boolean hasParameters() {
        return !parameterTypes().isEmpty();
    }

    // ---- checks and values

    private static JournalColumn column(JournalView view, String name) {
        return view.column(name).orElseThrow(() -> new ThresherException(ErrorCode.UNKNOWN_COLUMN, "column \"" + name
                + "\" does not exist in " + view.qualifiedName() + "; its columns are "
                + String.join(", ", view.columns().stream().map(JournalColumn::name).toList())));
    }

    private static void check(JournalView view, Filter f) {
        switch (f) {
            case Compare c -> {
                JournalColumn col = column(view, c.column());
                if (!col.type().ordered()) {
                    throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "column " + col.name() + " is "
                            + col.type().sqlName() + ", which cannot be compared; test it with IS [NOT] NULL");
                }
                value(col, c.value());
            }
            case In in -> {
                JournalColumn col = column(view, in.column());
                if (!col.type().ordered()) {
                    throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "column " + col.name() + " is "
                            + col.type().sqlName() + ", which cannot be compared; test it with IS [NOT] NULL");
                }
                if (in.values().isEmpty() || in.values().size() > MAX_IN_VALUES) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "an IN list holds 1 to " + MAX_IN_VALUES
                            + " values, not " + in.values().size());
                }
                in.values().forEach(v -> value(col, v));
            }
            case Like l -> {
                JournalColumn col = column(view, l.column());
                if (!col.type().matchable()) {
                    throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, (l.caseInsensitive() ? "ILIKE" : "LIKE")
                            + " applies to text and uuid columns; " + col.name() + " is " + col.type().sqlName());
                }
                if (!(l.pattern() instanceof Text) && !(l.pattern() instanceof Parameter)) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the pattern of " + col.name()
                            + " LIKE is a string literal");
                }
            }
            case Null n -> column(view, n.column());
            case And a -> {
                check(view, a.left());
                check(view, a.right());
            }
            case Or o -> {
                check(view, o.left());
                check(view, o.right());
            }
            case Not n -> check(view, n.filter());
        }
    }

    /**
     * The value a literal stands for when compared with {@code column}: a {@link String} (text), a {@link Long} or,
     * for a number with a fraction, a {@link BigDecimal} (integer columns), a {@link UUID}, an {@link Instant} or a
     * {@link Now} (timestamptz); a {@link Parameter} as it is.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} when the literal does not read as the column's type
     */
    public static Object value(JournalColumn column, Literal literal) {
        JournalType type = column.type();
        if (!type.ordered()) {
            throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "column " + column.name() + " is "
                    + type.sqlName() + ", which cannot be compared; test it with IS [NOT] NULL");
        }
        return switch (literal) {
            case Parameter p -> p;
            case Text t -> switch (type) {
                case TEXT -> t.value();
                case INT4, INT8 -> {
                    try {
                        yield Long.parseLong(t.value().strip());
                    } catch (NumberFormatException e) {
                        if (t.value().strip().matches("[+-]?[0-9]+")) {
                            throw outOfRange(column, "'" + shorten(t.value().strip()) + "'");
                        }
                        throw mismatch(column, "'" + shorten(t.value()) + "'", "an integer");
                    }
                }
                case TIMESTAMPTZ -> parseTimestamp(t.value()).orElseThrow(() -> mismatch(column,
                        "'" + shorten(t.value()) + "'", "a timestamp such as '2025-01-31 09:15:00+00' or '2025-01-31T09:15:00Z'"));
                case UUID -> parseUuid(t.value()).orElseThrow(() -> mismatch(column, "'" + shorten(t.value()) + "'",
                        "a UUID"));
                case JSON -> throw new IllegalStateException("json is not compared");
            };
            case Number n -> {
                if (!type.integral()) {
                    throw mismatch(column, "the number " + n.value().toPlainString(), "a " + (type == JournalType.TEXT
                            ? "string literal" : type.sqlName()));
                }
                BigDecimal v = n.value().stripTrailingZeros();
                if (v.abs().compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
                    // compared as it is, a number past bigint could match every row or none: refused, never answered
                    throw outOfRange(column, "the number " + shorten(n.value().toString()));
                }
                if (v.scale() <= 0) {
                    yield v.longValueExact();
                }
                yield n.value();
            }
            case Timestamp ts -> {
                if (type != JournalType.TIMESTAMPTZ) {
                    throw mismatch(column, "a timestamp", "a " + type.sqlName());
                }
                yield ts.value();
            }
            case Now now -> {
                if (type != JournalType.TIMESTAMPTZ) {
                    throw mismatch(column, "now()", "a " + type.sqlName());
                }
                yield now;
            }
        };
    }

    private static ThresherException outOfRange(JournalColumn column, String what) {
        return new ThresherException(ErrorCode.NUMBER_OUT_OF_RANGE, "column " + column.name() + " is "
                + column.type().sqlName() + ": " + what + " is out of range for bigint");
    }

    private static ThresherException mismatch(JournalColumn column, String what, String expected) {
        return new ThresherException(ErrorCode.INVALID_ARGUMENTS, "column " + column.name() + " is "
                + column.type().sqlName() + ": " + what + " is not " + expected);
    }

    private static String shorten(String s) {
        return s.length() > 64 ? s.substring(0, 64) + "..." : s;
    }

    private static final Pattern UUID_TEXT = Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    /** A UUID in its canonical text form (any case), else empty. */
    public static Optional<UUID> parseUuid(String text) {
        String s = text.strip();
        return UUID_TEXT.matcher(s).matches() ? Optional.of(UUID.fromString(s)) : Optional.empty();
    }

    /** Date, time (seconds and fraction optional) and offset as PostgreSQL writes them, or with a {@code T}. */
    private static final Pattern TIMESTAMP_TEXT = Pattern.compile(
            "(\\d{4}-\\d{2}-\\d{2})(?:[ Tt](\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?))?"
                    + "\\s*(Z|z|UTC|utc|[+-]\\d{2}(?::?\\d{2})?)?");
    private static final DateTimeFormatter TIME = new DateTimeFormatterBuilder()
            .appendValue(ChronoField.HOUR_OF_DAY, 2).appendLiteral(':').appendValue(ChronoField.MINUTE_OF_HOUR, 2)
            .optionalStart().appendLiteral(':').appendValue(ChronoField.SECOND_OF_MINUTE, 2)
            .optionalStart().appendFraction(ChronoField.NANO_OF_SECOND, 1, 9, true).optionalEnd().optionalEnd()
            .toFormatter();

    /**
     * A point in time written as ISO-8601 ({@code 2025-01-31T09:15:00Z}, {@code 2025-01-31T10:15:00+01:00}) or as
     * PostgreSQL writes a timestamptz ({@code 2025-01-31 09:15:00.5+00}); a time without an offset, or a date
     * alone (midnight), is UTC, the sessions' time zone.
     */
    public static Optional<Instant> parseTimestamp(String text) {
        Matcher m = TIMESTAMP_TEXT.matcher(text.strip());
        if (!m.matches()) {
            return Optional.empty();
        }
        try {
            LocalDate date = LocalDate.parse(m.group(1));
            LocalDateTime local = m.group(2) == null ? date.atStartOfDay()
                    : LocalDateTime.of(date, java.time.LocalTime.parse(m.group(2), TIME));
            String zone = m.group(3);
            ZoneOffset offset;
            if (zone == null || zone.equalsIgnoreCase("Z") || zone.equalsIgnoreCase("UTC")) {
                offset = ZoneOffset.UTC;
            } else {
                String digits = zone.substring(1).replace(":", "");
                int hours = Integer.parseInt(digits.substring(0, 2));
                int minutes = digits.length() > 2 ? Integer.parseInt(digits.substring(2)) : 0;
                int sign = zone.charAt(0) == '-' ? -1 : 1;
                offset = ZoneOffset.ofHoursMinutes(sign * hours, sign * minutes);
            }
            return Optional.of(OffsetDateTime.of(local, offset).toInstant());
        } catch (java.time.DateTimeException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** An unmodifiable copy of {@code values} that may hold nulls. */
    static <T> List<T> nullable(List<T> values) {
        return Collections.unmodifiableList(new ArrayList<>(values));
    }
}
