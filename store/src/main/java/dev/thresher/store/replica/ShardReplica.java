package dev.thresher.store.replica;

import dev.thresher.bindings.Selector;
import dev.thresher.limits.Deadline;
import dev.thresher.store.replica.PgOutput.Message;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.topology.Partition;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader replicas of one shard database on one node: every partition of the shard that the node leads or
 * stands by for, held in memory ({@link PartitionRows}) and kept current by one logical replication stream.
 *
 * <p><b>Building.</b> One thread per shard database. It puts the shard's replicated tables in the node's
 * publication ({@code thresher_<host>}, {@code publish_via_partition_root}), creates a temporary logical slot
 * ({@code thresher_<host>_<shard>}, {@code pgoutput}) that exports its snapshot, copies every partition under
 * that snapshot ({@code COPY (SELECT …) TO STDOUT}), then streams the slot from its consistent point, applying
 * each transaction's inserts, updates, deletes and truncates at its commit, in commit order, under a write lock
 * (a read never sees half a transaction). The slot is temporary: it goes with the stream's connection, so a
 * node that stops, crashes or is cut off retains no WAL (PostgreSQL ends a silent walsender after
 * {@code wal_sender_timeout}).
 *
 * <p><b>Reading.</b> {@link #read} first takes the shard database's WAL position at or after the shard run's
 * start ({@link WalFence}, one statement shared by concurrent reads), then waits, within
 * {@code limits.replicaCatchUpMs} and the deadline, until the stream has applied it: everything committed before
 * the run started is in the replica. Anything it cannot serve exactly — a partition not (yet) in memory, over the
 * budget, a table without a replica identity, a filter the replica cannot evaluate as PostgreSQL would, a
 * replica that does not catch up in time — returns null and the caller reads through SQL; a replica never serves
 * older data.
 *
 * <p><b>Rebuilding.</b> When the shard's partitions change (a split or a move changes their ranges or shard;
 * a lease takeover changes only the epoch, not the rows, and keeps the replica), when a table's columns change,
 * when a change does not match the replica (a row it should hold is missing) or when the stream fails, the
 * replica is dropped and built again from a new snapshot; meanwhile reads go through SQL.
 *
 * <p><b>Parts.</b> This class keeps the stream thread's life (build, stream, rebuild, close) and serves the reads and
 * the status. {@link ReplicaBuilder} loads a generation from the snapshot and adds or drops tables on the running
 * stream; {@link StreamApplier} applies the stream's transactions; {@link Generation} is one build (its partitions,
 * lock and applied position); {@link TableReplica} a table's columns as held, {@link HeldPartition} a partition's rows
 * and what of {@link ReplicaBudget} they hold.
 */
