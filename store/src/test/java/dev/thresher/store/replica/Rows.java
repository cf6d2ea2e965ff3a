package dev.thresher.store.replica;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.RowBatch;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/** Helpers of the replica tests: tuples from strings, batches as comparable multisets of rows. */
final class Rows {
    /** Stands for {@link Tuple#UNCHANGED} in {@link #tuple}. */
    static final String UNCHANGED = "\u0000unchanged";

    private Rows() {}

    /** A tuple of text forms; null is SQL NULL, {@link #UNCHANGED} an unchanged TOASTed value. */
    static Tuple tuple(String... values) {
        byte[][] v = new byte[values.length][];
        for (int i = 0; i < values.length; i++) {
            v[i] = values[i] == null ? null
                    : UNCHANGED.equals(values[i]) ? Tuple.UNCHANGED : values[i].getBytes(StandardCharsets.UTF_8);
        }
        return new Tuple(v);
    }

    /** The batch's rows, each value as a comparable string (doubles by their bits), sorted. */
    static List<String> content(byte[] batchBytes) {
        RowBatch batch = RowBatch.decode(batchBytes);
        List<String> rows = new ArrayList<>(batch.rowCount());
        for (int r = 0; r < batch.rowCount(); r++) {
            List<String> row = new ArrayList<>();
            for (int c = 0; c < batch.columns().size(); c++) {
                Object v = batch.value(c, r);
                row.add(switch (v) {
                    case null -> "NULL";
                    case Double d -> "d:" + Long.toHexString(Double.doubleToRawLongBits(d)) + "(" + d + ")";
                    case byte[] b -> "x:" + HexFormat.of().formatHex(b);
                    default -> v.getClass().getSimpleName().charAt(0) + ":" + v;
                });
            }
            rows.add(String.join(" | ", row));
        }
        rows.sort(null);
        return rows;
    }

    /** The rows of a whole-table batch of the given columns. */
    static List<String> content(PartitionRows rows, String selectorSql) {
        Selector selector = Selector.parse(selectorSql);
        RowFilter filter = selector.where().map(w -> RowFilter.compile(w, rows.columns()).orElseThrow()).orElse(null);
        return content(rows.batch(1, selector, filter, 1 << 20, 64 << 20).bytes());
    }

    /** A row as {@link #content} shows a row of longs, texts and such (for building expectations). */
    static String row(Object... values) {
        return String.join(" | ", Arrays.stream(values).map(v -> switch (v) {
            case null -> "NULL";
            case Double d -> "d:" + Long.toHexString(Double.doubleToRawLongBits(d)) + "(" + d + ")";
            case byte[] b -> "x:" + HexFormat.of().formatHex(b);
            case Integer i -> "L:" + i;
            default -> v.getClass().getSimpleName().charAt(0) + ":" + v;
        }).toList());
    }
}
