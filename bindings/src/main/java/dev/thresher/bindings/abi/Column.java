package dev.thresher.bindings.abi;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * One column of a row batch, in the selector's column order.
 *
 * @param name the column name; at most 65535 UTF-8 bytes (the wire carries a u16 length)
 * @param type the column type
 * @param nullable whether the batch carries a null bitmap for this column
 */
public record Column(String name, ColumnType type, boolean nullable) {
    /** The most UTF-8 bytes a column name may have on the wire. */
    public static final int MAX_NAME_BYTES = 0xFFFF;

    public Column {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("column name is empty");
        }
        if (Utf8.encode(name, "column name").length > MAX_NAME_BYTES) {
            throw new IllegalArgumentException("column name longer than " + MAX_NAME_BYTES + " UTF-8 bytes");
        }
    }

    public static Column of(String name, ColumnType type) {
        return new Column(name, type, false);
    }

    public static Column nullable(String name, ColumnType type) {
        return new Column(name, type, true);
    }

    byte[] nameUtf8() {
        return name.getBytes(StandardCharsets.UTF_8);
    }
}
