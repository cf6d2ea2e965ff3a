package dev.thresher.store.replica;

import dev.thresher.bindings.Selector;
import dev.thresher.limits.Deadline;
import dev.thresher.store.replica.PgOutput.Message;
import dev.thresher.store.shard.PgType;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;
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
        T from(Held held, RowFilter filter);
    }

    private <T> T serve(Partition partition, Selector selector, Deadline deadline, long freshAsOfNanos, Serving<T> serving) {
        long started = System.nanoTime();
        Generation g = current;
        Held held = g == null ? null : g.partitions.get(partition.id());
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

    private static String refusal(Generation g, Held held, Partition partition, Selector selector) {
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
            Held h = g == null ? null : g.partitions.get(p.id());
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
                g = build(source, wanted);
                current = g;
                stateReason = "";
                stream(source, g);
                retryMs = RETRY_MIN_MS;
            } catch (NotLogical e) {
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
        for (Held h : g.partitions.values()) {
            budget.release(h.accounted);
            h.accounted = 0;
        }
        g.wake();
    }

    /** The data a partition's replica holds: the same unless its table, range or shard changed (not its epoch). */
    private static String dataKey(Partition p) {
        return p.id() + "/" + p.tenant() + "/" + p.table() + "/" + p.slotLo() + "-" + p.slotHi() + "@" + p.shardId();
    }

    private static List<String> dataKeys(List<Partition> partitions) {
        return partitions.stream().map(ShardReplica::dataKey).toList();
    }

    private Generation build(ReplicationSource source, List<Partition> wanted) throws SQLException {
        builds.incrementAndGet();
        Generation g = new Generation(dataKeys(wanted));
        try (Connection c = DriverManager.getConnection(jdbcUrl, properties("thresher-replica-build"))) {
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW wal_level")) {
                rs.next();
                if (!"logical".equals(rs.getString(1))) {
                    throw new NotLogical("the shard database runs with wal_level=" + rs.getString(1)
                            + "; replicas need wal_level=logical (docs/deployment.md), so its partitions are read through SQL");
                }
            }
            Map<String, List<Partition>> byTable = new LinkedHashMap<>();
            for (Partition p : wanted) {
                byTable.computeIfAbsent(p.table(), t -> new ArrayList<>()).add(p);
            }
            List<String> published = new ArrayList<>();
            for (var e : byTable.entrySet()) {
                g.keysByTable.put(e.getKey(), dataKeys(e.getValue()));
                TableReplica t = judge(c, e.getKey(), e.getValue(), g.partitions);
                if (t.ineligible == null) {
                    g.tables.put(t.name, t);
                    published.add(quote(t.namespace) + "." + quote(t.name));
                }
            }
            publish(c, published);
            if (published.isEmpty()) {
                // nothing to stream: every partition of the shard is read through SQL
                g.streaming = true;
                return g;
            }
            clearOldSlot(c);
            ReplicationSource.SlotInfo slot = source.createTemporarySlot(slotName());
            copy(c, g, slot.snapshotName());
            g.applied = slot.consistentPoint();
            source.start(publicationName(), slot.consistentPoint());
            g.streaming = true;
            long rows = 0;
            long bytes = 0;
            for (Held h : g.partitions.values()) {
                if (!h.evicted) {
                    rows += h.rows.rowCount();
                    bytes += h.rows.bytes();
                }
            }
            log.info("replica of shard {} on {}: {} partitions, {} rows, {} bytes in memory from slot {} at {}", shardId,
                    hostId, g.partitions.values().stream().filter(h -> !h.evicted).count(), rows, bytes, slotName(),
                    Lsn.format(slot.consistentPoint()));
            return g;
        }
    }

    private Properties properties(String application) {
        Properties p = new Properties();
        if (user != null) {
            p.setProperty("user", user);
        }
        if (password != null) {
            p.setProperty("password", password);
        }
        p.setProperty("ApplicationName", application);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "300");
        return p;
    }

    /**
     * Describes a table and puts a replica of each of its partitions into {@code into}: empty ones to copy into,
     * or, when the table cannot be replicated, ones that say why.
     */
    private TableReplica judge(Connection c, String table, List<Partition> partitions, Map<Integer, Held> into)
            throws SQLException {
        TableReplica t = describe(c, table);
        for (Partition p : partitions) {
            Held h = new Held(p, t);
            into.put(p.id(), h);
            if (t.ineligible != null) {
                h.evict(t.ineligible);
            } else {
                t.held.add(h);
            }
        }
        t.held.sort(Comparator.comparingInt(h -> h.partition.slotLo()));
        return t;
    }

    /** The table's columns and replica identity, or why it cannot be replicated. */
    private TableReplica describe(Connection c, String table) throws SQLException {
        TableReplica t = new TableReplica(table);
        int oid;
        try (PreparedStatement ps = c.prepareStatement("SELECT c.oid, n.nspname, c.relkind FROM pg_class c "
                + "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(?)")) {
            ps.setString(1, quote(table));
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    t.ineligible = "no such table on the shard";
                    return t;
                }
                oid = rs.getInt(1);
                t.oid = oid;
                t.namespace = rs.getString(2);
                String kind = rs.getString(3);
                if (!"r".equals(kind) && !"p".equals(kind)) {
                    t.ineligible = "not a table (relkind " + kind + ")";
                    return t;
                }
            }
        }
        List<String> relationColumns = new ArrayList<>();
        List<Integer> relationTypes = new ArrayList<>();
        List<Boolean> notNull = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT attname, atttypid, attnotnull FROM pg_attribute "
                + "WHERE attrelid = ? AND attnum > 0 AND NOT attisdropped ORDER BY attnum")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    relationColumns.add(rs.getString(1));
                    relationTypes.add(rs.getInt(2));
                    notNull.add(rs.getBoolean(3));
                }
            }
        }
        List<String> primaryKey = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT a.attname FROM pg_index i JOIN pg_attribute a "
                + "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = ? AND i.indisprimary")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    primaryKey.add(rs.getString(1));
                }
            }
        }
        // Each leaf must tell an update or delete's row: by the whole old row (REPLICA IDENTITY FULL) or by the
        // primary key; the replica then finds rows by the primary key when the table has one, by all columns if not.
        boolean full = true;
        boolean identified = true;
        try (PreparedStatement ps = c.prepareStatement("SELECT c.relreplident, EXISTS (SELECT 1 FROM pg_index i "
                + "WHERE i.indrelid = c.oid AND i.indisprimary) FROM pg_partition_tree(?::regclass) t "
                + "JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String identity = rs.getString(1);
                    boolean hasKey = rs.getBoolean(2);
                    full &= "f".equals(identity);
                    identified &= "f".equals(identity) || ("d".equals(identity) && hasKey);
                }
            }
        }
        if (!identified || (primaryKey.isEmpty() && !full)) {
            t.ineligible = "no replica identity (a primary key, or REPLICA IDENTITY FULL on every partition)";
            return t;
        }
        List<ReplicaColumn> columns = new ArrayList<>();
        int[] storeToRelation = new int[relationColumns.size()];
        int n = 0;
        for (int i = 0; i < relationColumns.size(); i++) {
            PgType type = PgType.ofOid(relationTypes.get(i));
            if (type != null) {
                columns.add(new ReplicaColumn(relationColumns.get(i), relationTypes.get(i), notNull.get(i)));
                storeToRelation[n++] = i;
            }
        }
        t.relationColumns = List.copyOf(relationColumns);
        t.relationTypes = List.copyOf(relationTypes);
        t.columns = List.copyOf(columns);
        t.storeToRelation = java.util.Arrays.copyOf(storeToRelation, n);
        t.slotColumn = t.column(ShardReader.SLOT_COLUMN);
        if (t.slotColumn < 0 || t.columns.get(t.slotColumn).type().batchType() != dev.thresher.bindings.abi.ColumnType.INT64) {
            t.ineligible = "no integer " + ShardReader.SLOT_COLUMN + " column";
            return t;
        }
        if (primaryKey.isEmpty()) {
            t.identity = new int[t.columns.size()];
            for (int i = 0; i < t.identity.length; i++) {
                t.identity[i] = i;
            }
        } else {
            t.identity = new int[primaryKey.size()];
            for (int i = 0; i < primaryKey.size(); i++) {
                t.identity[i] = t.column(primaryKey.get(i));
                if (t.identity[i] < 0) {
                    t.ineligible = "primary key column " + primaryKey.get(i) + " has a type a replica does not hold";
                    return t;
                }
            }
        }
        return t;
    }

    private void publish(Connection c, List<String> tables) throws SQLException {
        String publication = quote(publicationName());
        boolean exists;
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publicationName());
            try (ResultSet rs = ps.executeQuery()) {
                exists = rs.next();
            }
        }
        try (Statement s = c.createStatement()) {
            if (tables.isEmpty()) {
                if (exists) {
                    s.execute("DROP PUBLICATION " + publication);
                }
                return;
            }
            String list = String.join(", ", tables);
            if (exists) {
                s.execute("ALTER PUBLICATION " + publication + " SET TABLE " + list);
                s.execute("ALTER PUBLICATION " + publication + " SET (publish_via_partition_root = true)");
            } else {
                s.execute("CREATE PUBLICATION " + publication + " FOR TABLE " + list
                        + " WITH (publish_via_partition_root = true)");
            }
        }
    }

    /**
     * What an earlier life of this node left of its slot: a stream still open (a process killed before
     * PostgreSQL noticed) is ended, a permanent slot of the same name dropped.
     */
    private void clearOldSlot(Connection c) throws SQLException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try (PreparedStatement ps = c.prepareStatement("SELECT active_pid, temporary FROM pg_replication_slots "
                    + "WHERE slot_name = ?")) {
                ps.setString(1, slotName());
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return;
                    }
                    int pid = rs.getInt(1);
                    boolean active = !rs.wasNull();
                    if (active) {
                        try (PreparedStatement kill = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
                            kill.setInt(1, pid);
                            kill.execute();
                        }
                    } else if (!rs.getBoolean(2)) {
                        try (PreparedStatement drop = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
                            drop.setString(1, slotName());
                            drop.execute();
                        }
                    }
                }
            }
            if (System.nanoTime() - until > 0) {
                throw new SQLException("replication slot " + slotName() + " is still in use by another session");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /** Copies every replicated partition under the slot's exported snapshot. */
    private void copy(Connection c, Generation g, String snapshot) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
            s.execute("SET TRANSACTION SNAPSHOT '" + snapshot.replace("'", "''") + "'");
            g.oids = oids(g.tables.values());
            g.fingerprint = fingerprint(c, g.oids);
            copyTables(c, g.tables.values());
        } finally {
            try {
                c.rollback();
                c.setAutoCommit(true);
            } catch (SQLException ignored) {
                // the connection is closed by the caller
            }
        }
    }

    private static String oids(java.util.Collection<TableReplica> tables) {
        return "{" + String.join(",", tables.stream().map(t -> Integer.toString(t.oid)).toList()) + "}";
    }

    /** The columns' fingerprint of the tables {@code oids} ({@link WalFence#FINGERPRINT}) in the transaction's snapshot. */
    private static String fingerprint(Connection c, String oids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(WalFence.FINGERPRINT)) {
            ps.setString(1, oids);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /** Copies the tables' partitions in the connection's open transaction. */
    private void copyTables(Connection c, java.util.Collection<TableReplica> tables) throws SQLException {
        CopyManager copies = c.unwrap(PGConnection.class).getCopyAPI();
        try {
            for (TableReplica t : tables) {
                StringBuilder columns = new StringBuilder();
                for (int i = 0; i < t.columns.size(); i++) {
                    columns.append(i == 0 ? "" : ", ").append(quote(t.columns.get(i).name()));
                }
                for (Held h : t.held) {
                    if (closed) {
                        throw new SQLException("closed");
                    }
                    String sql = "COPY (SELECT " + columns + " FROM " + quote(t.namespace) + "." + quote(t.name) + " WHERE "
                            + ShardReader.SLOT_COLUMN + " BETWEEN " + h.partition.slotLo() + " AND " + h.partition.slotHi()
                            + ") TO STDOUT";
                    OutputStream sink = CopyText.rowSink(t.columns.size(), row -> {
                        if (!h.evicted) {
                            h.rows.insert(row);
                            if (h.rows.rowCount() % 1024 == 0) {
                                h.account(budget);
                            }
                        }
                    });
                    copies.copyOut(sql, sink);
                    sink.close();
                    h.account(budget);
                }
            }
        } catch (java.io.IOException e) {
            throw new SQLException("copy failed: " + e.getMessage(), e);
        }
    }

    /**
     * Adds the tables new to the shard's partitions to the running stream, or says why the replica must be built
     * again instead (a table left, a table's partitions changed, the columns changed meanwhile, no stream yet).
     *
     * <p>A table joins the publication, then the replica waits for every transaction running at that moment to end
     * (a change it made before the table joined is not streamed, so it must be in the copy), then copies the table
     * under a snapshot {@code S} of its own. Changes of the table the stream delivered meanwhile are kept and, like
     * every later one, applied only when their transaction is not visible in {@code S} (committed after it): the
     * copy has the others. The stream is read throughout but during the copy itself.
     */
    private String tryAdd(ReplicationSource source, Applier applier, Generation g, List<Partition> now)
            throws SQLException {
        Map<String, List<Partition>> byTable = new LinkedHashMap<>();
        for (Partition p : now) {
            byTable.computeIfAbsent(p.table(), t -> new ArrayList<>()).add(p);
        }
        List<String> left = new ArrayList<>();
        for (var e : g.keysByTable.entrySet()) {
            List<Partition> ps = byTable.get(e.getKey());
            if (ps == null) {
                left.add(e.getKey());
            } else if (!dataKeys(ps).equals(e.getValue())) {
                return "the partitions of " + e.getKey() + " changed";
            }
        }
        if (!left.isEmpty()) {
            drop(g, left);
        }
        Map<String, List<Partition>> added = new LinkedHashMap<>(byTable);
        added.keySet().removeAll(g.keysByTable.keySet());
        if (added.isEmpty()) {
            g.dataKeys = dataKeys(now);
            return g.rebuild;
        }
        if (g.tables.isEmpty()) {
            return "the shard has its first replicated table";
        }
        int keptApplied = 0;
        int keptSkipped = 0;
        try (Connection c = DriverManager.getConnection(jdbcUrl, properties("thresher-replica-add"))) {
            List<TableReplica> eligible = new ArrayList<>();
            Map<Integer, Held> judged = new HashMap<>();
            for (var e : added.entrySet()) {
                TableReplica t = judge(c, e.getKey(), e.getValue(), judged);
                if (t.ineligible == null) {
                    eligible.add(t);
                }
            }
            if (!eligible.isEmpty()) {
                for (TableReplica t : eligible) {
                    g.adding.put(t.name, t);
                }
                try (Statement s = c.createStatement()) {
                    s.execute("ALTER PUBLICATION " + quote(publicationName()) + " ADD TABLE " + String.join(", ",
                            eligible.stream().map(t -> quote(t.namespace) + "." + quote(t.name)).toList()));
                }
                awaitRunningTransactions(c, source, applier, g);
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
                    XidSnapshot snapshot;
                    try (ResultSet rs = s.executeQuery("SELECT pg_current_snapshot()::text")) {
                        rs.next();
                        snapshot = XidSnapshot.parse(rs.getString(1));
                    }
                    if (!fingerprint(c, g.oids).equals(g.fingerprint)) {
                        return "the columns of a replicated table changed";
                    }
                    copyTables(c, eligible);
                    List<TableReplica> all = new ArrayList<>(g.tables.values());
                    all.addAll(eligible);
                    String oids = oids(all);
                    String fingerprint = fingerprint(c, oids);
                    g.lock.writeLock().lock();
                    try {
                        for (TableReplica t : eligible) {
                            t.visibleInCopy = snapshot;
                            for (Applier.Kept k : t.kept) {
                                if (!snapshot.visible(k.xid())) {
                                    applier.apply(k.change());
                                    keptApplied++;
                                } else {
                                    keptSkipped++;
                                }
                            }
                            t.kept.clear();
                            g.adding.remove(t.name);
                            g.tables.put(t.name, t);
                            for (Held h : t.held) {
                                h.account(budget);
                            }
                        }
                        g.partitions.putAll(judged);
                        g.oids = oids;
                        g.fingerprint = fingerprint;
                    } finally {
                        g.lock.writeLock().unlock();
                    }
                } finally {
                    c.rollback();
                }
            } else {
                g.lock.writeLock().lock();
                try {
                    g.partitions.putAll(judged);
                } finally {
                    g.lock.writeLock().unlock();
                }
            }
            for (var e : added.entrySet()) {
                g.keysByTable.put(e.getKey(), dataKeys(e.getValue()));
            }
            g.dataKeys = dataKeys(now);
            log.info("replica of shard {} on {}: added {} to the stream ({} replicated; of the changes streamed while they"
                    + " were copied, {} applied, {} already in the copy)", shardId, hostId, added.keySet(),
                    eligible.stream().map(t -> t.name).toList(), keptApplied, keptSkipped);
            return g.rebuild;
        }
    }

    /**
     * Forgets tables that left the shard (dropped, or their last partition moved away): their memory is released and
     * they leave the publication (a dropped table has left it already).
     */
    private void drop(Generation g, List<String> tables) throws SQLException {
        List<String> published = new ArrayList<>();
        g.lock.writeLock().lock();
        try {
            for (String name : tables) {
                TableReplica t = g.tables.remove(name);
                g.keysByTable.remove(name);
                g.partitions.values().removeIf(h -> {
                    if (!h.partition.table().equals(name)) {
                        return false;
                    }
                    budget.release(h.accounted);
                    h.accounted = 0;
                    h.evict("table left the shard");
                    return true;
                });
                if (t != null) {
                    published.add(quote(t.namespace) + "." + quote(t.name));
                }
            }
            g.oids = oids(g.tables.values());
        } finally {
            g.lock.writeLock().unlock();
        }
        // The digests of the tables left, as they were copied (one per table in the fingerprint).
        java.util.Set<String> kept = new java.util.HashSet<>();
        g.tables.values().forEach(t -> kept.add(Integer.toString(t.oid)));
        g.fingerprint = String.join(";", java.util.Arrays.stream(g.fingerprint.split(";"))
                .filter(d -> kept.contains(d.substring(0, Math.max(0, d.indexOf('='))))).toList());
        try (Connection c = DriverManager.getConnection(jdbcUrl, properties("thresher-replica-drop"))) {
            try (Statement s = c.createStatement()) {
                for (String table : published) {
                    try {
                        s.execute("ALTER PUBLICATION " + quote(publicationName()) + " DROP TABLE " + table);
                    } catch (SQLException gone) {
                        // the table was dropped, and left the publication with it
                    }
                }
            }
        }
        log.info("replica of shard {} on {}: {} left the shard; their replicas are released", shardId, hostId, tables);
    }

    /** Waits, reading the stream meanwhile, until every transaction running now has ended. */
    private void awaitRunningTransactions(Connection c, ReplicationSource source, Applier applier, Generation g)
            throws SQLException {
        XidSnapshot running;
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_current_snapshot()::text")) {
            rs.next();
            running = XidSnapshot.parse(rs.getString(1));
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM unnest(?::xid8[]) x "
                + "WHERE pg_xact_status(x) = 'in progress'")) {
            ps.setString(1, running.xipArray());
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getLong(1) == 0) {
                        return;
                    }
                }
                if (System.nanoTime() - until > 0 || closed) {
                    throw new SQLException("transactions running when a table joined the publication did not end in 30 s");
                }
                pump(source, applier, g);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
        }
    }

    /** Applies what the stream has now, without waiting. */
    private void pump(ReplicationSource source, Applier applier, Generation g) throws SQLException {
        Message m;
        while ((m = source.poll()) != null) {
            applier.accept(m);
        }
        catchUp(source, applier, g);
    }

    /**
     * With no message waiting: everything up to the server's position is applied unless a transaction is half
     * read, so reads waiting for a position up to there may go on, and the server may recycle the WAL before it.
     */
    private static void catchUp(ReplicationSource source, Applier applier, Generation g) throws SQLException {
        long position = source.serverPosition();
        g.serverPosition = Math.max(g.serverPosition, position);
        if (!applier.inTransaction && position > g.applied) {
            g.advance(position);
            source.acknowledge(position);
        }
    }

    /** Streams until the partitions change, the replica must be rebuilt, or the replica is closed. */
    private void stream(ReplicationSource source, Generation g) throws SQLException {
        if (g.tables.isEmpty()) {
            while (!closed && dataKeys(wanted()).equals(g.dataKeys)) {
                pause(WANT_CHECK_NANOS);
            }
            return;
        }
        Applier applier = new Applier(g);
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
            catchUp(source, applier, g);
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
                    String rebuild = tryAdd(source, applier, g, partitions);
                    if (rebuild != null) {
                        log.info("replica of shard {} on {}: rebuilding ({})", shardId, hostId, rebuild);
                        return;
                    }
                }
            }
            LockSupport.parkNanos(waited ? TimeUnit.MICROSECONDS.toNanos(100) : TimeUnit.MILLISECONDS.toNanos(5));
        }
    }

    /** Applies decoded messages: a transaction's changes are kept until its commit, then applied at once. */
    private final class Applier {
        private final Generation g;
        private final Map<Integer, TableReplica> relations = new HashMap<>();
        private final List<Message> pending = new ArrayList<>();
        boolean inTransaction;
        private int xid;

        /** A change of a table being added, kept with its transaction until the table's copy is in. */
        record Kept(int xid, Message change) {}

        Applier(Generation g) {
            this.g = g;
        }

        void accept(Message m) {
            switch (m) {
                case PgOutput.Begin b -> {
                    inTransaction = true;
                    xid = b.xid();
                    pending.clear();
                }
                case PgOutput.Relation r -> relation(r);
                case PgOutput.Insert i -> keep(i.relation(), m);
                case PgOutput.Update u -> keep(u.relation(), m);
                case PgOutput.Delete d -> keep(d.relation(), m);
                case PgOutput.Truncate t -> pending.add(t);
                case PgOutput.Commit c -> commit(c);
                default -> { } // origins, types and logical messages change no rows
            }
        }

        private void keep(int relation, Message m) {
            if (relations.containsKey(relation)) {
                pending.add(m);
            }
        }

        private void relation(PgOutput.Relation r) {
            TableReplica t = g.tables.containsKey(r.name()) ? g.tables.get(r.name()) : g.adding.get(r.name());
            if (t == null || !t.namespace.equals(r.namespace())) {
                relations.remove(r.oid());
                return;
            }
            List<String> names = r.columns().stream().map(PgOutput.RelationColumn::name).toList();
            List<Integer> types = r.columns().stream().map(PgOutput.RelationColumn::typeOid).toList();
            if (!names.equals(t.relationColumns) || !types.equals(t.relationTypes)) {
                g.rebuild = "the columns of " + t.name + " changed";
                return;
            }
            relations.put(r.oid(), t);
        }

        private void commit(PgOutput.Commit c) {
            inTransaction = false;
            if (!pending.isEmpty()) {
                g.lock.writeLock().lock();
                try {
                    for (Message m : pending) {
                        if (m instanceof PgOutput.Truncate tr) {
                            for (int relation : tr.relations()) {
                                route(relation, new PgOutput.Truncate(tr.options(), new int[] {relation}));
                            }
                        } else {
                            route(relationOf(m), m);
                        }
                        if (g.rebuild != null) {
                            break;
                        }
                    }
                    // under the write lock: a partition dropped for the budget is never half-read
                    for (TableReplica t : g.tables.values()) {
                        for (Held h : t.held) {
                            if (!h.evicted && h.touched) {
                                h.touched = false;
                                h.account(budget);
                            }
                        }
                    }
                } finally {
                    g.lock.writeLock().unlock();
                }
                pending.clear();
            }
            if (g.rebuild == null) {
                g.advance(c.endLsn());
            }
        }

        /**
         * Applies a change of a replicated table; keeps one of a table being added; skips one of a table added to the
         * stream whose copy already holds it (its transaction is visible in the copy's snapshot).
         */
        private void route(int relation, Message m) {
            TableReplica t = relations.get(relation);
            if (t == null) {
                return;
            }
            if (g.adding.get(t.name) == t) {
                t.kept.add(new Kept(xid, m));
            } else if (t.visibleInCopy == null || !t.visibleInCopy.visible(xid)) {
                apply(m);
            }
        }

        private static int relationOf(Message m) {
            return switch (m) {
                case PgOutput.Insert i -> i.relation();
                case PgOutput.Update u -> u.relation();
                case PgOutput.Delete d -> d.relation();
                default -> -1;
            };
        }

        void apply(Message m) {
            switch (m) {
                case PgOutput.Insert i -> {
                    TableReplica t = relations.get(i.relation());
                    Tuple row = t.project(i.row());
                    Held h = t.holding(slotOf(t, row));
                    if (h != null) {
                        h.rows.insert(row);
                        h.touched = true;
                    }
                }
                case PgOutput.Update u -> {
                    TableReplica t = relations.get(u.relation());
                    Tuple row = t.project(u.row());
                    Tuple old = u.old() == null ? null : t.project(u.old());
                    int newSlot = slotOf(t, row);
                    int oldSlot = old == null ? newSlot : slotOf(t, old);
                    if (oldSlot == Integer.MIN_VALUE) {
                        g.rebuild = "an update of " + t.name + " without its old slot";
                        return;
                    }
                    Held from = t.holding(oldSlot);
                    Held to = t.holding(newSlot);
                    if (from == to) {
                        if (from != null && !from.rows.update(old, u.oldIsKey(), row)) {
                            g.rebuild = "an updated row of " + t.name + " was not in the replica";
                        }
                        if (from != null) {
                            from.touched = true;
                        }
                        return;
                    }
                    for (int i = 0; i < row.size(); i++) {
                        if (row.isUnchanged(i)) {
                            g.rebuild = "a row of " + t.name + " moved between partitions with an unchanged TOASTed value";
                            return;
                        }
                    }
                    if (from != null) {
                        if (!from.rows.delete(old == null ? row : old, old != null && u.oldIsKey())) {
                            g.rebuild = "a moved row of " + t.name + " was not in the replica";
                            return;
                        }
                        from.touched = true;
                    }
                    if (to != null) {
                        to.rows.insert(row);
                        to.touched = true;
                    }
                }
                case PgOutput.Delete d -> {
                    TableReplica t = relations.get(d.relation());
                    Tuple old = t.project(d.old());
                    int slot = slotOf(t, old);
                    if (slot == Integer.MIN_VALUE) {
                        g.rebuild = "a delete from " + t.name + " without its slot";
                        return;
                    }
                    Held h = t.holding(slot);
                    if (h != null) {
                        if (!h.rows.delete(old, d.oldIsKey())) {
                            g.rebuild = "a deleted row of " + t.name + " was not in the replica";
                        }
                        h.touched = true;
                    }
                }
                case PgOutput.Truncate tr -> {
                    for (int relation : tr.relations()) {
                        TableReplica t = relations.get(relation);
                        if (t != null) {
                            for (Held h : t.held) {
                                if (!h.evicted) {
                                    h.rows.clear();
                                    h.touched = true;
                                }
                            }
                        }
                    }
                }
                default -> { }
            }
        }

        /** The row's slot, or {@code Integer.MIN_VALUE} when the tuple does not carry it. */
        private static int slotOf(TableReplica t, Tuple row) {
            byte[] v = row.value(t.slotColumn);
            if (v == null || v == Tuple.UNCHANGED) {
                return Integer.MIN_VALUE;
            }
            return Integer.parseInt(new String(v, StandardCharsets.US_ASCII));
        }
    }

    /** The shard database cannot stream: {@code wal_level} is not {@code logical}. */
    private static final class NotLogical extends SQLException {
        NotLogical(String message) {
            super(message, "55000");
        }
    }

    /** One build of the shard's replicas, from one snapshot and its stream. */
    private static final class Generation {
        volatile List<String> dataKeys;
        final Map<Integer, Held> partitions = new ConcurrentHashMap<>();
        final Map<String, TableReplica> tables = new LinkedHashMap<>();
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        final Object applied_ = new Object();
        volatile long applied;
        volatile long wanted;
        volatile long serverPosition;
        volatile boolean streaming;
        volatile boolean dead;
        /** Why the stream must stop and the replica be built again; set by the stream or by a read. */
        volatile String rebuild;
        /** The replicated tables' oids ({@code {1,2}}) and their columns' fingerprint as copied. */
        volatile String oids = "{}";
        volatile String fingerprint = "";
        /** The partitions of each table of the shard this generation judged (replicated or not), by data key. */
        final Map<String, List<String>> keysByTable = new HashMap<>();
        /** Tables being added to the running stream: their changes are kept until their copy is in. */
        final Map<String, TableReplica> adding = new HashMap<>();

        Generation(List<String> dataKeys) {
            this.dataKeys = dataKeys;
        }

        void advance(long position) {
            if (position > applied) {
                applied = position;
                synchronized (applied_) {
                    applied_.notifyAll();
                }
            }
        }

        void wake() {
            dead = true;
            synchronized (applied_) {
                applied_.notifyAll();
            }
        }

        /** Has the stream catch up to {@code target} (it asks the server for its position until applied). */
        void want(long target, Thread streamThread) {
            if (applied >= target) {
                return;
            }
            synchronized (applied_) {
                if (target > wanted) {
                    wanted = target;
                }
            }
            LockSupport.unpark(streamThread);
        }

        /** Waits until everything before {@code target} is applied; false at {@code untilNanos} or when dropped. */
        boolean awaitApplied(long target, long untilNanos, Thread streamThread) {
            if (applied >= target) {
                return true;
            }
            want(target, streamThread);
            synchronized (applied_) {
                while (applied < target && !dead) {
                    long left = untilNanos - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    try {
                        TimeUnit.NANOSECONDS.timedWait(applied_, left);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return false;
                    }
                }
            }
            return applied >= target && !dead;
        }
    }

    /** One replicated table of the shard: its columns as the replica holds them and its partitions here. */
    private static final class TableReplica {
        final String name;
        int oid;
        String namespace = "public";
        String ineligible;
        List<String> relationColumns = List.of();
        List<Integer> relationTypes = List.of();
        List<ReplicaColumn> columns = List.of();
        int[] storeToRelation = new int[0];
        int[] identity = new int[0];
        int slotColumn = -1;
        final List<Held> held = new ArrayList<>();
        /** Changes streamed while this table is being added, with their transactions. */
        final List<Applier.Kept> kept = new ArrayList<>();
        /** For a table added to a running stream: its copy's snapshot; changes visible in it are in the copy. */
        XidSnapshot visibleInCopy;
        /** Compiled filters by WHERE text; {@link #UNEVALUABLE} for one the replica cannot evaluate exactly. */
        private final Map<String, Object> filters = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Object> eldest) {
                return size() > 256;
            }
        });
        private static final Object UNEVALUABLE = new Object();

        TableReplica(String name) {
            this.name = name;
        }

        int column(String name) {
            for (int i = 0; i < columns.size(); i++) {
                if (columns.get(i).name().equals(name)) {
                    return i;
                }
            }
            return -1;
        }

        /** The selector's filter: empty for none, null when the replica cannot evaluate it exactly. */
        @SuppressWarnings("unchecked")
        Optional<RowFilter> filter(Selector selector) {
            if (selector.where().isEmpty()) {
                return Optional.empty();
            }
            Object f = filters.computeIfAbsent(selector.where().get(), w -> {
                Optional<RowFilter> compiled = RowFilter.compile(w, columns);
                return compiled.isPresent() ? compiled : UNEVALUABLE;
            });
            return f == UNEVALUABLE ? null : (Optional<RowFilter>) f;
        }

        /** A relation's tuple as the replica's columns. */
        Tuple project(Tuple relationRow) {
            byte[][] values = new byte[storeToRelation.length][];
            for (int i = 0; i < values.length; i++) {
                values[i] = relationRow.value(storeToRelation[i]);
            }
            return new Tuple(values);
        }

        /** The partition holding a slot, or null when no partition here holds it. */
        Held holding(int slot) {
            for (Held h : held) {
                if (slot >= h.partition.slotLo() && slot <= h.partition.slotHi()) {
                    return h.evicted ? null : h;
                }
            }
            return null;
        }
    }

    /** One partition in memory. */
    private static final class Held {
        final Partition partition;
        final TableReplica table;
        final PartitionRows rows;
        volatile boolean evicted;
        volatile String reason = "";
        long accounted;
        boolean touched;

        Held(Partition partition, TableReplica table) {
            this.partition = partition;
            this.table = table;
            this.rows = table.ineligible == null ? new PartitionRows(table.columns, table.identity) : null;
        }

        void evict(String why) {
            evicted = true;
            reason = why;
            if (rows != null) {
                rows.clear();
            }
        }

        /** Reserves what the rows hold now; one that does not fit is dropped from memory. */
        void account(ReplicaBudget budget) {
            if (evicted) {
                return;
            }
            long bytes = rows.bytes();
            if (budget.tryReserve(bytes - accounted)) {
                accounted = bytes;
            } else {
                budget.release(accounted);
                accounted = 0;
                evict("over limits.replicaMemoryBytes");
            }
        }
    }

    private static String quote(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    /** A slot or publication name: lower case letters, digits and underscores, at most 63 bytes. */
    static String name(String raw) {
        String s = raw.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
        return s.length() > 63 ? s.substring(0, 63) : s;
    }
}
