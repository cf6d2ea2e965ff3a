package dev.thresher.store.replica;

import dev.thresher.limits.Deadline;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The shard database's WAL position a read must wait for: one tiny statement on a connection of its own, shared by every read that asked
 * for a position no older than the statement. A read asks with the moment its shard run started; a
 * position taken after that moment covers everything committed before it, so all the reads of one run,
 * and of runs started before the statement was sent, share one statement.
 *
 * <p>Thread-safe; at most one statement in flight.
 */
final class WalFence implements AutoCloseable {
    /**
     * One position, when the statement that read it was sent, and the fingerprint of the replicated tables'
     * columns then ({@link #FINGERPRINT}; {@code oids} names the tables it covers).
     */
    record Round(long sentNanos, long position, String oids, String fingerprint) {}

    /**
     * The columns of the given tables and the storage of each of their partitions as one digest: a column added,
     * dropped, renamed or retyped changes it, and so does a rewrite or a truncate of a partition (neither is
     * streamed as row changes: a partition's own {@code TRUNCATE} is not published through its root). Parameters:
     * the tables' oids as {@code {1,2}}. One digest per table, {@code oid=md5;...} in oid order, so the digest of
     * some of the tables is a part of the whole.
     */
    static final String FINGERPRINT = "SELECT coalesce(string_agg(r.oid::text || '=' || md5(coalesce((SELECT "
            + "string_agg(a.attnum || ':' || a.attname || ':' || a.atttypid || ':' || a.atttypmod || ':' || a.attisdropped "
            + "|| ':' || a.attnotnull, ',' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = r.oid AND a.attnum > 0), '') "
            + "|| '/' || coalesce((SELECT string_agg(c.oid::text || ':' || c.relfilenode, ',' ORDER BY c.oid) "
            + "FROM pg_partition_tree(r.oid::regclass) t JOIN pg_class c ON c.oid = t.relid), '')), ';' ORDER BY r.oid), '') "
            + "FROM unnest(?::oid[]) r(oid)";

    /**
     * The WAL position a read waits for ({@link ReplicationSource#currentPosition}'s: the insert position, or,
     * when WAL is inserted but not yet flushed — asynchronous commits, visible before they are durable, while the
     * walsender only sends flushed WAL — the position of a logical message written with {@code flush => true},
     * which flushes everything before it), and the fingerprint, in one statement.
     */
    private static final String POSITION = "WITH p AS MATERIALIZED (SELECT pg_current_wal_insert_lsn() AS insert_lsn) "
            + "SELECT (CASE WHEN insert_lsn > pg_current_wal_flush_lsn() THEN pg_logical_emit_message(false, '"
            + ReplicationSource.FENCE_PREFIX + "', ''::text, true) ELSE insert_lsn END)::text, (" + FINGERPRINT + ") FROM p";

    private final String jdbcUrl;
    private final Properties properties;
    /** Held while a statement is in flight; package-private for the test that holds it. */
    final ReentrantLock lock = new ReentrantLock();
    private volatile Round last;
    private Connection connection; // under lock
    private volatile boolean closed;

    WalFence(String jdbcUrl, String user, String password) {
        this.jdbcUrl = jdbcUrl;
        this.properties = new Properties();
        properties.setProperty("user", user);
        if (password != null) {
            properties.setProperty("password", password);
        }
        properties.setProperty("ApplicationName", "thresher-replica-fence");
        properties.setProperty("connectTimeout", "5");
        // The statement is the same every time but for the tables' oids: one server-side statement from its first use,
        // and its generic plan kept. Left to itself PostgreSQL plans it anew on every execution (a custom plan for the
        // array looks cheaper than the generic one), and planning the catalog joins costs more than running them.
        properties.setProperty("prepareThreshold", "1");
        properties.setProperty("options", "-c plan_cache_mode=force_generic_plan");
    }

    /**
     * A WAL position at least as late as the shard database's insert position at {@code freshAsOfNanos}, with
     * the fingerprint of the tables {@code oids} ({@code {1,2}}) read by the same statement.
     *
     * @throws ReplicaUnavailable when none could be read before {@code deadline} (the read goes through SQL)
     */
    Round position(long freshAsOfNanos, Deadline deadline, String oids) {
        return position(freshAsOfNanos, deadline, deadline, oids);
    }

    /**
     * As {@link #position(long, Deadline, String)}, waiting for another caller's statement in flight only until
     * {@code waitUntil}: a statement that is slow to answer holds every read of the shard behind it, and a read that
     * cannot have its position in time is better served through SQL than kept waiting to its deadline. A statement
     * this caller sends itself is bounded by {@code deadline}.
     *
     * @throws ReplicaUnavailable when none could be read in time (the read goes through SQL)
     */
    Round position(long freshAsOfNanos, Deadline waitUntil, Deadline deadline, String oids) {
        Round r = last;
        if (r != null && r.sentNanos - freshAsOfNanos >= 0) {
            return r;
        }
        try {
            if (!lock.tryLock(Math.max(0, waitUntil.earlier(deadline).remainingNanos()), TimeUnit.NANOSECONDS)) {
                throw new ReplicaUnavailable(deadline.passed()
                        ? "the deadline passed waiting for the shard database's WAL position"
                        : "another read's statement for the shard database's WAL position did not answer in time");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ReplicaUnavailable("interrupted waiting for the shard database's WAL position");
        }
        try {
            r = last;
            if (r != null && r.sentNanos - freshAsOfNanos >= 0) {
                return r; // read by another while this one waited for the lock
            }
            if (closed) {
                throw new ReplicaUnavailable("the replica is closed");
            }
            long remainingMs = deadline.remainingMillis();
            if (remainingMs <= 0) {
                throw new ReplicaUnavailable("the deadline passed before the shard database's WAL position was read");
            }
            long sent = System.nanoTime();
            try {
                if (connection == null || connection.isClosed()) {
                    connection = DriverManager.getConnection(jdbcUrl, properties);
                }
                try (java.sql.PreparedStatement ps = connection.prepareStatement(POSITION)) {
                    ps.setQueryTimeout((int) Math.max(1, (remainingMs + 999) / 1000));
                    ps.setString(1, oids);
                    try (java.sql.ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        r = new Round(sent, Lsn.parse(rs.getString(1)), oids, rs.getString(2));
                    }
                }
                last = r;
                return r;
            } catch (SQLException | RuntimeException e) {
                closeConnection();
                throw new ReplicaUnavailable("cannot read the shard database's WAL position: " + e.getMessage());
            }
        } finally {
            lock.unlock();
        }
    }

    private void closeConnection() {
        try {
            if (connection != null) {
                connection.close();
            }
        } catch (SQLException ignored) {
            // already gone
        }
        connection = null;
    }

    @Override
    public void close() {
        closed = true;
        lock.lock();
        try {
            closeConnection();
        } finally {
            lock.unlock();
        }
    }
}
