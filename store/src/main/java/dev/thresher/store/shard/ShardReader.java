package dev.thresher.store.shard;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.store.shard.BinaryCopyParser.ShapeChanged;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyOut;

/**
 * Reads one partition's rows from the node's shard database straight into the guest batch
 * encoding. The selector's filter is kept; the partition is the slot range on the
 * {@value #SLOT_COLUMN} column, which every distributed table carries (indexed).
 *
 * <p>Two paths, one result: {@link Mode#JDBC} runs the {@link #sql(Selector) SELECT} as a pgjdbc
 * prepared statement and copies each {@code ResultSet} value into the batch (text as the driver's own
 * UTF-8 bytes); {@link Mode#COPY} streams {@code COPY (SELECT ...) TO STDOUT (FORMAT binary)} and parses
 * it into the batch. Both produce the same batch, byte for byte, and the same errors (one known
 * exception: a {@code numeric} beyond the range of a double is infinite over JDBC and refused,
 * {@code INVALID_SELECTOR}, by PostgreSQL's {@code numeric::float8} over COPY). {@link #DEFAULT_MODE}
 * is the one that measured faster ({@code ShardReadBench}; figures in {@code docs/benchmarks.md}).
 *
 * <p>Thread-safe; one reader serves every partition of a node.
 */
public final class ShardReader {
    /** The column holding each row's slot, written by whoever routes rows in. */
    public static final String SLOT_COLUMN = "thresher_slot";

    /** How a reader gets the rows out of PostgreSQL. */
    public enum Mode {
        /**
         * {@code COPY (SELECT ...) TO STDOUT (FORMAT binary)} through pgjdbc's {@code CopyManager}, parsed
         * straight into the batch. Column types are learned once per selector (a {@code LIMIT 0} run of
         * the {@link #sql(Selector) SELECT}) and kept, at most {@value ShardReader#SHAPES_MAX} selectors,
         * each for at most {@value ShardReader#SHAPE_TTL_MS} ms.
         */
        COPY,
        /**
         * The {@link #sql(Selector) SELECT} as a prepared statement (pgjdbc prepares it on the server
         * after a few runs, and then takes numbers in binary), each value copied out of the
         * {@code ResultSet}; bounded by {@code setQueryTimeout}, whole seconds rounded up from the deadline.
         */
        JDBC
    }

    /**
     * The path a reader built without one takes: the faster as measured by {@code ShardReadBench} (a
     * 3,125-row partition of {@code (text, double precision)}: JDBC about 10% faster at the median, since
     * the COPY's statement-timeout transaction costs two more round trips than it saves decoding).
     */
    public static final Mode DEFAULT_MODE = Mode.JDBC;

    /** Selectors whose column types a COPY reader keeps. */
    static final int SHAPES_MAX = 256;
    /** How long a COPY reader trusts the column types it learned for a selector. */
    static final long SHAPE_TTL_MS = 10_000;
    /** How much longer than the deadline a COPY waits on the socket before it gives the connection up. */
    static final int NETWORK_GRACE_MS = 1_000;
    private static final Executor DIRECT = Runnable::run;

