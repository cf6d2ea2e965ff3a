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
 * The literals of a journal query's filter, read as the column they are compared with: numbers, strings, casts,
 * {@code $n}, the current time and timestamps shifted by intervals; the grammar is {@link JournalSqlParser}'s.
 */
abstract class JournalValues extends JournalTokens {
    JournalValues(String sql, int from, int to) {
        super(sql, from, to);
    }

    // ---- values

    /** A literal compared with {@code column}, checked to read as its type. */
    Literal value(JournalColumn column) {
        Token t = peek();
        Literal literal = literal(column);
        try {
            JournalSelect.value(column, literal);
        } catch (ThresherException e) {
            throw new ThresherException(e.code(), e.getMessage() + " (position " + (t.at() + 1) + ")");
        }
        Token after = peek();
        if (after.kind() == Kind.SYMBOL && Set.of("+", "-", "*", "/", "%", "||", "^").contains(after.text())) {
            throw unsupported(after, "arithmetic (" + after.text() + ") is not supported but for now() or a timestamp"
                    + " plus or minus an interval");
        }
        return literal;
    }

    /**
     * A literal as {@code column}'s type reads it: a number, a string (cast or not), {@code $n}, {@code true} or
     * {@code false} (refused), {@code now()} or a timestamp, each refused with what is not served: the grammar's
     * {@code value} rule, one alternative per form.
     */
    Literal literal(JournalColumn column) {
        Token t = peek();
        String sign = "";
        if (t.symbol("-") || t.symbol("+")) {
            next++;
            sign = t.text();
            if (peek().kind() != Kind.NUMBER) {
                throw unsupported(t, "unary " + t.text() + " applies to numbers only");
            }
            t = peek();
        }
        switch (t.kind()) {
            case NUMBER -> {
                return number(t, sign);
            }
            case STRING -> {
                next++;
                Literal s = new JournalSelect.Text(t.text());
                if (peek().symbol("::")) {
                    next++;
                    Token type = peek();
                    s = cast(t, typeName(), type);
                }
                return shifted(s, t, column);
            }
            case PARAM -> {
                return parameter(t);
            }
            case WORD -> {
                return wordLiteral(t, column);
            }
            case QUOTED -> throw unsupported(t, "comparing two columns is not supported; compare a column with a literal");
            default -> {
                if (t.symbol("(")) {
                    throw unsupported(t, "a parenthesized value or a subquery is not supported; write a literal");
                }
                throw syntax(t, "expected a literal, found " + describe(t));
            }
        }
    }

    /** A number, negated after a unary minus, cast to an integer or numeric type at most. */
    private Literal number(Token t, String sign) {
        next++;
        BigDecimal n = new BigDecimal(t.text());
        Literal number = new JournalSelect.Number(sign.equals("-") ? n.negate() : n);
        if (peek().symbol("::")) {
            next++;
            Token type = peek();
            String cast = typeName();
            if (!Set.of("int2", "int4", "int8", "numeric").contains(cast)) {
                throw unsupported(type, "a number cast to " + cast + " is not supported");
            }
        }
        return number;
    }

    /** {@code $n}, numbered from 1, its cast (if any) read and left to the column's type. */
    private Literal parameter(Token t) {
        next++;
        int index;
        try {
            index = Integer.parseInt(t.text());
        } catch (NumberFormatException e) {
            throw syntax(t, "parameter $" + Quoted.of(t.text()) + " is out of range");
        }
        if (index < 1) {
            throw syntax(t, "parameters are numbered from $1");
        }
        if (peek().symbol("::")) {
            next++;
            typeName();
        }
        return new JournalSelect.Parameter(index);
    }

