package dev.thresher.server.admin;

import dev.thresher.errors.ErrorCode;
import dev.thresher.bindings.TableService.Loaded;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.LoadRecords.CsvReader;
import dev.thresher.server.admin.LoadRecords.Field;
import dev.thresher.server.admin.LoadRecords.Records;
import dev.thresher.server.admin.LoadRecords.TextReader;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

/**
 * Loads a CSV file into a table: every row routed by its key's slot to the shard database holding that
 * slot's partition, and written there with {@code COPY ... FROM STDIN (FORMAT csv)}, one transaction per
 * shard database. A bad row (wrong number of fields, a key that is not of the key's type, a value the
 * database refuses) stops the load and rolls every shard back: nothing is loaded, and the error names
 * the file's line and the column. Only when every row was accepted are the shards committed, one after
 * another; the summary says what each shard committed.
 */
public final class CsvLoader {
    private static final Pattern COPY_LINE = Pattern.compile("line (\\d+)(?:, column (\\w+))?");
    private static final int PROGRESS_EVERY = 100_000;

    private final TableAdmin admin;
    private final Progress progress;
    private final int maxRecordChars;

    /** Told every {@value #PROGRESS_EVERY} rows how many a load has routed, and how fast. */
    @FunctionalInterface
    public interface Progress {
        Progress NONE = (rows, rowsPerSecond) -> { };

        void routed(long rows, double rowsPerSecond);
    }

    /** A loader whose records hold at most the default {@code limits.batchMaxBytes} characters. */
    public CsvLoader(TableAdmin admin, Progress progress) {
        this(admin, progress, dev.thresher.limits.Limits.DEFAULTS.batchMaxBytes());
    }

    /**
     * @param maxRecordChars the most characters one record (a CSV record, a line of COPY's text) may hold: a node's
     *     {@code limits.batchMaxBytes}, as no call could read a larger row; past it a load is {@code PAYLOAD_TOO_LARGE}
     */
    public CsvLoader(TableAdmin admin, Progress progress, int maxRecordChars) {
        this.admin = admin;
        this.progress = progress;
        this.maxRecordChars = maxRecordChars;
    }

    /** A shard's open COPY: its connection, its stream, and the file line of each row sent to it. */
    private static final class ShardCopy {
        final int shardId;
        final Connection connection;
        final CopyIn copy;
        final StringBuilder buffer = new StringBuilder(1 << 16);
        int[] fileLines = new int[1024];
        long rows;

        ShardCopy(int shardId, Connection connection, CopyIn copy) {
            this.shardId = shardId;
            this.connection = connection;
            this.copy = copy;
        }

        void add(int fileLine) {
            if (rows == fileLines.length) {
                fileLines = java.util.Arrays.copyOf(fileLines, fileLines.length * 2);
            }
            fileLines[(int) rows++] = fileLine;
        }

        void flush() throws SQLException {
            if (buffer.length() > 0) {
                byte[] bytes = buffer.toString().getBytes(StandardCharsets.UTF_8);
                copy.writeToCopy(bytes, 0, bytes.length);
                buffer.setLength(0);
            }
        }
    }