    private final DataSource db;
    private final Mode mode;
    private final Map<String, CopyPlan> plans = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, CopyPlan> eldest) {
            return size() > SHAPES_MAX;
        }
    });

    /** A reader on the {@link #DEFAULT_MODE default} path. */
    public ShardReader(DataSource db) {
        this(db, DEFAULT_MODE);
    }

    public ShardReader(DataSource db, Mode mode) {
        this.db = Objects.requireNonNull(db, "db");
        this.mode = Objects.requireNonNull(mode, "mode");
    }

    public Mode mode() {
        return mode;
    }

    /**
     * The batch of one partition.
     *
     * @param deadline the call's deadline; the query is bounded by it
     * @throws ThresherException {@link ErrorCode#BATCH_TOO_MANY_ROWS} past {@code maxRows} (the query
     *     reads one row more, so exactly {@code maxRows} rows is a batch and one more is this error, never
     *     a truncated batch), {@link ErrorCode#BATCH_TOO_LARGE} past {@code maxBytes},
     *     {@link ErrorCode#INVALID_SELECTOR} for a column type the batch cannot carry or a selector that
     *     does not match the shard schema (no such column or table), {@link ErrorCode#DEADLINE_EXCEEDED}
     *     when the deadline passes before or during the read, {@link ErrorCode#STORE_UNAVAILABLE} for
     *     anything else the shard database does wrong
     */
    public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
        String sql = sql(selector);
        long started = System.nanoTime();
        long remainingMs = deadline.remainingMillis();
        if (remainingMs <= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before reading partition " + partition.id());
        }
        try (Connection c = db.getConnection()) {
            return mode == Mode.COPY
                    ? readCopy(c, sql, partition, selector, maxRows, maxBytes, deadline, started)
                    : readJdbc(c, sql, partition, selector, maxRows, maxBytes, remainingMs, started);
        } catch (SQLException e) {
            throw mapped(e, partition, deadline);
        }
    }

    /**
     * One partition as a sequence of batches of at most {@code maxRows} rows and {@code maxBytes} bytes
     * each, read from one snapshot (guest ABI v2's paged input). Always takes the JDBC path. The caller
     * closes what it gets; it holds a pooled connection until then.
     *
     * @throws ThresherException as {@link #read}, except that no number of rows is too many
     */
    public ShardPages openPages(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
        if (deadline.remainingMillis() <= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before reading partition " + partition.id());
        }
        Connection c;
        try {
            c = db.getConnection();
        } catch (SQLException e) {
            throw mapped(e, partition, deadline);
        }
        return ShardPages.open(c, partition, selector, maxRows, maxBytes, deadline);
    }

    /** The SQL that reads one partition for a selector; parameters: slot low, slot high, row limit. */
    public static String sql(Selector selector) {
        StringBuilder sb = new StringBuilder("SELECT ");
        for (int i = 0; i < selector.columns().size(); i++) {
            sb.append(i == 0 ? "" : ", ").append(quote(selector.columns().get(i)));
        }
        sb.append(" FROM ").append(quote(selector.table()))
                .append(" WHERE ").append(SLOT_COLUMN).append(" BETWEEN ? AND ?");
        selector.where().ifPresent(w -> sb.append(" AND (").append(w).append(')'));
        return sb.append(" LIMIT ?").toString();
    }

    /**
     * One SELECT in a transaction that is rolled back, never committed: whatever the read did to the session
     * (a view whose columns call {@code set_config}, say) is undone with it, so nothing of one binding's read
     * survives on the pooled connection into another's.
     */
    private ShardBatch readJdbc(Connection c, String sql, Partition partition, Selector selector, int maxRows,
                                int maxBytes, long remainingMs, long started) throws SQLException {
        c.setAutoCommit(false);
        try {
            return readJdbcInTransaction(c, sql, partition, selector, maxRows, maxBytes, remainingMs, started);
        } finally {
            try {
                c.rollback();
                c.setAutoCommit(true);
            } catch (SQLException e) {
                close(c); // a connection that cannot be put back as it came is not put back
            }
        }
    }

    private ShardBatch readJdbcInTransaction(Connection c, String sql, Partition partition, Selector selector, int maxRows,
                                             int maxBytes, long remainingMs, long started) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setQueryTimeout(seconds(remainingMs));
            ps.setInt(1, partition.slotLo());
            ps.setInt(2, partition.slotHi());
            // One row past the bound tells "too many" from "exactly the bound".
            ps.setInt(3, maxRows + 1);
            try (ResultSet rs = ps.executeQuery()) {
                Shape shape = Shape.of(selector, rs.getMetaData());
                RowBatchBuilder batch = new RowBatchBuilder(partition.id(), shape.columns(), maxRows, maxBytes);
                int rows = 0;
                while (rs.next()) {
                    batch.startRow();
                    rows++;
                    for (int i = 0; i < shape.types().length; i++) {
                        copy(rs, i, shape.types()[i], batch);
                    }
                }
                byte[] bytes = batch.finish();
                return new ShardBatch(bytes, rows, System.nanoTime() - started);
            }
        }
    }

    private ShardBatch readCopy(Connection c, String sql, Partition partition, Selector selector, int maxRows,
                                int maxBytes, Deadline deadline, long started) throws SQLException {
        CopyPlan plan = plans.get(sql);
        if (plan == null || System.nanoTime() - plan.learnedAtNanos() > TimeUnit.MILLISECONDS.toNanos(SHAPE_TTL_MS)) {
            plan = learn(c, sql, partition, selector, deadline);
        }
        for (int attempt = 1; ; attempt++) {
            try {
                return copy(c, plan, partition, maxRows, maxBytes, deadline, started);
            } catch (ShapeChanged e) {
                plans.remove(sql, plan);
                if (attempt == 2) {
                    throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "partition " + partition.id()
                            + ": the binary COPY stream does not fit the column types just learned: " + e.getMessage());
                }
                plan = learn(c, sql, partition, selector, deadline);
            } catch (SQLException e) {
                if (!"57014".equals(e.getSQLState())) {
                    plans.remove(sql, plan); // perhaps the schema changed: learn again next time
                }
                throw e;
            }
        }
    }

    /**
     * Learns the selector's column types from a {@code LIMIT 0} run of its SELECT, and keeps them. A
     * plain statement, never server-prepared, so a table altered since cannot fail it with "cached plan
     * must not change result type".
     */
    private CopyPlan learn(Connection c, String sql, Partition partition, Selector selector, Deadline deadline)
            throws SQLException {
        try (Statement s = c.createStatement()) {
            s.setQueryTimeout(seconds(remaining(deadline, partition)));
            try (ResultSet rs = s.executeQuery(selectHead(selector, null) + partition.slotLo() + " AND "
                    + partition.slotHi() + selectTail(selector) + "0")) {
                CopyPlan plan = CopyPlan.of(selector, Shape.of(selector, rs.getMetaData()), System.nanoTime());
                plans.put(sql, plan);
                return plan;
            }
        }
    }

    /** {@code SELECT <columns> FROM <table> WHERE thresher_slot BETWEEN }, numeric columns cast to float8 when typed. */
    private static String selectHead(Selector selector, PgType[] types) {
        StringBuilder head = new StringBuilder("SELECT ");
        for (int i = 0; i < selector.columns().size(); i++) {
            head.append(i == 0 ? "" : ", ").append(quote(selector.columns().get(i)));
            if (types != null && types[i] == PgType.NUMERIC) {
                head.append("::float8");
            }
        }
        return head.append(" FROM ").append(quote(selector.table()))
                .append(" WHERE ").append(SLOT_COLUMN).append(" BETWEEN ").toString();
    }

    /** {@code [ AND (<filter>)] LIMIT }. */
    private static String selectTail(Selector selector) {
        return selector.where().map(w -> " AND (" + w + ")").orElse("") + " LIMIT ";
    }

    /**
     * One COPY, in a transaction of its own whose {@code SET LOCAL statement_timeout} is the time left:
     * the server ends the COPY at the deadline, and the setting ends with the transaction. The socket
     * waits at most that long plus {@value #NETWORK_GRACE_MS} ms, so an unreachable server cannot hang
     * the read either. On every way out the connection goes back to the pool as it came (auto-commit,
     * no transaction, no COPY in flight, the network timeout it had), or is closed.
     */
    private ShardBatch copy(Connection c, CopyPlan plan, Partition partition, int maxRows, int maxBytes,
                            Deadline deadline, long started) throws SQLException {
        long remainingMs = remaining(deadline, partition);
        Shape shape = plan.shape();
        RowBatchBuilder batch = new RowBatchBuilder(partition.id(), shape.columns(), maxRows, maxBytes);
        BinaryCopyParser parser = new BinaryCopyParser(shape.types(), shape.nullable(), batch);
        String sql = plan.sql(partition.slotLo(), partition.slotHi(), maxRows + 1);
        int networkTimeout = c.getNetworkTimeout();
        CopyOut out = null;
        boolean committed = false;
        c.setNetworkTimeout(DIRECT, (int) Math.min(Integer.MAX_VALUE, remainingMs + NETWORK_GRACE_MS));
        try {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("SET LOCAL statement_timeout = " + Math.min(Integer.MAX_VALUE, remainingMs));
            }
            out = c.unwrap(PGConnection.class).getCopyAPI().copyOut(sql);
            try {
                for (byte[] chunk = out.readFromCopy(); chunk != null; chunk = out.readFromCopy()) {
                    parser.accept(chunk);
                }
            } catch (RuntimeException e) {
                // Refused here (too many rows, too large, malformed, types changed) with rows still coming.
                abandon(c, out, e);
                throw e;
            }
            parser.finish();
            c.rollback(); // read only, and whatever the read did to the session is undone (see readJdbc)
            committed = true;
        } finally {
            restore(c, out, committed, networkTimeout);
        }
        return new ShardBatch(batch.finish(), parser.rows(), System.nanoTime() - started);
    }

    /**
     * Stops a COPY we no longer want and reads the rest of it, so the connection is back in step with
     * the server. pgjdbc's {@code cancelCopy} would not do for a COPY out: it sends the cancel and gives
     * the connection back with the rest of the stream unread. Past the row bound only the trailer is
     * left, so that is just read; otherwise the server is asked to cancel first. Either way the wait is
     * bounded by the statement timeout and the socket's.
     */
    private static void abandon(Connection c, CopyOut out, RuntimeException cause) {
        if (!out.isActive()) {
            return;
        }
        try {
            boolean atTheEnd = cause instanceof ThresherException te && te.code() == ErrorCode.BATCH_TOO_MANY_ROWS;
            if (!atTheEnd) {
                c.unwrap(PGConnection.class).cancelQuery();
            }
            while (out.readFromCopy() != null) {
                // discard
            }
        } catch (SQLException e) {
            // The cancel's own error ("canceling statement due to user request"), or a broken connection:
            // restore() rolls back, or closes the connection when the COPY is still in flight.
            cause.addSuppressed(e);
        }
    }

    /** Puts the connection back as it came, or closes it when it cannot be trusted. */
    private static void restore(Connection c, CopyOut out, boolean committed, int networkTimeout) {
        if (out != null && out.isActive()) {
            close(c); // any further statement would wait on the COPY for good
            return;
        }
        try {
            if (!committed) {
                c.rollback();
            }
            c.setAutoCommit(true);
            c.setNetworkTimeout(DIRECT, networkTimeout);
        } catch (SQLException e) {
            close(c);
        }
    }

    /**
     * Closes the physical connection at once. The pool notices on its next use of the connection (its
     * return: an error of class 08) and drops it.
     */
    static void close(Connection c) {
        try {
            c.unwrap(Connection.class).abort(DIRECT);
        } catch (SQLException | RuntimeException e) {
            // already closed, or not ours to close: nothing more to do
        }
    }

    private static long remaining(Deadline deadline, Partition partition) {
        long ms = deadline.remainingMillis();
        if (ms <= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before reading partition " + partition.id());
        }
        return ms;
    }

    private static int seconds(long ms) {
        return (int) Math.min(Integer.MAX_VALUE, Math.max(1, (ms + 999) / 1000));
    }

    static ThresherException mapped(SQLException e, Partition partition, Deadline deadline) {
        if (deadline.passed() || "57014".equals(e.getSQLState())) {
            return new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                    "deadline passed while reading partition " + partition.id(), e);
        }
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        if (state.startsWith("42") && !"42501".equals(state)) {
            return new ThresherException(ErrorCode.INVALID_SELECTOR,
                    "selector does not match the shard schema: " + e.getMessage(), e);
        }
        if (state.startsWith("22") || state.startsWith("54") || state.startsWith("0A")) {
            // A data exception (division by zero, a cast of a row's value), a selector past PostgreSQL's limits, or a
            // feature it does not have: the selector fails on this partition's rows whenever it is read, so the call
            // fails for good rather than as "safe to retry".
            return new ThresherException(ErrorCode.INVALID_SELECTOR, "partition " + partition.id()
                    + ": the selector failed on the shard database (SQLSTATE " + state + "): " + e.getMessage(), e);
        }
        if ("25006".equals(state)) {
            // Shard sessions are read-only: the selector's table is a view (or has a rule) that writes.
            return new ThresherException(ErrorCode.INVALID_SELECTOR, "partition " + partition.id()
                    + ": the selector reads through something that writes, and shard reads are read-only: "
                    + e.getMessage(), e);
        }
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard database: " + e.getMessage(), e);
    }

    private static String quote(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    static void copy(ResultSet rs, int i, PgType type, RowBatchBuilder batch) throws SQLException {
        int col = i + 1;
        switch (type) {
            case INT2, INT4, INT8 -> {
                long v = rs.getLong(col);
                if (rs.wasNull()) {
                    batch.setNull(i);
                } else {
                    batch.setLong(i, v);
                }
            }
            case FLOAT4 -> {
                // getDouble would parse the float's shortest decimal text as a double (1.1f -> 1.1) while
                // the value is 1.100000023841858; and pgjdbc switches to binary after a few executions.
                float v = rs.getFloat(col);
                if (rs.wasNull()) {
                    batch.setNull(i);
                } else {
                    batch.setDouble(i, v);
                }
            }
            case FLOAT8, NUMERIC -> {
                double v = rs.getDouble(col);
                if (rs.wasNull()) {
                    batch.setNull(i);
                } else {
                    batch.setDouble(i, v);
                }
            }
            case TEXT -> {
                // Text arrives in text format, in the connection's encoding (pgjdbc's is UTF-8), and
                // getBytes hands over the driver's own array: no String, no re-encoding.
                byte[] v = rs.getBytes(col);
                if (v == null) {
                    batch.setNull(i);
                } else {
                    try {
                        batch.setTextUtf8(i, v, 0, v.length);
                    } catch (IllegalArgumentException e) {
                        throw new ThresherException(ErrorCode.STORE_UNAVAILABLE,
                                "column " + col + " holds text that is not UTF-8", e);
                    }
                }
            }
            case BOOL -> {
                boolean v = rs.getBoolean(col);
                if (rs.wasNull()) {
                    batch.setNull(i);
                } else {
                    batch.setBool(i, v);
                }
            }
            case BYTEA -> {
                byte[] v = rs.getBytes(col);
                if (v == null) {
                    batch.setNull(i);
                } else {
                    batch.setBytes(i, v);
                }
            }
        }
    }

    /** A selector's columns as the batch carries them, and each one's PostgreSQL type. */
    record Shape(List<Column> columns, PgType[] types, boolean[] nullable) {
        static Shape of(Selector selector, ResultSetMetaData md) throws SQLException {
            int n = md.getColumnCount();
            List<Column> columns = new ArrayList<>(n);
            PgType[] types = new PgType[n];
            boolean[] nullable = new boolean[n];
            for (int i = 1; i <= n; i++) {
                String typeName = md.getColumnTypeName(i);
                PgType type = PgType.ofName(typeName);
                if (type == null) {
                    throw new ThresherException(ErrorCode.INVALID_SELECTOR, "column '" + md.getColumnName(i) + "' of "
                            + selector.table() + " has type " + typeName + ", which a row batch cannot carry");
                }
                types[i - 1] = type;
                nullable[i - 1] = md.isNullable(i) != ResultSetMetaData.columnNoNulls;
                columns.add(new Column(selector.columns().get(i - 1), type.batchType, nullable[i - 1]));
            }
            return new Shape(List.copyOf(columns), types, nullable);
        }
    }

    /** What a COPY reader keeps per selector: its shape and its COPY statement around the bounds. */
    private record CopyPlan(Shape shape, String head, String tail, long learnedAtNanos) {
        static CopyPlan of(Selector selector, Shape shape, long learnedAtNanos) {
            return new CopyPlan(shape, "COPY (" + selectHead(selector, shape.types()), selectTail(selector), learnedAtNanos);
        }

        String sql(int slotLo, int slotHi, int limit) {
            return head + slotLo + " AND " + slotHi + tail + limit + ") TO STDOUT (FORMAT binary)";
        }
    }
}
