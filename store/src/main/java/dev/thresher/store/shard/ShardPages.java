package dev.thresher.store.shard;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Executor;

/**
 * One partition read as a sequence of batches (guest ABI v2's paged input): one SELECT in one read-only
 * transaction, so every batch comes from the same snapshot, fetched {@code maxRows} rows at a time
 * through a server-side portal (pgjdbc's fetch size), so that no more than about one batch of rows is
 * ever in memory. Each batch holds at most {@code maxRows} rows and {@code maxBytes} bytes: a row that
 * would not fit starts the next batch, and only a row too large for a batch of its own is
 * {@link ErrorCode#BATCH_TOO_LARGE}.
 *
 * <p>The first batch is always returned, even with no rows (the guest learns the partition and the
 * columns from it); {@link #next()} returns null after the last. Bounded by the deadline: checked before
 * each batch, the transaction's {@code statement_timeout} is the time left when it opened, and the
 * socket waits at most the time left (plus {@value ShardReader#NETWORK_GRACE_MS} ms) for each batch.
 * Holds one pooled connection from open to {@link #close()}; thread-safe (one thread reads; another may close).
 */
public final class ShardPages implements AutoCloseable {
    private static final Executor DIRECT = Runnable::run;

    private final Partition partition;
    private final Deadline deadline;
    private final int maxRows;
    private final int maxBytes;
    private final Connection connection;
    private final int networkTimeout;
    private PreparedStatement statement;
    private ResultSet rows;
    private ShardReader.Shape shape;
    /** The cursor stands on a row read but not yet put in a batch (it did not fit the last one). */
    private boolean pending;
    private boolean exhausted;
    private boolean closed;
    private int batches;
    private long rowsRead;

    private ShardPages(Partition partition, Deadline deadline, int maxRows, int maxBytes, Connection connection)
            throws SQLException {
        this.partition = partition;
        this.deadline = deadline;
        this.maxRows = maxRows;
        this.maxBytes = maxBytes;
        this.connection = connection;
        this.networkTimeout = connection.getNetworkTimeout();
    }

    /**
     * Opens the read: begins the transaction and runs the SELECT (its first rows arrive with it).
     *
     * @throws ThresherException as {@link ShardReader#read} maps the shard database's failures
     */
    static ShardPages open(Connection c, Partition partition, Selector selector, int maxRows, int maxBytes,
                           Deadline deadline) {
        ShardPages pages = null;
        try {
            long remainingMs = remaining(deadline, partition);
            pages = new ShardPages(partition, deadline, maxRows, maxBytes, c);
            c.setNetworkTimeout(DIRECT, networkMillis(remainingMs));
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("SET LOCAL statement_timeout = " + Math.min(Integer.MAX_VALUE, remainingMs));
            }
            pages.statement = c.prepareStatement(sql(selector));
            pages.statement.setFetchSize(maxRows);
            pages.statement.setInt(1, partition.slotLo());
            pages.statement.setInt(2, partition.slotHi());
            pages.rows = pages.statement.executeQuery();
            pages.shape = ShardReader.Shape.of(selector, pages.rows.getMetaData());
            return pages;
        } catch (SQLException | RuntimeException e) {
            if (pages != null) {
                pages.close();
            } else {
                ShardReader.close(c);
            }
            throw e instanceof SQLException sql ? ShardReader.mapped(sql, partition, deadline) : (RuntimeException) e;
        }
    }

    /** The partition's rows in slot range order of the index, without a row bound. */
    static String sql(Selector selector) {
        String bounded = ShardReader.sql(selector);
        return bounded.substring(0, bounded.length() - " LIMIT ?".length());
    }

    /**
     * The next batch, or null after the last one.
     *
     * @throws ThresherException DEADLINE_EXCEEDED, BATCH_TOO_LARGE (one row alone does not fit),
     *     STORE_UNAVAILABLE, INVALID_SELECTOR
     */
    public synchronized ShardBatch next() {
        if (closed) {
            throw new IllegalStateException("partition read closed");
        }
        if (exhausted && batches > 0) {
            return null;
        }
        long started = System.nanoTime();
        try {
            long remainingMs = remaining(deadline, partition);
            connection.setNetworkTimeout(DIRECT, networkMillis(remainingMs));
            RowBatchBuilder batch = new RowBatchBuilder(partition.id(), shape.columns(), maxRows, maxBytes);
            PgType[] types = shape.types();
            while (!exhausted) {
                if (!pending && !rows.next()) {
                    exhausted = true;
                    break;
                }
                long varBytes = 0;
                for (int i = 0; i < types.length; i++) {
                    if (types[i].batchType == ColumnType.TEXT || types[i].batchType == ColumnType.BYTES) {
                        byte[] v = rows.getBytes(i + 1);
                        varBytes += v == null ? 0 : v.length;
                    }
                }
                if (batch.rowCount() > 0 && !batch.fitsRow(varBytes)) {
                    pending = true; // the first row of the next batch
                    break;
                }
                pending = false;
                batch.startRow();
                for (int i = 0; i < types.length; i++) {
                    ShardReader.copy(rows, i, types[i], batch);
                }
            }
            batches++;
            rowsRead += batch.rowCount();
            return new ShardBatch(batch.finish(), batch.rowCount(), System.nanoTime() - started);
        } catch (SQLException e) {
            throw ShardReader.mapped(e, partition, deadline);
        }
    }

    /** Batches returned so far. */
    public int batches() {
        return batches;
    }

    /** Rows returned so far. */
    public long rowsRead() {
        return rowsRead;
    }

    /** Ends the read (rows not fetched are dropped) and gives the connection back as it came, or closes it. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (rows != null) {
                rows.close();
            }
            if (statement != null) {
                statement.close();
            }
            connection.rollback();
            connection.setAutoCommit(true);
            connection.setNetworkTimeout(DIRECT, networkTimeout);
            connection.close();
        } catch (SQLException | RuntimeException e) {
            ShardReader.close(connection);
        }
    }

    private static long remaining(Deadline deadline, Partition partition) {
        long ms = deadline.remainingMillis();
        if (ms <= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while reading partition " + partition.id());
        }
        return ms;
    }

    private static int networkMillis(long remainingMs) {
        return (int) Math.min(Integer.MAX_VALUE, remainingMs + ShardReader.NETWORK_GRACE_MS);
    }
}