    /**
     * A literal starting with a word: {@code now()}, {@code current_timestamp}, or a typed timestamp or date string;
     * every other word (an interval alone, NULL, a boolean, a function, a column) refused with why.
     */
    private Literal wordLiteral(Token t, JournalColumn column) {
        if (t.is("now") || t.is("current_timestamp")) {
            next++;
            if (t.is("now")) {
                expect("(");
                expect(")");
            }
            return shifted(new JournalSelect.Now(0), t, column);
        }
        if (t.is("timestamptz") || t.is("timestamp") || t.is("date")) {
            next++;
            String type = t.text();
            if (t.is("timestamp") && peek().is("with")) {
                next++;
                expectWord("time");
                expectWord("zone");
                type = "timestamptz";
            }
            Token s = peek();
            if (s.kind() != Kind.STRING) {
                if (s.symbol("(")) {
                    throw unsupported(t, "function " + Quoted.of(t.text()) + "() is not supported");
                }
                throw syntax(s, "expected a string after " + type.toUpperCase(Locale.ROOT));
            }
            next++;
            return shifted(cast(s, type, t), s, column);
        }
        if (t.is("interval")) {
            throw unsupported(t, "an interval alone is not a value of any column; add it to or subtract it"
                    + " from now(), as in now() - interval '1 hour'");
        }
        if (t.is("null")) {
            throw unsupported(t, "a comparison with NULL is never true; use IS NULL or IS NOT NULL");
        }
        if (t.is("true") || t.is("false")) {
            throw unsupported(t, "no column of the journal views is boolean");
        }
        if (next + 1 < tokens.size() && tokens.get(next + 1).symbol("(")) {
            throw unsupported(t, "function " + Quoted.of(t.text()) + "() is not supported; now() is");
        }
        if (view.column(t.text()).isPresent()) {
            throw unsupported(t, "comparing two columns is not supported; compare a column with a literal");
        }
        throw syntax(t, "expected a literal, found " + describe(t));
    }

    /** A string literal cast to {@code type}, checked to read as it. */
    Literal cast(Token string, String type, Token at) {
        String s = string.text();
        return switch (type) {
            case "text", "varchar" -> new JournalSelect.Text(s);
            case "uuid" -> {
                if (JournalSelect.parseUuid(s).isEmpty()) {
                    throw invalid(string, "'" + shorten(s) + "' is not a UUID");
                }
                yield new JournalSelect.Text(s.strip());
            }
            case "int2", "int4", "int8", "numeric" -> {
                try {
                    yield new JournalSelect.Number(new BigDecimal(s.strip()));
                } catch (NumberFormatException e) {
                    throw invalid(string, "'" + shorten(s) + "' is not a number");
                }
            }
            case "timestamptz", "timestamp", "date" -> new JournalSelect.Timestamp(JournalSelect.parseTimestamp(s)
                    .orElseThrow(() -> invalid(string, "'" + shorten(s) + "' is not a timestamp such as"
                            + " '2025-01-31 09:15:00+00' or '2025-01-31T09:15:00Z'")));
            case "interval" -> throw unsupported(at, "an interval alone is not a value of any column; add it to or"
                    + " subtract it from now(), as in now() - interval '1 hour'");
            default -> throw unsupported(at, "a cast to " + Quoted.of(type) + " is not supported");
        };
    }

    /** A type name after {@code ::} (or a typed literal's), as one of the names {@link #cast} knows. */
    String typeName() {
        Token t = peek();
        if (t.kind() != Kind.WORD && t.kind() != Kind.QUOTED) {
            throw syntax(t, "expected a type name after ::, found " + describe(t));
        }
        next++;
        String name = t.text();
        if (name.equals("timestamp") && peek().is("with")) {
            next++;
            expectWord("time");
            expectWord("zone");
            return "timestamptz";
        }
        if (name.equals("character") && peek().is("varying")) {
            next++;
            return "varchar";
        }
        if (name.equals("double") && peek().is("precision")) {
            throw unsupported(t, "a cast to double precision is not supported");
        }
        return switch (name) {
            case "smallint" -> "int2";
            case "integer", "int" -> "int4";
            case "bigint" -> "int8";
            case "decimal" -> "numeric";
            default -> name;
        };
    }

