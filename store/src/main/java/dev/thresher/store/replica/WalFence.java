package dev.thresher.store.replica;

import dev.thresher.limits.Deadline;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The shard database's WAL position a read must wait for: one tiny statement, shared by every read that asked for a
 * position no older than the statement. A read asks with the moment its shard run started; a position taken by a
 * statement sent after that moment covers everything committed before it, so all the reads of one run, and of runs
 * started before the statement was sent, share one statement.
 *
 * <p>A read waits for the newest statement out, up to its own bound: its answer when it was sent after the read
 * started; otherwise the read then sends the next statement, which every read waiting meanwhile shares. A statement
 * that has not answered by the read's bound is not waited for longer: the read sends its own on another of the
 * fence's connections ({@value #CONNECTIONS} at most), so a connection that stopped answering holds no read behind
 * it; with every connection out, the read goes through SQL.
 *
 * <p>Thread-safe.
 */
final class WalFence implements AutoCloseable {
    /**
     * One position, when the statement that read it was sent, and the fingerprint of the replicated tables'
     * columns then ({@link #FINGERPRINT}; {@code oids} names the tables it covers).
     */
    record Round(long sentNanos, long position, String oids, String fingerprint) {
        /** Whether it was sent at or after {@code freshAsOfNanos}: its position covers everything committed before. */
        boolean covers(long freshAsOfNanos) {
            return sentNanos - freshAsOfNanos >= 0;
        }
    }

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
            + "|| '/' || coalesce((SELECT string_agg(t.relid::oid::text || ':' || (SELECT c.relfilenode FROM pg_class c "
            + "WHERE c.oid = t.relid), ',' ORDER BY t.relid::oid) FROM pg_partition_tree(r.oid::regclass) t), '')), ';' "
            + "ORDER BY r.oid), '') "
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

    /** How long past the deadline a wait for the server's answer may go before the connection is given up. */
    static final int NETWORK_GRACE_MS = 1_000;

    /** Statements in flight at once, each on a connection of its own. */
    static final int CONNECTIONS = 3;

    /** A statement sent and not answered yet: {@code sentNanos} is taken before it is sent. */
    record Pending(long sentNanos, java.util.concurrent.CompletableFuture<Round> answer) {}

