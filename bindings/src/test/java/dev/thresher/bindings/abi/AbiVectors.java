package dev.thresher.bindings.abi;

import dev.thresher.bindings.Partial;
import java.util.List;

/** The inputs behind each golden vector; the bytes live in {@code golden/abi/v1/<name>.hex}. */
final class AbiVectors {
    private AbiVectors() {
    }

    /** The worked example of docs/guest-abi.md: SELECT region, amount FROM orders, partition 7, 3 rows. */
    static byte[] rowBatchRevenue() {
        RowBatchBuilder b = new RowBatchBuilder(7,
                List.of(Column.of("region", ColumnType.TEXT), Column.of("amount", ColumnType.FLOAT64)), 16, 1 << 20);
        b.startRow();
        b.setText(0, "eu").setDouble(1, 1.5);
        b.startRow();
        b.setText(0, "us").setDouble(1, 2.0);
        b.startRow();
        b.setText(0, "eu").setDouble(1, -0.25);
        return b.finish();
    }

    static byte[] rowBatchEmpty() {
        return new RowBatchBuilder(0, List.of(Column.of("id", ColumnType.INT64)), 16, 1 << 20).finish();
    }

    /** Every type, nullable, with nulls in every column, a NaN payload, non-ASCII text, 9 rows (2 bitmap bytes). */
    static byte[] rowBatchAllTypesNullable() {
        RowBatchBuilder b = new RowBatchBuilder(123_456, List.of(
                Column.nullable("i", ColumnType.INT64),
                Column.nullable("f", ColumnType.FLOAT64),
                Column.nullable("t", ColumnType.TEXT),
                Column.nullable("b", ColumnType.BOOL),
                Column.nullable("raw", ColumnType.BYTES),
                Column.of("größe", ColumnType.INT64)), 16, 1 << 20);
        for (int r = 0; r < 9; r++) {
            b.startRow();
            if (r % 3 == 0) {
                b.setNull(0).setNull(1).setNull(2).setNull(3).setNull(4);
            } else {
                b.setLong(0, r == 1 ? Long.MIN_VALUE : -r)
                        .setDouble(1, r == 2 ? Double.longBitsToDouble(0x7ff8_0000_0000_0123L) : r / 4.0)
                        .setText(2, r == 4 ? "" : "é" + r)
                        .setBool(3, r % 2 == 0)
                        .setBytes(4, new byte[] {(byte) r, (byte) 0xff});
            }
            b.setLong(5, r);
        }
        return b.finish();
    }

    static List<Partial> partialsRevenue() {
        return List.of(
                new Partial("p7/eu/count", 2.0),
                new Partial("p7/eu/sum", 1.25),
                new Partial("p7/us/count", 1.0),
                new Partial("p7/us/sum", 2.0));
    }

    static List<Partial> partialsOddValues() {
        return List.of(
                new Partial("", -0.0),
                new Partial("ключ", Double.longBitsToDouble(0x7ff8_0000_0000_0123L)),
                new Partial("inf", Double.POSITIVE_INFINITY),
                new Partial("min", Double.MIN_VALUE));
    }
}