    /** {@code value} followed by {@code + interval '...'} or {@code - interval '...'} terms. */
    Literal shifted(Literal value, Token at, JournalColumn column) {
        long micros = 0;
        boolean any = false;
        while (peek().symbol("+") || peek().symbol("-")) {
            Token sign = peek();
            Token after = tokens.get(next + 1);
            Duration d;
            if (after.is("interval") && tokens.get(next + 2).kind() == Kind.STRING) {
                next += 2;
                d = interval(peek());
                next++;
            } else if (after.kind() == Kind.STRING && tokens.get(next + 2).symbol("::")
                    && tokens.get(next + 3).is("interval")) {
                next++;
                d = interval(peek());
                next += 3;
            } else {
                return value; // arithmetic of another kind: refused by the caller
            }
            try {
                long m = Math.addExact(Math.multiplyExact(d.getSeconds(), 1_000_000L), d.getNano() / 1_000);
                micros = Math.addExact(micros, sign.text().equals("-") ? -m : m);
            } catch (ArithmeticException e) {
                throw outOfRange(at, "the intervals added come to more than an interval holds");
            }
            any = true;
        }
        if (!any) {
            return value;
        }
        return switch (value) {
            case JournalSelect.Now now -> {
                long offset;
                try {
                    offset = Math.addExact(now.offsetMicros(), micros);
                } catch (ArithmeticException e) {
                    throw outOfRange(at, "the intervals added come to more than an interval holds");
                }
                inRange(at, plusMicros(Instant.now(), offset));
                yield new JournalSelect.Now(offset);
            }
            case JournalSelect.Timestamp ts -> new JournalSelect.Timestamp(inRange(at, plusMicros(ts.value(), micros)));
            case JournalSelect.Text text -> {
                Instant base = JournalSelect.parseTimestamp(text.value()).orElseThrow(() -> invalid(at, "'"
                        + shorten(text.value()) + "' is not a timestamp, so no interval can be added to it"));
                yield new JournalSelect.Timestamp(inRange(at, plusMicros(base, micros)));
            }
            default -> throw unsupported(at, "an interval is added to now() or a timestamp only");
        };
    }

    /** The first and last instants a PostgreSQL timestamptz holds: 4714-11-24 BC and 294276-12-31 AD. */
    private static final Instant TIMESTAMPTZ_MIN = Instant.parse("-4713-11-24T00:00:00Z");
    private static final Instant TIMESTAMPTZ_MAX = Instant.parse("+294276-12-31T23:59:59.999999Z");

    /** {@code t}, when a timestamptz holds it; else {@link ErrorCode#DATETIME_OUT_OF_RANGE}, as PostgreSQL says. */
    private static Instant inRange(Token at, Instant t) {
        if (t.isBefore(TIMESTAMPTZ_MIN) || t.isAfter(TIMESTAMPTZ_MAX)) {
            throw outOfRange(at, "timestamp out of range");
        }
        return t;
    }

    private static ThresherException outOfRange(Token at, String what) {
        return new ThresherException(ErrorCode.DATETIME_OUT_OF_RANGE, what + " (position " + (at.at() + 1) + ")");
    }

    static Instant plusMicros(Instant t, long micros) {
        return t.plusSeconds(Math.floorDiv(micros, 1_000_000L)).plusNanos(Math.floorMod(micros, 1_000_000L) * 1000);
    }

