package dev.thresher.bindings;

import java.io.InputStream;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntConsumer;

/**
 * A tenant's distributed tables as the front doors reach them: created, listed, shown, altered through
 * migrations with per-shard status, dropped ({@code CREATE/ALTER/DROP TABLE} over pgwire, {@code /admin/tables}
 * over HTTP), and written ({@code COPY ... FROM STDIN} and {@code INSERT} over pgwire), each row routed by its
 * key's slot to the shard database of that slot's partition. Implemented by the node; every method blocks,
 * so front doors call it from worker threads, never from an event loop.
 */
public interface TableService {

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

    /** What one {@linkplain #load load} wrote: the rows, the rows each shard database committed, how long it took. */
    record Loaded(long rows, Map<Integer, Long> rowsByShard, long millis) {
        public Loaded {
            rowsByShard = Map.copyOf(rowsByShard);
        }
    }

    /**
     * Loads a CSV file (RFC 4180, UTF-8) as {@code thresher load} does: with {@code header} its first line names
     * the columns (any order, any subset), else the fields are the table's columns in order; each row to the shard
     * its key's slot names. A bad row loads nothing and names its line and column.
     *
     * @param csv the file's bytes, read to their end
     * @throws dev.thresher.errors.ThresherException typed
     */
    Loaded load(String tenant, String table, boolean header, InputStream csv);

    /**
     * One partition of a table as a leader's shard run reads it for a selector: its rows as batches in the guest
     * ABI's row format, or why they could not be read.
     *
     * @param failure what the read failed with (typed), or null
     */
    record PartitionBatches(int partition, int rows, List<byte[]> batches, dev.thresher.errors.ThresherException failure) {
        public PartitionBatches {
            batches = List.copyOf(batches);
        }
    }

    /**
     * Reads every partition of {@code table} with the selector's columns and filter, as a leader does (one read-only
     * snapshot per partition; one batch for guest ABI 1, paged batches for ABI 2): what {@code thresher component
     * test --table} runs a component over.
     *
     * @param selector the selector, its FROM naming any table ({@code table} is read)
     * @throws dev.thresher.errors.ThresherException typed: no such table, a selector that is not one, or rows over
     *     what one answer may carry
     */
    List<PartitionBatches> readBatches(String tenant, String table, String selector, int abiVersion);

    /**
     * Inserts the rows of an {@code INSERT ... VALUES} as the front door parsed it, through the loader (one load).
     *
     * @return the rows inserted
     * @throws dev.thresher.errors.ThresherException typed, naming the row and column of a bad value; a parameter not
     *     bound is refused
     */
    long insert(String tenant, String user, InsertCommand insert);

    /**
     * What a table is to be: the columns as {@code thresher table create} takes them
     * ({@code "name type [not null], ..."}), the key column, the number of partitions and the shard
     * databases to spread them over (empty: all).
     */
    record TableSpec(String name, String key, String columns, int partitions, List<Integer> shards) {
        public TableSpec {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(columns, "columns");
            shards = List.copyOf(shards);
        }
    }

    /** One partition as an operator sees it; {@code leader} is empty when no node leads it. */
    record PartitionInfo(int id, int slotLo, int slotHi, int shard, long epoch, String leader) {
    }

    /** One schema migration and what each shard database holding the table did with it. */
    record MigrationInfo(int version, String description, Map<Integer, String> states, Map<Integer, String> errors) {
        public MigrationInfo {
            states = Map.copyOf(states);
            errors = Map.copyOf(errors);
        }
    }

    /**
     * A table: its key, whether its partitions tile the slot space (the first gap or overlap otherwise),
     * its partitions and its migrations.
     */
    record TableInfo(String name, String keyColumn, String keyType, String tilingProblem, List<PartitionInfo> partitions,
                     List<MigrationInfo> migrations) {
        public TableInfo {
            partitions = List.copyOf(partitions);
            migrations = List.copyOf(migrations);
        }
    }

    /** A schema change: a column added ({@code "name type [not null]"}) or dropped (its name). */
    sealed interface Change {
        record AddColumn(String definition) implements Change {
        }

        record DropColumn(String column) implements Change {
        }
    }

    /** Creates a table on its shard databases and in the catalog (its migration 1). */
    TableInfo create(String tenant, TableSpec spec);

    List<TableInfo> list(String tenant);

    TableInfo show(String tenant, String table);

    /** Drops a table, refused while a binding reads it. */
    void drop(String tenant, String table);

    /** Records the change as the table's next migration and applies it on every shard holding the table. */
    TableInfo alter(String tenant, String table, Change change);

    /** Applies the table's pending and failed migrations again, in order, on each shard. */
    TableInfo migrate(String tenant, String table);

    /**
     * Runs a table command as the front door parsed it from {@code CREATE TABLE}, {@code DROP TABLE} or
     * {@code ALTER TABLE}; a {@code DROP TABLE IF EXISTS} of no table does nothing.
     *
     * @return the command tag ({@code CREATE TABLE}, {@code DROP TABLE}, {@code ALTER TABLE})
     */
    String execute(String tenant, String user, TableCommand command);
}