    /**
     * Loads {@code csv} into {@code table}.
     *
     * @param header whether the first record names the columns (in any order; the others are NULL);
     *     without one the fields are the table's columns in order
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} for a bad row or header (line and column
     *     named), {@link ErrorCode#PARTITIONS_DO_NOT_TILE} when a key's slot is in no partition,
     *     {@link ErrorCode#STORE_UNAVAILABLE} when a shard database fails
     */
    public Loaded load(String tenant, String table, Reader csv, boolean header) throws IOException {
        Target target = target(tenant, table);
        CsvReader reader = new CsvReader(new BufferedReader(csv, 1 << 16), ',', "", maxRecordChars);
        List<String> columns = target.tableColumns();
        if (header) {
            List<Field> names = reader.next();
            if (names == null) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the file is empty; expected a header line");
            }
            columns = new ArrayList<>();
            for (Field f : names) {
                columns.add(target.column(f.text(), "line 1"));
            }
        }
        return load(target, columns, reader);
    }

    /**
     * Loads rows in {@code COPY}'s CSV or text format ({@code COPY ... FROM STDIN} over pgwire).
     *
     * @param columns the columns each row holds, in order; empty for all of the table's
     * @param skipHeader the first line is a header (CSV's HEADER) and is skipped
     * @param nullString the text of a NULL ({@code ""} unquoted in CSV, {@code \N} in text)
     * @param ready told the number of columns per row once the table and columns are checked, before
     *     {@code data} is read (a COPY's CopyInResponse)
     */
    public Loaded copy(String tenant, String table, List<String> columns, boolean csv, boolean skipHeader, char delimiter,
                       String nullString, java.util.function.IntConsumer ready, Reader data) throws IOException {
        Target target = target(tenant, table);
        List<String> loaded = columns(target, columns);
        ready.accept(loaded.size());
        Records reader = csv ? new CsvReader(new BufferedReader(data, 1 << 16), delimiter, nullString, maxRecordChars)
                : new TextReader(new BufferedReader(data, 1 << 16), delimiter, nullString, maxRecordChars);
        if (skipHeader) {
            reader.next();
        }
        return load(target, loaded, reader);
    }

    /** Loads rows given as fields ({@code INSERT ... VALUES} over pgwire); a record's line is its row number. */
    public Loaded insert(String tenant, String table, List<String> columns, List<List<Field>> rows) throws IOException {
        Target target = target(tenant, table);
        java.util.Iterator<List<Field>> it = rows.iterator();
        int[] row = {0};
        return load(target, columns(target, columns), new Records() {
            @Override
            public List<Field> next() {
                if (!it.hasNext()) {
                    return null;
                }
                row[0]++;
                return it.next();
            }

            @Override
            public int recordLine() {
                return row[0];
            }

            @Override
            public String unit() {
                return "row";
            }
        });
    }

    /** The columns of the table named (checked, lower-cased unless quoted), or all of them. */
    private static List<String> columns(Target target, List<String> named) {
        if (named.isEmpty()) {
            return target.tableColumns();
        }
        List<String> out = new ArrayList<>();
        for (String n : named) {
            String c = target.column(n, "the column list");
            if (out.contains(c)) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "column " + c + " is named twice");
            }
            out.add(c);
        }
        return out;
    }

    /** What a load writes into: the table's key, its partitions by slot, shard URLs and columns. */
    private record Target(String tenant, String table, String[] key, Partition[] bySlot, Map<Integer, String> urls,
                          List<String> tableColumns, long startedNanos) {
        String column(String name, String where) {
            String c = name.strip().toLowerCase(java.util.Locale.ROOT);
            if (!tableColumns.contains(c) && tableColumns.contains(name)) {
                c = name;
            }
            if (!tableColumns.contains(c)) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, where + ": column '" + name
                        + "' is not a column of " + table + " " + tableColumns);
            }
            return c;
        }
    }

    private Target target(String tenant, String table) {
        long started = System.nanoTime();
        String[] key = admin.key(tenant, table);
        List<Partition> partitions = admin.control().readTopology().partitionsOf(tenant, table);
        Partition[] bySlot = new Partition[Slots.COUNT];
        for (Partition p : partitions) {
            for (int s = p.slotLo(); s <= p.slotHi(); s++) {
                bySlot[s] = p;
            }
        }
        Map<Integer, String> urls = admin.shardUrls();
        return new Target(tenant, table, key, bySlot, urls, columnsOf(urls.get(partitions.get(0).shardId()), table),
                started);
    }

    private Loaded load(Target target, List<String> columns, Records reader) throws IOException {
        int keyIndex = columns.indexOf(target.key()[0]);
        if (keyIndex < 0) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the file has no key column " + target.key()[0]);
        }
        String copySql = "COPY " + target.table() + " (" + String.join(", ", columns) + ", " + ShardReader.SLOT_COLUMN
                + ") FROM STDIN (FORMAT csv)";
        Map<Integer, ShardCopy> copies = new TreeMap<>();
        long rows;
        try {
            rows = route(target, columns, keyIndex, reader, copies, copySql);
            for (ShardCopy copy : copies.values()) {
                write(copy, reader.unit());
                endCopy(copy, reader.unit());
            }
            checkNotMoved(target, copies);
        } catch (RuntimeException | IOException e) {
            rollbackAll(copies);
            throw e;
        }
        return new Loaded(rows, commitAll(copies), (System.nanoTime() - target.startedNanos()) / 1_000_000);
    }

    /**
     * Sends every record to the COPY of the shard its key's slot names (opened on its first row); a record that is
     * not a row of the table stops the load.
     *
     * @return the rows routed
     */
    private long route(Target target, List<String> columns, int keyIndex, Records reader, Map<Integer, ShardCopy> copies,
                       String copySql) throws IOException {
        String unit = reader.unit();
        long rows = 0;
        List<Field> record;
        while ((record = reader.next()) != null) {
            int line = reader.recordLine();
            if (record.size() == 1 && record.get(0).text().isEmpty() && !record.get(0).quoted()) {
                continue; // a blank line
            }
            if (record.size() != columns.size()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, unit + " " + line + ": expected "
                        + columns.size() + " fields " + columns + ", found " + record.size());
            }
            int slot = slotOf(record.get(keyIndex), target.key(), line, unit);
            Partition p = target.bySlot()[slot];
            if (p == null) {
                throw new ThresherException(ErrorCode.PARTITIONS_DO_NOT_TILE, unit + " " + line + ": the key's slot "
                        + slot + " is in no partition of " + target.table());
            }
            ShardCopy copy = copies.get(p.shardId());
            if (copy == null) {
                copy = open(p.shardId(), target.urls().get(p.shardId()), copySql);
                copies.put(p.shardId(), copy);
            }
            for (Field f : record) {
                f.appendCsv(copy.buffer);
                copy.buffer.append(',');
            }
            copy.buffer.append(slot).append('\n');
            copy.add(line);
            if (copy.buffer.length() > (1 << 16)) {
                write(copy, unit);
            }
            if (++rows % PROGRESS_EVERY == 0) {
                progress.routed(rows, rows / seconds(target.startedNanos()));
            }
        }
        return rows;
    }

    /**
     * Commits each shard's COPY, one after another; a commit that fails rolls the rest back and says what had
     * committed.
     *
     * @return the rows each shard committed
     */
    private static Map<Integer, Long> commitAll(Map<Integer, ShardCopy> copies) {
        Map<Integer, Long> byShard = new TreeMap<>();
        List<String> committed = new ArrayList<>();
        for (ShardCopy copy : copies.values()) {
            try {
                copy.connection.commit();
                byShard.put(copy.shardId, copy.rows);
                committed.add("shard " + copy.shardId + ": " + copy.rows + " rows");
            } catch (SQLException e) {
                rollbackAll(copies);
                throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard " + copy.shardId + " could not commit ("
                        + e.getMessage() + "); committed before it: " + (committed.isEmpty() ? "nothing" : committed)
                        + "; the other shards loaded nothing", e);
            } finally {
                close(copy);
            }
        }
        return byShard;
    }

    /**
     * The fence against partition moves: each shard's COPY holds its table's ROW EXCLUSIVE lock until commit, and a
     * move holds SHARE on its source table from its copy through its cutover; so once every COPY is done, the
     * partitions read now are those the rows will stay under. A partition that left the shard its rows were routed
     * to (its move's cutover came first) fails the load, nothing committed: loading again routes them anew.
     */
    private void checkNotMoved(Target target, Map<Integer, ShardCopy> copies) {
        Map<Integer, Integer> shardNow = new java.util.HashMap<>();
        admin.control().readTopology().partitionsOf(target.tenant(), target.table())
                .forEach(p -> shardNow.put(p.id(), p.shardId()));
        java.util.Set<Integer> seen = new java.util.HashSet<>();
        for (Partition p : target.bySlot()) {
            if (p == null || !seen.add(p.id()) || !copies.containsKey(p.shardId())) {
                continue;
            }
            Integer now = shardNow.get(p.id());
            if (now == null || now != p.shardId()) {
                throw new ThresherException(ErrorCode.TARGET_STALE, "partition " + p.id() + " of " + target.table()
                        + (now == null ? " was dropped" : " moved from shard " + p.shardId() + " to shard " + now)
                        + " during the load; nothing was loaded: load again");
            }
        }
    }

    private ShardCopy open(int shardId, String url, String copySql) {
        try {
            Connection c = admin.shardConnection(url);
            c.setAutoCommit(false);
            return new ShardCopy(shardId, c, c.unwrap(PGConnection.class).getCopyAPI().copyIn(copySql));
        } catch (SQLException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard " + shardId + ": " + e.getMessage(), e);
        }
    }

    private static void write(ShardCopy copy, String unit) {
        try {
            copy.flush();
        } catch (SQLException e) {
            throw refused(copy, e, unit);
        }
    }

    private static void endCopy(ShardCopy copy, String unit) {
        try {
            copy.copy.endCopy();
        } catch (SQLException e) {
            throw refused(copy, e, unit);
        }
    }

    /** A value the shard database refused, named by the file's line (COPY names the line of its own stream). */
    private static ThresherException refused(ShardCopy copy, SQLException e, String unit) {
        String message = e.getMessage() == null ? "" : e.getMessage();
        Matcher m = COPY_LINE.matcher(message);
        if (m.find()) {
            int streamLine = Integer.parseInt(m.group(1));
            int fileLine = streamLine >= 1 && streamLine <= copy.rows ? copy.fileLines[streamLine - 1] : -1;
            String first = message.lines().findFirst().orElse(message).replaceFirst("^ERROR: ", "");
            return new ThresherException(ErrorCode.INVALID_ARGUMENTS, unit + " " + fileLine
                    + (m.group(2) != null ? ", column " + m.group(2) : "") + ": " + first, e);
        }
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard " + copy.shardId + ": " + message, e);
    }

    private static void rollbackAll(Map<Integer, ShardCopy> copies) {
        for (ShardCopy copy : copies.values()) {
            try {
                if (copy.copy.isActive()) {
                    copy.copy.cancelCopy();
                }
            } catch (SQLException ignored) {
                // the rollback below, or closing the connection, ends it all the same
            }
            try {
                copy.connection.rollback();
            } catch (SQLException ignored) {
                // closing an uncommitted connection rolls it back
            }
            close(copy);
        }
    }

    private static void close(ShardCopy copy) {
        try {
            copy.connection.close();
        } catch (SQLException ignored) {
            // nothing more to do with it
        }
    }

    private static int slotOf(Field field, String[] key, int line, String unit) {
        String v = field.text();
        if (v.isEmpty() && !field.quoted()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, unit + " " + line + ", column " + key[0]
                    + ": the key is NULL; every row needs a key");
        }
        try {
            return switch (key[1]) {
                case "smallint", "integer", "bigint" -> Slots.ofLong(Long.parseLong(v.strip()));
                case "text" -> Slots.ofText(v);
                case "uuid" -> Slots.ofUuid(UUID.fromString(v.strip()));
                case "bytea" -> Slots.ofBytes(HexFormat.of().parseHex(v.strip().replaceFirst("^\\\\x", "")));
                default -> throw new IllegalArgumentException("key type " + key[1]);
            };
        } catch (IllegalArgumentException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, unit + " " + line + ", column " + key[0] + ": '" + v
                    + "' is not a " + key[1]);
        }
    }

    private List<String> columnsOf(String url, String table) {
        List<String> columns = new ArrayList<>();
        try (Connection c = admin.shardConnection(url); PreparedStatement ps = c.prepareStatement("""
                SELECT column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = ? AND column_name <> ?
                ORDER BY ordinal_position""")) {
            ps.setString(1, table);
            ps.setString(2, ShardReader.SLOT_COLUMN);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
        } catch (SQLException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard database: " + e.getMessage(), e);
        }
        if (columns.isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "table " + table
                    + " does not exist on its shard databases");
        }
        return columns;
    }

    private static double seconds(long startedNanos) {
        return Math.max(1e-3, (System.nanoTime() - startedNanos) / 1e9);
    }
}
