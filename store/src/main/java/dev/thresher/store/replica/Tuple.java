package dev.thresher.store.replica;

import java.util.Objects;

/**
 * One row as logical replication ({@code pgoutput}) or a snapshot {@code COPY} carries it: per column its
 * text form (the type's output function, UTF-8), {@code null} for SQL NULL, or {@link #UNCHANGED} for a
 * TOASTed value an update left alone (the row keeps the value it had).
 *
 * @param values one entry per column of the relation, in the relation's column order
 */
public record Tuple(byte[][] values) {
    /** The marker for an unchanged TOASTed value; compared by identity. */
    public static final byte[] UNCHANGED = new byte[0];

    public Tuple {
        Objects.requireNonNull(values, "values");
    }

    public int size() {
        return values.length;
    }

    /** The column's text form, or null for SQL NULL; {@link #UNCHANGED} for an unchanged TOASTed value. */
    public byte[] value(int column) {
        return values[column];
    }

    public boolean isNull(int column) {
        return values[column] == null;
    }

    public boolean isUnchanged(int column) {
        return values[column] == UNCHANGED;
    }
}