    private final String jdbcUrl;
    private final Properties properties;
    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled whenever a statement answers or fails: a connection is free again. */
    private final Condition answered = lock.newCondition();
    private final ArrayDeque<Connection> idle = new ArrayDeque<>(); // under lock
    private int taken; // connections out with a statement, under lock
    private Pending newest; // the latest statement sent while it is out, under lock
    private volatile Round last;
    private boolean closed; // under lock

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
     * {@code waitUntil}: past it, this caller sends a statement of its own if a connection is free, and goes through
     * SQL if none is. A statement this caller sends itself is bounded by {@code deadline}.
     *
     * @throws ReplicaUnavailable when none could be read in time (the read goes through SQL)
     */
    Round position(long freshAsOfNanos, Deadline waitUntil, Deadline deadline, String oids) {
        Deadline bound = waitUntil.earlier(deadline);
        Pending waitFor = null;
        Pending waited = null;
        while (true) {
            Round r = last;
            if (r != null && r.covers(freshAsOfNanos)) {
                return r;
            }
            if (waitFor != null) {
                r = await(waitFor, bound);
                if (r != null && r.covers(freshAsOfNanos)) {
                    return r;
                }
                // sent before this read started (the next statement, sent now, covers every read waiting for it), or
                // failed, or did not answer in time: then a statement of this caller's own, if a connection is free
                waited = waitFor;
                waitFor = null;
            }
            Pending mine = null;
            Connection connection = null;
            lock.lock();
            try {
                while (true) {
                    if (closed) {
                        throw new ReplicaUnavailable("the replica is closed");
                    }
                    r = last;
                    if (r != null && r.covers(freshAsOfNanos)) {
                        return r;
                    }
                    Pending out = newest;
                    if (out != null && out != waited && !bound.passed()) {
                        waitFor = out;
                        break;
                    }
                    if (taken < CONNECTIONS) {
                        connection = idle.poll();
                        mine = takeOut(System.nanoTime());
                        break;
                    }
                    long left = bound.remainingNanos();
                    if (left <= 0) {
                        throw new ReplicaUnavailable(deadline.passed()
                                ? "the deadline passed waiting for the shard database's WAL position"
                                : "other reads' statements for the shard database's WAL position did not answer in time");
                    }
                    answered.awaitNanos(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ReplicaUnavailable("interrupted waiting for the shard database's WAL position");
            } finally {
                lock.unlock();
            }
            if (mine != null) {
                return send(mine, connection, deadline, oids);
            }
        }
    }

    /** The answer of another caller's statement, or null when it failed or did not answer by {@code bound}. */
    private static Round await(Pending out, Deadline bound) {
        try {
            return out.answer.get(Math.max(0, bound.remainingNanos()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ReplicaUnavailable("interrupted waiting for the shard database's WAL position");
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            return null;
        }
    }

    private Round send(Pending mine, Connection connection, Deadline deadline, String oids) {
        Round r = null;
        ReplicaUnavailable failure = null;
        try {
            long remainingMs = deadline.remainingMillis();
            if (remainingMs <= 0) {
                throw new ReplicaUnavailable("the deadline passed before the shard database's WAL position was read");
            }
            long seconds = Math.max(1, (remainingMs + 999) / 1000); // as pgjdbc counts its timeouts
            if (connection == null || connection.isClosed()) {
                // the login too is bounded by the deadline (whole seconds, as pgjdbc counts them): a server that
                // accepts the connection and then answers nothing (frozen) holds no read past it
                Properties login = new Properties();
                login.putAll(properties);
                login.setProperty("loginTimeout", Long.toString(Math.min(5, seconds)));
                connection = DriverManager.getConnection(jdbcUrl, login);
            }
            // and so is every wait for the server's answer, beyond the statement's own timeout
            connection.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, remainingMs + NETWORK_GRACE_MS));
            try (java.sql.PreparedStatement ps = connection.prepareStatement(POSITION)) {
                ps.setQueryTimeout((int) seconds);
                ps.setString(1, oids);
                try (java.sql.ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    r = new Round(mine.sentNanos, Lsn.parse(rs.getString(1)), oids, rs.getString(2));
                }
            }
            return r;
        } catch (ReplicaUnavailable e) {
            failure = e;
            throw e;
        } catch (SQLException | RuntimeException e) {
            failure = new ReplicaUnavailable("cannot read the shard database's WAL position: " + e.getMessage());
            throw failure;
        } finally {
            if (!settle(mine, r, failure, failure == null ? connection : null)) {
                close(connection);
            }
        }
    }

    /** Under the lock: a connection's place taken by a statement sent (or held, for tests) at {@code sentNanos}. */
    private Pending takeOut(long sentNanos) {
        taken++;
        newest = new Pending(sentNanos, new java.util.concurrent.CompletableFuture<>());
        return newest;
    }

    /**
     * A statement answered ({@code r}) or failed: its place is free again, its connection kept for the next when
     * {@code reusable} is given and the fence is open, its answer stands unless a newer one does, and every read
     * waiting hears of it.
     *
     * @return whether {@code reusable} was kept (else the caller closes it)
     */
    private boolean settle(Pending p, Round r, Throwable failure, Connection reusable) {
        boolean kept = false;
        lock.lock();
        try {
            taken--;
            if (newest == p) {
                newest = null;
            }
            Round before = last;
            if (r != null && (before == null || r.sentNanos - before.sentNanos > 0)) {
                last = r;
            }
            if (reusable != null && !closed) {
                idle.push(reusable);
                kept = true;
            }
            answered.signalAll();
        } finally {
            lock.unlock();
        }
        if (r != null) {
            p.answer.complete(r);
        } else {
            p.answer.completeExceptionally(failure);
        }
        return kept;
    }

    /**
     * For tests: a statement out as if sent at {@code sentNanos}, holding a connection's place until the returned
     * future is completed (its answer) or failed.
     */
    java.util.concurrent.CompletableFuture<Round> holdInFlight(long sentNanos) {
        Pending held;
        lock.lock();
        try {
            held = takeOut(sentNanos);
        } finally {
            lock.unlock();
        }
        java.util.concurrent.CompletableFuture<Round> control = new java.util.concurrent.CompletableFuture<>();
        control.whenComplete((r, e) -> settle(held, r, e, null));
        return control;
    }

    private static void close(Connection connection) {
        try {
            if (connection != null) {
                connection.close();
            }
        } catch (SQLException ignored) {
            // already gone
        }
    }

    @Override
    public void close() {
        java.util.List<Connection> open;
        lock.lock();
        try {
            closed = true;
            open = new java.util.ArrayList<>(idle);
            idle.clear();
            answered.signalAll();
        } finally {
            lock.unlock();
        }
        open.forEach(WalFence::close);
    }
}
