package dev.thresher.bindings;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An {@code INSERT INTO table [(columns)] VALUES (...), ...} as the front door parsed it, for
 * {@link TableService#insert}: the table, the columns named (empty: all of the table's, in order) and each row's
 * values. A value is a text (as COPY reads a field: the database parses it as the column's type), NULL, or, in a
 * prepared statement not bound yet, a parameter.
 */
public record InsertCommand(String table, List<String> columns, List<List<Value>> rows) {
    /** One value of a row. */
    public sealed interface Value {
        /** A literal's text: a string's content, a number or a boolean as written ({@code true}, {@code false}). */
        record Text(String text) implements Value {
            public Text {
                Objects.requireNonNull(text, "text");
            }
        }

        /** SQL NULL. */
        record Null() implements Value {
        }

        /** {@code $number}, 1-based: the value bound to it. */
        record Parameter(int number) implements Value {
        }

        Null NULL = new Null();
    }

    public InsertCommand {
        Objects.requireNonNull(table, "table");
        columns = List.copyOf(columns);
        List<List<Value>> copied = new ArrayList<>(rows.size());
        for (List<Value> row : rows) {
            copied.add(List.copyOf(row));
        }
        rows = List.copyOf(copied);
    }

    /** The highest parameter number a value names: the values a prepared INSERT is bound with. */
    public int parameterCount() {
        int n = 0;
        for (List<Value> row : rows) {
            for (Value v : row) {
                if (v instanceof Value.Parameter p) {
                    n = Math.max(n, p.number());
                }
            }
        }
        return n;
    }

    /**
     * This INSERT with each parameter replaced by the value bound to it ({@code values.get(number - 1)}; null for a
     * NULL).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} when fewer values are bound than a parameter needs
     */
    public InsertCommand bind(List<String> values) {
        List<List<Value>> bound = new ArrayList<>(rows.size());
        for (List<Value> row : rows) {
            List<Value> out = new ArrayList<>(row.size());
            for (Value v : row) {
                if (v instanceof Value.Parameter p) {
                    if (p.number() > values.size()) {
                        throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no parameter $" + p.number()
                                + ": " + values.size() + " bound");
                    }
                    String text = values.get(p.number() - 1);
                    out.add(text == null ? Value.NULL : new Value.Text(text));
                } else {
                    out.add(v);
                }
            }
            bound.add(out);
        }
        return new InsertCommand(table, columns, bound);
    }
}
