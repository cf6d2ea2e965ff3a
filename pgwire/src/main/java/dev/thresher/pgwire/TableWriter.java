package dev.thresher.pgwire;

import java.io.InputStream;
import java.util.List;
import java.util.Objects;
import java.util.function.IntConsumer;

/**
 * Writes rows into a tenant's distributed tables for {@code COPY ... FROM STDIN} and {@code INSERT} over
 * pgwire: each row routed by its key's slot to the shard database of that slot's partition. Implemented by
 * the node; its methods block and are called on pgwire's writer threads, never on an event loop.
 */
public interface TableWriter {

    /**
     * The options of one {@code COPY ... FROM STDIN}, resolved to PostgreSQL's defaults.
     *
     * @param columns the columns the rows hold, in order; empty for all of the table's
     * @param csv CSV format, else PostgreSQL's text format
     * @param header the first line is a header and is skipped (CSV)
     * @param delimiter the field separator
     * @param nullString the text of a NULL ({@code ""} unquoted in CSV, {@code \N} in text)
     */
    record CopySpec(String table, List<String> columns, boolean csv, boolean header, char delimiter, String nullString) {
        public CopySpec {
            Objects.requireNonNull(table, "table");
            columns = List.copyOf(columns);
            Objects.requireNonNull(nullString, "nullString");
        }
    }

    /**
     * Loads the rows of {@code data}, which ends where the client's data ends. All or nothing per shard: a
     * failure leaves nothing on any shard that had not committed, and says which had.
     *
     * @param ready called once the table and columns are checked, with the number of columns per row,
     *     before {@code data} is read; not called when the load fails before
     * @return the rows loaded
     * @throws dev.thresher.errors.ThresherException typed: a bad row names its line and column
     */
    long copyFrom(String tenant, String user, CopySpec spec, IntConsumer ready, InputStream data);

    /**
     * Runs an {@code INSERT INTO table [(columns)] VALUES (...), ...} of literal values.
     *
     * @return the rows inserted
     * @throws dev.thresher.errors.ThresherException typed, naming the row and column of a bad value
     */
    long insert(String tenant, String user, String sql);
}