    private static final Pattern INTERVAL_PART = Pattern.compile("\\s*([+-]?\\d+(?:\\.\\d+)?)\\s*([a-zA-Z]+)\\s*");
    private static final Pattern INTERVAL_CLOCK = Pattern.compile("\\s*([+-])?(\\d+):(\\d{2})(?::(\\d{2})(?:\\.(\\d{1,6}))?)?\\s*");
    private static final Map<String, Long> UNIT_MICROS = Map.ofEntries(
            Map.entry("us", 1L), Map.entry("usec", 1L), Map.entry("usecs", 1L), Map.entry("microsecond", 1L),
            Map.entry("microseconds", 1L),
            Map.entry("ms", 1_000L), Map.entry("msec", 1_000L), Map.entry("msecs", 1_000L),
            Map.entry("millisecond", 1_000L), Map.entry("milliseconds", 1_000L),
            Map.entry("s", 1_000_000L), Map.entry("sec", 1_000_000L), Map.entry("secs", 1_000_000L),
            Map.entry("second", 1_000_000L), Map.entry("seconds", 1_000_000L),
            Map.entry("m", 60_000_000L), Map.entry("min", 60_000_000L), Map.entry("mins", 60_000_000L),
            Map.entry("minute", 60_000_000L), Map.entry("minutes", 60_000_000L),
            Map.entry("h", 3_600_000_000L), Map.entry("hr", 3_600_000_000L), Map.entry("hrs", 3_600_000_000L),
            Map.entry("hour", 3_600_000_000L), Map.entry("hours", 3_600_000_000L),
            Map.entry("d", 86_400_000_000L), Map.entry("day", 86_400_000_000L), Map.entry("days", 86_400_000_000L),
            Map.entry("w", 604_800_000_000L), Map.entry("week", 604_800_000_000L), Map.entry("weeks", 604_800_000_000L));

    /**
     * An interval's text: parts such as {@code 1 hour}, {@code 90 minutes}, {@code 1 day 2 hours} (microseconds to
     * weeks, PostgreSQL's spellings and abbreviations), a clock {@code 01:30:00}, or ISO-8601 {@code PT1H30M}; months
     * and years, whose length varies, are refused.
     */
    Duration interval(Token t) {
        try {
            return intervalOf(t);
        } catch (ArithmeticException | NumberFormatException | java.time.DateTimeException e) {
            throw outOfRange(t, "interval '" + shorten(t.text().strip()) + "' is out of range");
        }
    }

    private Duration intervalOf(Token t) {
        String s = t.text().strip();
        if (s.isEmpty()) {
            throw invalid(t, "an empty interval");
        }
        if (s.startsWith("P") || s.startsWith("p") || s.startsWith("-P")) {
            try {
                return Duration.parse(s);
            } catch (java.time.format.DateTimeParseException e) {
                if (e.getCause() instanceof ArithmeticException overflow) {
                    throw overflow;
                }
                throw invalid(t, "interval '" + shorten(s) + "' is not ISO-8601 (PT1H30M); months and years are not served");
            }
        }
        Matcher clock = INTERVAL_CLOCK.matcher(s);
        if (clock.matches()) {
            long micros = Math.addExact(Math.multiplyExact(Long.parseLong(clock.group(2)), 3_600_000_000L),
                    Long.parseLong(clock.group(3)) * 60_000_000L
                    + (clock.group(4) == null ? 0 : Long.parseLong(clock.group(4)) * 1_000_000L)
                    + (clock.group(5) == null ? 0 : Long.parseLong((clock.group(5) + "00000").substring(0, 6))));
            return Duration.ofNanos(Math.multiplyExact("-".equals(clock.group(1)) ? -micros : micros, 1000L));
        }
        Matcher m = INTERVAL_PART.matcher(s);
        long micros = 0;
        int at = 0;
        while (at < s.length()) {
            if (!m.find(at) || m.start() != at) {
                throw invalid(t, "interval '" + shorten(s) + "' is not understood; write it as '1 hour', '90 minutes',"
                        + " '1 day 2 hours', '00:30:00' or 'PT1H'");
            }
            String unit = m.group(2).toLowerCase(Locale.ROOT);
            Long per = UNIT_MICROS.get(unit);
            if (per == null) {
                throw invalid(t, unit.startsWith("mon") || unit.startsWith("y") || unit.startsWith("dec")
                        || unit.startsWith("cent") || unit.startsWith("mil")
                        ? "interval unit '" + unit + "' has no fixed length; use days"
                        : "interval unit '" + unit + "' is not known");
            }
            // exact: a part past a bigint's microseconds is out of range, never wrapped round to another length
            micros = Math.addExact(micros, new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(per)).setScale(0,
                    java.math.RoundingMode.HALF_EVEN).longValueExact());
            at = m.end();
        }
        return Duration.ofNanos(Math.multiplyExact(micros, 1000L));
    }
}
