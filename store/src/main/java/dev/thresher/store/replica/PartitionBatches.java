package dev.thresher.store.replica;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.replica.BatchCache.Built;
import dev.thresher.store.replica.ColumnVector.BoolVector;
import dev.thresher.store.replica.ColumnVector.BytesVector;
import dev.thresher.store.replica.ColumnVector.DoubleVector;
import dev.thresher.store.replica.ColumnVector.LongVector;
import dev.thresher.store.shard.PgType;
import java.util.ArrayList;
import java.util.List;

/**
 * How a {@link PartitionRows} becomes row batches: the selector's columns picked, the rows the filter accepts written
 * as one batch ({@link PartitionRows#batch}) or cut into pages ({@link PartitionRows#pages}). Reads only; the caller
 * holds the partition's read lock.
 */
final class PartitionBatches {
    private PartitionBatches() {}

    /** The pages of one selector at one version: each finished batch and its rows. */
    record Paged(long version, int partitionId, String selectorSql, int maxRows, int maxBytes,
                         List<byte[]> pages, int[] rows, long heapBytes) {}

    /** The pages of {@link PartitionRows#pages}, built from the rows as they are at {@code version}. */
    static Paged buildPages(PartitionRows rows, long version, int partitionId, Selector selector, RowFilter filter,
                            int maxRows, int maxBytes) {
        Selected sel = select(rows, selector);
        ColumnVector[] selected = sel.vectors();
        List<Column> batchColumns = sel.columns();
        boolean[] variable = new boolean[selected.length];
        for (int j = 0; j < selected.length; j++) {
            variable[j] = selected[j].type == PgType.TEXT || selected[j].type == PgType.BYTEA;
        }
        List<byte[]> pages = new ArrayList<>();
        List<Integer> rowCounts = new ArrayList<>();
        long heap = 0;
        RowBatchBuilder batch = new RowBatchBuilder(partitionId, batchColumns, maxRows, maxBytes);
        for (int r = 0; r < rows.rowCount(); r++) {
            if (filter != null && !filter.accepts(rows, r)) {
                continue;
            }
            long varBytes = 0;
            for (int j = 0; j < selected.length; j++) {
                if (variable[j] && !selected[j].isNull(r)) {
                    varBytes += ((BytesVector) selected[j]).values[r].length;
                }
            }
            if (batch.rowCount() > 0 && !batch.fitsRow(varBytes)) {
                byte[] done = batch.finish();
                pages.add(done);
                rowCounts.add(batch.rowCount());
                heap += ColumnVector.arrayHeap(done.length);
                batch = new RowBatchBuilder(partitionId, batchColumns, maxRows, maxBytes);
            }
            batch.startRow();
            for (int j = 0; j < selected.length; j++) {
                write(batch, j, selected[j], r);
            }
        }
        byte[] done = batch.finish();
        pages.add(done);
        rowCounts.add(batch.rowCount());
        heap += ColumnVector.arrayHeap(done.length);
        return new Paged(version, partitionId, selector.sql(), maxRows, maxBytes, List.copyOf(pages),
                rowCounts.stream().mapToInt(Integer::intValue).toArray(), heap);
    }

    /** The selector's columns: their vectors and their batch columns, in the selector's order. */
    private record Selected(ColumnVector[] vectors, List<Column> columns) {}

    private static Selected select(PartitionRows rows, Selector selector) {
        List<String> names = selector.columns();
        ColumnVector[] selected = new ColumnVector[names.size()];
        List<Column> batchColumns = new ArrayList<>(names.size());
        for (int j = 0; j < selected.length; j++) {
            Integer c = rows.columnIndex(names.get(j));
            if (c == null) {
                throw new ThresherException(ErrorCode.INVALID_SELECTOR, "selector does not match the shard schema: column \""
                        + names.get(j) + "\" does not exist in " + selector.table());
            }
            ColumnVector v = rows.vector(c);
            if (!v.carried()) {
                throw new ThresherException(ErrorCode.INVALID_SELECTOR, "column '" + names.get(j) + "' of "
                        + selector.table() + " has type OID " + v.column.typeOid() + ", which a row batch cannot carry");
            }
            selected[j] = v;
            batchColumns.add(new Column(names.get(j), v.type.batchType(), !v.column.notNull()));
        }
        return new Selected(selected, batchColumns);
    }

    /** The batch of {@link PartitionRows#batch}, built from the rows as they are. */
    static Built build(PartitionRows rows, int partitionId, Selector selector, RowFilter filter, int maxRows,
                       int maxBytes) {
        Selected sel = select(rows, selector);
        ColumnVector[] selected = sel.vectors();
        List<Column> batchColumns = sel.columns();
        RowBatchBuilder batch = new RowBatchBuilder(partitionId, batchColumns, maxRows, maxBytes);
        int rowCount = 0;
        for (int r = 0; r < rows.rowCount(); r++) {
            if (filter != null && !filter.accepts(rows, r)) {
                continue;
            }
            batch.startRow();
            rowCount++;
            for (int j = 0; j < selected.length; j++) {
                write(batch, j, selected[j], r);
            }
        }
        return Built.of(batch.finish(), rowCount);
    }

    private static void write(RowBatchBuilder batch, int j, ColumnVector v, int r) {
        if (v.isNull(r)) {
            batch.setNull(j);
            return;
        }
        switch (v.type) {
            case INT2, INT4, INT8 -> batch.setLong(j, ((LongVector) v).values[r]);
            case FLOAT4, FLOAT8, NUMERIC -> batch.setDouble(j, ((DoubleVector) v).values[r]);
            case BOOL -> batch.setBool(j, ((BoolVector) v).get(r));
            case BYTEA -> batch.setBytes(j, ((BytesVector) v).values[r]);
            case TEXT -> {
                byte[] utf8 = ((BytesVector) v).values[r];
                try {
                    batch.setTextUtf8(j, utf8, 0, utf8.length);
                } catch (IllegalArgumentException e) {
                    throw new ThresherException(ErrorCode.STORE_UNAVAILABLE,
                            "column " + (j + 1) + " holds text that is not UTF-8", e);
                }
            }
        }
    }
}