public final class ShardReplica implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ShardReplica.class);
    /** How often the stream thread compares the topology's partitions with the ones it holds. */
    private static final long WANT_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long RETRY_MIN_MS = 500;
    private static final long RETRY_MAX_MS = 30_000;
    /** A read of a column the replica does not hold: perhaps added since the copy, which the fence's fingerprint tells. */
    private static final String COLUMN_MISSING = "column not in memory";
    /** What a partition of a replica being copied from its snapshot shows. */
    private static final String BUILDING_REASON = "copying from a snapshot";

    /** Where a partition of the shard is served from. */
    public enum State {
        /** Copied and streamed: reads are served from memory. */
        MEMORY,
        /** Being copied (or waiting for the stream to start): reads go through SQL. */
        BUILDING,
        /** Read through SQL: see the reason. */
        SQL
    }

    /** One partition's replica as operators see it. */
    public record PartitionStatus(int partitionId, String table, int shardId, State state, long rows, long bytes,
                                  long appliedLsn, long lagBytes, String reason) {}

    /** How the reads this replica was asked for went: served from memory, or sent to SQL by reason. */
    public record Reads(long memory, Map<String, Long> sqlByReason) {}

    private final String hostId;
    private final int shardId;
    private final String jdbcUrl;
    private final String user;
    private final String password;
    private final Supplier<List<Partition>> partitionsOfShard;
    private final ReplicaBudget budget;
    private final long catchUpNanos;
    private final WalFence fence;
    private final Thread thread;
    private final ReplicaBuilder builder;
    private final LongAdder memoryReads = new LongAdder();
    private final Map<String, LongAdder> sqlReads = new ConcurrentHashMap<>();
    private volatile Generation current;
    private final java.util.concurrent.atomic.AtomicLong builds = new java.util.concurrent.atomic.AtomicLong();
    private volatile String stateReason = BUILDING_REASON;
    private volatile boolean closed;

    /**
     * Ordinary connections one replica may hold to its shard database at once, besides its replication connection:
     * the read fence's, and one for copies while it is built.
     */
    public static final int ORDINARY_CONNECTIONS = WalFence.CONNECTIONS + 1;

    private ShardReplica(String hostId, int shardId, String jdbcUrl, String user, String password,
                         Supplier<List<Partition>> partitionsOfShard, ReplicaBudget budget, long catchUpMs) {
        this.hostId = Objects.requireNonNull(hostId, "hostId");
        this.shardId = shardId;
        this.jdbcUrl = Objects.requireNonNull(jdbcUrl, "jdbcUrl");
        this.user = user;
        this.password = password;
        this.partitionsOfShard = Objects.requireNonNull(partitionsOfShard, "partitionsOfShard");
        this.budget = Objects.requireNonNull(budget, "budget");
        this.catchUpNanos = TimeUnit.MILLISECONDS.toNanos(catchUpMs);
        this.fence = new WalFence(jdbcUrl, user, password);
        this.builder = new ReplicaBuilder(hostId, shardId, jdbcUrl, user, password, budget, slotName(),
                publicationName(), () -> closed);
        this.thread = Thread.ofPlatform().daemon().name(hostId + "-replica-" + shardId).unstarted(this::run);
    }

    /**
     * Starts keeping the replicas of one shard database.
     *
     * @param partitionsOfShard the partitions of this shard in the node's current topology (read often; cheap)
     */
    public static ShardReplica start(String hostId, int shardId, String jdbcUrl, String user, String password,
                                     Supplier<List<Partition>> partitionsOfShard, ReplicaBudget budget, long catchUpMs) {
        ShardReplica r = new ShardReplica(hostId, shardId, jdbcUrl, user, password, partitionsOfShard, budget, catchUpMs);
        r.thread.start();
        return r;
    }

    public int shardId() {
        return shardId;
    }

    /** The slot this node streams the shard through. */
    public String slotName() {
        return name("thresher_" + hostId + "_" + shardId);
    }

    /** The publication naming the tables this node replicates from the shard. */
    public String publicationName() {
        return name("thresher_" + hostId);
    }

    /**
     * Reads the shard database's WAL position for reads as fresh as {@code freshAsOfNanos} and has the stream start
     * catching up to it, without waiting for that: reads that follow find the position read (or its statement in
     * flight) and the stream on its way. Blocks for the statement only; never fails (a read that follows says why).
     */
    public void prepare(long freshAsOfNanos, Deadline deadline) {
        Generation g = current;
        if (g == null || g.tables.isEmpty() || closed) {
            return;
        }
        try {
            WalFence.Round round = fence.position(freshAsOfNanos, deadline, g.oids);
            if (round.oids().equals(g.oids)) {
                g.want(round.position(), thread);
            }
        } catch (ReplicaUnavailable e) {
            // the read that follows goes through SQL, and counts why
        }
    }

    /**
     * The partition's batch from memory, at least as fresh as a query issued at {@code freshAsOfNanos}, or null
     * when it is to be read through SQL.
     *
     * @throws RuntimeException the {@code ThresherException} a SQL read of the same rows would throw
     *     ({@code BATCH_TOO_MANY_ROWS}, {@code BATCH_TOO_LARGE})
     */
    public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline,
                           long freshAsOfNanos) {
        long started = System.nanoTime();
        ShardBatch batch = serve(partition, selector, deadline, freshAsOfNanos,
                (held, filter) -> held.rows.batch(partition.id(), selector, filter, maxRows, maxBytes));
        // the time of the read is the wait for the WAL position too
        return batch == null ? null : new ShardBatch(batch.bytes(), batch.rowCount(), System.nanoTime() - started);
    }

    /**
     * The partition as batches of at most {@code maxRows} rows and {@code maxBytes} bytes (guest ABI v2's paged
     * input), from memory and as fresh as {@link #read}, or null when it is to be read through SQL.
     *
     * @throws RuntimeException the {@code ThresherException} a paged SQL read would throw ({@code BATCH_TOO_LARGE}
     *     for a row too large for a batch of its own)
     */
    public List<ShardBatch> pages(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline,
                                  long freshAsOfNanos) {
        return serve(partition, selector, deadline, freshAsOfNanos,
                (held, filter) -> held.rows.pages(partition.id(), selector, filter, maxRows, maxBytes));
    }

    /** What a read makes of a partition in memory, under the replica's read lock. */
    private interface Serving<T> {
        T from(HeldPartition held, RowFilter filter);
    }

    private <T> T serve(Partition partition, Selector selector, Deadline deadline, long freshAsOfNanos, Serving<T> serving) {
        long started = System.nanoTime();
        Generation g = current;
        HeldPartition held = g == null ? null : g.partitions.get(partition.id());
        String refused = refusal(g, held, partition, selector);
        if (refused != null && !refused.equals(COLUMN_MISSING)) {
            return sql(refused);
        }
        Optional<RowFilter> filter = refused == null ? held.table.filter(selector) : Optional.empty();
        if (filter == null) {
            return sql("filter not evaluable in memory");
        }
        long target;
        // The wait for the stream, and for another read's WAL-position statement in flight, is bounded by
        // limits.replicaCatchUpMs (past it the SQL read is the faster answer); a statement this read sends, by the deadline.
        Deadline window = deadline.earlier(new Deadline(started + catchUpNanos));
        try {
            WalFence.Round round = fence.position(freshAsOfNanos, window, deadline, g.oids);
            if (!round.oids().equals(g.oids)) {
                // read for another set of tables (one joined or left since): a statement of its own, sent now
                round = fence.position(System.nanoTime(), deadline, g.oids);
                if (!round.oids().equals(g.oids)) {
                    return sql("tables changing");
                }
            }
            if (!round.fingerprint().equals(g.fingerprint)) {
                // a column added, dropped, renamed or retyped since the copy: rows may differ with no change streamed
                g.rebuild = g.rebuild == null ? "the columns of a replicated table changed" : g.rebuild;
                LockSupport.unpark(thread);
                return sql("columns changed");
            }
            target = round.position();
        } catch (ReplicaUnavailable e) {
            return sql("no WAL position");
        }
        if (refused != null) {
            return sql(refused); // a column the replica does not hold, and the table's columns are as copied
        }
        if (!g.awaitApplied(target, window.atNanos(), thread)) {
            return sql(current == g ? "lagging" : "rebuilding");
        }
        g.lock.readLock().lock();
        try {
            if (current != g || held.evicted) {
                return sql("rebuilding");
            }
            T served = serving.from(held, filter.orElse(null));
            memoryReads.increment();
            return served;
        } finally {
            g.lock.readLock().unlock();
        }
    }

    private static String refusal(Generation g, HeldPartition held, Partition partition, Selector selector) {
        if (g == null) {
            return "not built";
        }
        if (held == null) {
            return "not in memory";
        }
        if (held.evicted) {
            return held.reason;
        }
        if (!held.partition.table().equals(partition.table()) || held.partition.slotLo() != partition.slotLo()
                || held.partition.slotHi() != partition.slotHi() || held.partition.shardId() != partition.shardId()
                || !held.partition.tenant().equals(partition.tenant())) {
            return "partition changed";
        }
        if (!selector.table().equals(partition.table())) {
            return "selector reads another table";
        }
        for (String column : selector.columns()) {
            if (held.table.column(column) < 0) {
                return COLUMN_MISSING;
            }
        }
        return null;
    }

    private <T> T sql(String reason) {
        sqlReads.computeIfAbsent(reason, r -> new LongAdder()).increment();
        return null;
    }

    /** How many times the replica was built from a snapshot since start (a table added to the stream is not one). */
    public long builds() {
        return builds.get();
    }

    /** Reads served from memory and sent to SQL, by reason, since start. */
    public Reads reads() {
        Map<String, Long> sql = new java.util.TreeMap<>();
        sqlReads.forEach((reason, n) -> sql.put(reason, n.sum()));
        return new Reads(memoryReads.sum(), sql);
    }

    /** Each partition of the shard in the node's topology and where it is served from. */
    public List<PartitionStatus> status() {
        Generation g = current;
        List<PartitionStatus> out = new ArrayList<>();
        for (Partition p : partitionsOfShard.get()) {
            HeldPartition h = g == null ? null : g.partitions.get(p.id());
            if (h == null) {
                boolean building = g == null && budget.enabled() && BUILDING_REASON.equals(stateReason);
                out.add(new PartitionStatus(p.id(), p.table(), shardId, building ? State.BUILDING : State.SQL, 0, 0, 0, 0,
                        g == null ? stateReason : "not in memory"));
                continue;
            }
            long applied = g.applied;
            long lag = Math.max(0, g.serverPosition - applied);
            if (h.evicted) {
                out.add(new PartitionStatus(p.id(), p.table(), shardId, State.SQL, 0, 0, applied, lag, h.reason));
            } else {
                g.lock.readLock().lock();
                try {
                    out.add(new PartitionStatus(p.id(), p.table(), shardId, g.streaming ? State.MEMORY : State.BUILDING,
                            h.rows.rowCount(), h.rows.bytes(), applied, lag, g.streaming ? "" : "copying"));
                } finally {
                    g.lock.readLock().unlock();
                }
            }
        }
        return out;
    }

    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        fence.close();
    }

    // ---------------------------------------------------------------- the stream thread

    private void run() {
        long retryMs = RETRY_MIN_MS;
        while (!closed) {
            List<Partition> wanted = wanted();
            if (!budget.enabled() || wanted.isEmpty()) {
                stateReason = budget.enabled() ? "no partitions" : "replicas disabled (limits.replicaMemoryBytes=0)";
                pause(TimeUnit.MILLISECONDS.toNanos(200));
                continue;
            }
            Generation g = null;
            long builtAt = System.nanoTime();
            stateReason = BUILDING_REASON;
            try (ReplicationSource source = ReplicationSource.connect(jdbcUrl, user, password, Duration.ofSeconds(10))) {
                builds.incrementAndGet();
                g = builder.build(source, wanted);
                current = g;
                stateReason = "";
                stream(source, g);
                retryMs = RETRY_MIN_MS;
            } catch (ReplicaBuilder.NotLogical e) {
                // a setting of the server, not a failure: said once, checked again now and then
                if (!e.getMessage().equals(stateReason)) {
                    log.warn("replica of shard {} on {}: {}", shardId, hostId, e.getMessage());
                }
                stateReason = e.getMessage();
                pause(TimeUnit.MINUTES.toNanos(1));
            } catch (Exception e) {
                if (closed) {
                    break;
                }
                stateReason = "replication failed: " + e.getMessage();
                log.warn("replica of shard {} on {}: {}; reads go through SQL, rebuilding in {} ms", shardId, hostId,
                        e.getMessage(), retryMs);
                if (System.nanoTime() - builtAt > TimeUnit.MINUTES.toNanos(1)) {
                    retryMs = RETRY_MIN_MS; // it had been healthy for a while: this is a new failure
                }
                current = null;
                release(g);
                g = null;
                pause(TimeUnit.MILLISECONDS.toNanos(retryMs));
                retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
            } finally {
                if (g != null) {
                    current = null;
                    release(g);
                }
            }
        }
        current = null;
    }

    private List<Partition> wanted() {
        List<Partition> all = new ArrayList<>(partitionsOfShard.get());
        all.sort(Comparator.comparingInt(Partition::id));
        return all;
    }

    private void pause(long nanos) {
        long until = System.nanoTime() + nanos;
        while (!closed && until - System.nanoTime() > 0) {
            LockSupport.parkNanos(Math.min(until - System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(50)));
        }
    }

    private void release(Generation g) {
        if (g == null) {
            return;
        }
        for (HeldPartition h : g.partitions.values()) {
            budget.release(h.accounted);
            h.accounted = 0;
        }
        g.wake();
    }

    /** The data a partition's replica holds: the same unless its table, range or shard changed (not its epoch). */
    private static String dataKey(Partition p) {
        return p.id() + "/" + p.tenant() + "/" + p.table() + "/" + p.slotLo() + "-" + p.slotHi() + "@" + p.shardId();
    }

    static List<String> dataKeys(List<Partition> partitions) {
        return partitions.stream().map(ShardReplica::dataKey).toList();
    }

    /** Streams until the partitions change, the replica must be rebuilt, or the replica is closed. */
    private void stream(ReplicationSource source, Generation g) throws SQLException {
        if (g.tables.isEmpty()) {
            while (!closed && dataKeys(wanted()).equals(g.dataKeys)) {
                pause(WANT_CHECK_NANOS);
            }
            return;
        }
        StreamApplier applier = new StreamApplier(g, budget);
        long lastWantCheck = System.nanoTime();
        long lastAsk = 0;
        while (!closed) {
            Message m = source.poll();
            if (m != null) {
                applier.accept(m);
                if (g.rebuild != null) {
                    log.info("replica of shard {} on {}: rebuilding ({})", shardId, hostId, g.rebuild);
                    return;
                }
                continue;
            }
            if (g.rebuild != null) {
                log.info("replica of shard {} on {}: rebuilding ({})", shardId, hostId, g.rebuild);
                return;
            }
            applier.catchUp(source);
            long now = System.nanoTime();
            boolean waited = g.wanted > g.applied;
            if (waited && now - lastAsk > TimeUnit.MICROSECONDS.toNanos(200)) {
                source.requestKeepalive();
                lastAsk = now;
            }
            if (now - lastWantCheck > WANT_CHECK_NANOS) {
                lastWantCheck = now;
                List<Partition> partitions = wanted();
                if (!dataKeys(partitions).equals(g.dataKeys)) {
                    String rebuild = builder.tryAdd(source, applier, g, partitions);
                    if (rebuild != null) {
                        log.info("replica of shard {} on {}: rebuilding ({})", shardId, hostId, rebuild);
                        return;
                    }
                }
            }
            LockSupport.parkNanos(waited ? TimeUnit.MICROSECONDS.toNanos(100) : TimeUnit.MILLISECONDS.toNanos(5));
        }
    }

    /** A slot or publication name: lower case letters, digits and underscores, at most 63 bytes. */
    static String name(String raw) {
        String s = raw.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
        return s.length() > 63 ? s.substring(0, 63) : s;
    }
}
