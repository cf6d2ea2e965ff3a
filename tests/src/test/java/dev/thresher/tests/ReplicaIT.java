package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.cellhost.Component;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.replica.ShardReplica;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Leader replicas on real nodes (docs/architecture.md, "Leader replicas"; docs/contract.md, "a partition read is as
 * fresh as a query issued at the shard run's start"): rows written straight into the shard databases while clients
 * call, and what the calls see.
 *
 * <p>The shared three-node cluster ({@link Cluster}: every node leads its home shard's partitions and stands by for
 * the next shard's, so each shard database is replicated by two nodes) gets two tables of its own, created through
 * the table admin (no primary key: {@code REPLICA IDENTITY FULL}) and written here with plain SQL on the shard
 * databases, as an application writes them: {@value #FRESH}, six partitions, and {@value #CHURN}, nine, three per
 * shard. Stopping a node and restarting PostgreSQL happen on a one-node cluster of this class's own.
 *
 * <p>The freshness and churn tests run for {@code -Dthresher.replicaIT.seconds} each (default 20).
 */
class ReplicaIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** How long the freshness and churn tests write and call. */
    private static final long SECONDS = Long.getLong("thresher.replicaIT.seconds", 20);
    /** The bound of every wait for the cluster to settle (replicas built, a stream back). */
    private static final long SETTLE_SECONDS = 60;
    private static final String FRESH = "replica_fresh";
    private static final String CHURN = "replica_churn";
    private static final String COLUMNS = "id bigint, region text not null, amount double precision not null";
    /** The churn table's regions; the guest {@code region_totals} tells them apart by their length. */
    private static final List<String> REGIONS = List.of("a", "bb", "ccc");
    /** Each churn partition's one version row: its amount is the number of the partition's last transaction. */
    private static final String VERSION_REGION = "vvvvv";
    private static final int ROWS_PER_REGION = 4;

    private static DevCluster cluster;
    private static List<Partition> fresh;
    private static List<Partition> churn;

    @org.junit.jupiter.api.AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @BeforeAll
    static void setUp() throws Exception {
        cluster = Cluster.startReplicated();
        try (TableAdmin admin = new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                new PrintStream(PrintStream.nullOutputStream()))) {
            fresh = admin.create(DevCluster.TENANT, FRESH, "id", COLUMNS, 6, List.of());
            churn = admin.create(DevCluster.TENANT, CHURN, "id", COLUMNS, 9, List.of());
        }
        ControlStore control = new ControlStore(dataSource(cluster.controlUrl()));
        bind(control, "replica_fresh_count", "row_count", "SELECT region, amount FROM " + FRESH + " WHERE region = 'fresh'");
        bind(control, "replica_rebuilt_count", "row_count",
                "SELECT region, amount FROM " + FRESH + " WHERE region = 'rebuilt'");
        bind(control, "replica_churn_totals", "region_totals", "SELECT region, amount FROM " + CHURN);
        // rows the filters must leave out
        try (Shards shards = new Shards(cluster)) {
            AtomicLong ids = new AtomicLong(9_000_000_000L);
            for (int i = 0; i < 300; i++) {
                long id = ids.incrementAndGet();
                shards.insert(FRESH, partitionOf(fresh, Slots.ofLong(id)), id, "noise", i);
            }
        }
        for (Node n : cluster.nodes()) {
            n.catalog().refreshTopology();
            n.leases().renew();
        }
        List<Partition> all = new ArrayList<>(fresh);
        all.addAll(churn);
        awaitHomeLeadership(cluster);
        awaitInMemory(cluster, all);
        awaitCallable(cluster, "replica_fresh_count");
        awaitCallable(cluster, "replica_churn_totals");
    }

    // ---- freshness ---------------------------------------------------------------------------------------------

    /**
     * Four clients, each writing one row straight into the shard database of the row's slot and committing, then
     * calling a binding that counts those rows: every call counts at least the rows committed before it started and
     * at most the rows whose insert had started before it ended. Most partition reads are served from memory, or the
     * test would say nothing of replicas.
     */
    @Test
    void aCallCountsEveryRowCommittedBeforeItStartedAndMostReadsComeFromMemory() throws Exception {
        AtomicLong ids = new AtomicLong();
        AtomicLong started = new AtomicLong();
        AtomicLong committed = new AtomicLong();
        LongAdder calls = new LongAdder();
        Map<Integer, LongAdder> rowsPerShard = new java.util.concurrent.ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        FailedCalls failures = new FailedCalls();
        Reads before = reads(cluster);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(SECONDS);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int client = t;
                running.add(clients.submit(() -> {
                    try (Shards shards = new Shards(cluster); Connection pg = Cluster.connect(cluster, client % 3)) {
                        while (System.nanoTime() - until < 0 && failures.few()) {
                            long id = ids.incrementAndGet();
                            Partition p = partitionOf(fresh, Slots.ofLong(id));
                            started.incrementAndGet();
                            shards.insert(FRESH, p, id, "fresh", id % 1000);
                            committed.incrementAndGet();
                            rowsPerShard.computeIfAbsent(p.shardId(), s -> new LongAdder()).increment();
                            long atLeast = committed.get();
                            long count;
                            try {
                                count = callRows(pg, "replica_fresh_count");
                            } catch (SQLException e) {
                                failures.add(e);
                                continue;
                            }
                            long atMost = started.get();
                            calls.increment();
                            if (count < atLeast || count > atMost) {
                                violations.add("client " + client + " (node-" + (client % 3 + 1) + ") counted " + count
                                        + " rows; " + atLeast + " were committed before the call, " + atMost
                                        + " started before it ended");
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) {
                f.get(SECONDS + 120, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
        Reads after = reads(cluster);
        long memory = after.memory() - before.memory();
        long sql = after.sql() - before.sql();
        System.out.printf("replica freshness: %d calls over %d s, %d rows (by shard %s); partition reads %d from memory,"
                + " %d through SQL %s%n", calls.sum(), SECONDS, committed.get(), rowsPerShard, memory, sql,
                after.minus(before).sqlByReason());
        failures.check(calls.sum());
        assertThat(violations).as("calls that missed rows committed before they started, or counted rows never written")
                .isEmpty();
        assertThat(calls.sum()).as("calls made").isGreaterThanOrEqualTo(20);
        assertThat(rowsPerShard.keySet()).as("shard databases written").containsExactlyInAnyOrder(1, 2, 3);
        assertThat(memory).as("partition reads served from memory (through SQL: %s)", after.minus(before).sqlByReason())
                .isGreaterThan(sql);
        try (Connection pg = Cluster.connect(cluster, 0)) {
            assertThat(callRows(pg, "replica_fresh_count")).as("once writes stopped, every row").isEqualTo(committed.get());
        }
    }

    // ---- correctness under churn -------------------------------------------------------------------------------

    /**
     * Eight clients call while three writers insert, update and delete. Every writer transaction touches one
     * partition only and keeps, in that partition, the row count and the amount sum of every region ({@link #REGIONS})
     * as they were seeded: it moves amount between two rows of a region, replaces a row by a new one (another key)
     * with the same region and amount, or swaps region and amount between two rows. It also sets the partition's
     * version row to the transaction's number, one after the last.
     *
     * <p>So the state of a partition at any WAL position is its seeded totals and a version, and a read of the
     * partition equals the state at some WAL position between the call's start and its end exactly when its totals
     * are the seeded ones and its version lies between the last version committed before the call started and the
     * last one whose transaction began before the call ended. The guest {@code region_totals} reports each
     * partition's totals and version separately, so every call is checked partition by partition: a torn
     * transaction, a lost or doubled change, a stale read or a missing partition breaks it. Once the writers stop,
     * the call equals SQL over the shard databases exactly.
     */
    /**
     * The churn test's callers call at most once per this many milliseconds each. Unpaced, a warm JVM's callers
     * doubled the call rate, and with it the shard server's work (each call's WAL-position statements and, once
     * replicas fell behind, its SQL reads) that competes with logical decoding for the replicas' stream.
     */
    private static final long CALL_PACE_MS = 200;

    @Test
    void underChurnEveryPartitionReadEqualsTheStateAtAWalPositionWithinTheCall() throws Exception {
        List<Partition> partitions = churn.stream().sorted(java.util.Comparator.comparingInt(Partition::id)).toList();
        Map<Integer, Integer> index = new HashMap<>();
        for (int i = 0; i < partitions.size(); i++) {
            index.put(partitions.get(i).id(), i);
        }
        // Writer w owns the w-th partition of each shard database.
        Map<Integer, List<Partition>> byShard = new TreeMap<>();
        partitions.forEach(p -> byShard.computeIfAbsent(p.shardId(), s -> new ArrayList<>()).add(p));
        assertThat(byShard).as("churn partitions by shard").hasSize(3).allSatisfy((s, ps) -> assertThat(ps).hasSize(3));
        List<List<Partition>> owned = new ArrayList<>();
        for (int w = 0; w < 3; w++) {
            List<Partition> mine = new ArrayList<>();
            for (List<Partition> ps : byShard.values()) {
                mine.add(ps.get(w));
            }
            owned.add(mine);
        }
        Map<Integer, PartitionModel> models = new TreeMap<>();
        Random seedRandom = new Random(20_240_611);
        AtomicLong seedIds = new AtomicLong(5_000_000_000L);
        try (Shards shards = new Shards(cluster)) {
            for (Partition p : partitions) {
                PartitionModel m = new PartitionModel(p, 5_000_000_000L + 100_000_000L * (index.get(p.id()) + 1));
                for (String region : REGIONS) {
                    for (int i = 0; i < ROWS_PER_REGION; i++) {
                        Row r = new Row(idIn(p, seedIds), region, 1 + seedRandom.nextInt(1000));
                        shards.insert(CHURN, p, r.id, r.region, r.amount);
                        m.rows.add(r);
                    }
                }
                m.versionId = idIn(p, seedIds);
                shards.insert(CHURN, p, m.versionId, VERSION_REGION, 0);
                m.expected = m.totals();
                models.put(p.id(), m);
            }
        }
        int n = partitions.size();
        AtomicLongArray begun = new AtomicLongArray(n);
        AtomicLongArray done = new AtomicLongArray(n);
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicBoolean calling = new AtomicBoolean(true);
        LongAdder transactions = new LongAdder();
        LongAdder calls = new LongAdder();
        ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        FailedCalls failures = new FailedCalls();
        Reads before = reads(cluster);
        ExecutorService threads = Executors.newFixedThreadPool(11);
        List<Future<?>> writers = new ArrayList<>();
        List<Future<?>> callers = new ArrayList<>();
        try {
            for (int w = 0; w < 3; w++) {
                List<Partition> mine = owned.get(w);
                long seed = 77L * (w + 1);
                writers.add(threads.submit(() -> {
                    Random random = new Random(seed);
                    try (Shards shards = new Shards(cluster)) {
                        shards.transactional();
                        while (writing.get()) {
                            Partition p = mine.get(random.nextInt(mine.size()));
                            int i = index.get(p.id());
                            PartitionModel m = models.get(p.id());
                            long version = begun.incrementAndGet(i);
                            Runnable applied = m.change(shards, random, version);
                            shards.commit(p.shardId());
                            applied.run();
                            done.set(i, version);
                            transactions.increment();
                        }
                    }
                    return null;
                }));
            }
            for (int t = 0; t < 8; t++) {
                int client = t;
                callers.add(threads.submit(() -> {
                    try (Connection pg = Cluster.connect(cluster, client % 3)) {
                        long next = System.nanoTime();
                        while (calling.get() && failures.few()) {
                            // a defined load: each caller at most one call per CALL_PACE_MS (8 callers, 40 calls/s in
                            // all), whatever the JVM's warmth, so the share read from memory is that of this load
                            next += TimeUnit.MILLISECONDS.toNanos(CALL_PACE_MS);
                            java.util.concurrent.locks.LockSupport.parkNanos(next - System.nanoTime());
                            long[] atLeast = new long[n];
                            for (int i = 0; i < n; i++) {
                                atLeast[i] = done.get(i);
                            }
                            JsonNode result;
                            try {
                                result = call(pg, "replica_churn_totals");
                            } catch (SQLException e) {
                                failures.add(e);
                                continue;
                            }
                            long[] atMost = new long[n];
                            for (int i = 0; i < n; i++) {
                                atMost[i] = begun.get(i);
                            }
                            calls.increment();
                            String wrong = wrongTotals(result, partitions, models, atLeast, atMost);
                            if (wrong != null) {
                                violations.add("client " + client + " (node-" + (client % 3 + 1) + "): " + wrong);
                            }
                        }
                    }
                    return null;
                }));
            }
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(SECONDS);
            while (System.nanoTime() - until < 0 && writers.stream().noneMatch(Future::isDone)
                    && callers.stream().noneMatch(Future::isDone)) {
                Thread.sleep(100);
            }
            writing.set(false);
            for (Future<?> f : writers) {
                f.get(120, TimeUnit.SECONDS);
            }
            calling.set(false);
            for (Future<?> f : callers) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            writing.set(false);
            calling.set(false);
            threads.shutdownNow();
        }
        Reads after = reads(cluster);
        long memory = after.memory() - before.memory();
        long sql = after.sql() - before.sql();
        System.out.printf("replica churn: %d writer transactions, %d calls over %d s; partition reads %d from memory,"
                + " %d through SQL %s%n", transactions.sum(), calls.sum(), SECONDS, memory, sql,
                after.minus(before).sqlByReason());
        failures.check(calls.sum());
        assertThat(violations).as("calls whose partition totals were not those of a WAL position within the call")
                .isEmpty();
        assertThat(calls.sum()).as("calls made").isGreaterThanOrEqualTo(20);
        assertThat(transactions.sum()).as("writer transactions").isGreaterThanOrEqualTo(100);
        assertThat(memory).as("partition reads served from memory (through SQL: %s)", after.minus(before).sqlByReason())
                .isGreaterThan(sql);

        // Quiet now: the call equals SQL over the shard databases, which equals what the writers wrote.
        long[] last = new long[n];
        for (int i = 0; i < n; i++) {
            last[i] = done.get(i);
        }
        JsonNode finalResult;
        try (Connection pg = Cluster.connect(cluster, 1)) {
            finalResult = call(pg, "replica_churn_totals");
        }
        assertThat(wrongTotals(finalResult, partitions, models, last, last)).as("the call once writes stopped").isNull();
        Map<String, Long> sqlTotals = new TreeMap<>();
        for (Partition p : partitions) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(p.shardId()), DevCluster.USER,
                    DevCluster.PASSWORD); PreparedStatement ps = c.prepareStatement("SELECT length(region), count(*), "
                    + "sum(amount) FROM " + CHURN + " WHERE thresher_slot BETWEEN ? AND ? GROUP BY 1")) {
                ps.setInt(1, p.slotLo());
                ps.setInt(2, p.slotHi());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        sqlTotals.put("p" + p.id() + "/" + rs.getInt(1) + "c", rs.getLong(2));
                        sqlTotals.put("p" + p.id() + "/" + rs.getInt(1) + "s", Math.round(rs.getDouble(3)));
                    }
                }
            }
        }
        Map<String, Long> called = new TreeMap<>();
        finalResult.fields().forEachRemaining(e -> called.put(e.getKey(), e.getValue().asLong()));
        assertThat(called).as("the call against SQL over the shard databases").isEqualTo(sqlTotals);
        for (Partition p : partitions) {
            PartitionModel m = models.get(p.id());
            assertThat(m.totals()).as("partition %d as its writer left it", p.id()).isEqualTo(m.expected);
        }
    }

    /**
     * What in a result of {@code region_totals} is not the state of every partition at a WAL position between the
     * call's start and end, or null: per partition, the seeded totals and a version in [{@code atLeast}, {@code atMost}].
     */
    private static String wrongTotals(JsonNode result, List<Partition> partitions, Map<Integer, PartitionModel> models,
                                      long[] atLeast, long[] atMost) {
        int expectedKeys = 0;
        for (int i = 0; i < partitions.size(); i++) {
            Partition p = partitions.get(i);
            long[] expected = models.get(p.id()).expected;
            for (int len = 1; len <= 9; len++) {
                if (len == VERSION_REGION.length()) {
                    continue;
                }
                long count = result.path("p" + p.id() + "/" + len + "c").asLong(0);
                long sum = result.path("p" + p.id() + "/" + len + "s").asLong(0);
                if (count != expected[2 * len] || sum != expected[2 * len + 1]) {
                    return "partition " + p.id() + " region of length " + len + ": " + count + " rows summing to " + sum
                            + ", not " + expected[2 * len] + " summing to " + expected[2 * len + 1] + " (" + result + ")";
                }
                expectedKeys += expected[2 * len] > 0 ? 2 : 0;
            }
            long versions = result.path("p" + p.id() + "/" + VERSION_REGION.length() + "c").asLong(-1);
            long version = result.path("p" + p.id() + "/" + VERSION_REGION.length() + "s").asLong(-1);
            if (versions != 1) {
                return "partition " + p.id() + ": " + versions + " version rows (" + result + ")";
            }
            if (version < atLeast[i] || version > atMost[i]) {
                return "partition " + p.id() + " read at version " + version + ", outside [" + atLeast[i] + ", "
                        + atMost[i] + "] (committed before the call started, begun before it ended)";
            }
            expectedKeys += 2;
        }
        if (result.size() != expectedKeys) {
            return result.size() + " keys, not " + expectedKeys + " (" + result + ")";
        }
        return null;
    }

    // ---- rebuilding without manual steps -----------------------------------------------------------------------

    /**
     * The replication connections of shard 1 (the walsenders of both nodes replicating it) are terminated; rows are
     * written meanwhile. Each replica builds itself again on a new connection, is served from memory again and has
     * every row.
     */
    @Test
    void aDroppedReplicationConnectionIsRebuiltAndServedFromMemoryAgain() throws Exception {
        int shard = 1;
        List<Partition> onShard = fresh.stream().filter(p -> p.shardId() == shard).toList();
        assertThat(onShard).isNotEmpty();
        List<ShardReplica> replicas = cluster.nodes().stream().map(n -> n.replicas().get(shard))
                .filter(java.util.Objects::nonNull).toList();
        assertThat(replicas).as("nodes replicating shard 1 (its home node and its standby)").hasSize(2);
        awaitInMemory(cluster, fresh);
        Map<String, Integer> pids = new TreeMap<>();
        try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD)) {
            for (ShardReplica r : replicas) {
                Integer pid = activePid(c, r.slotName());
                assertThat(pid).as("walsender of slot %s", r.slotName()).isNotNull();
                pids.put(r.slotName(), pid);
            }
            for (String slot : pids.keySet()) {
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = ?")) {
                    ps.setString(1, slot);
                    try (ResultSet rs = ps.executeQuery()) {
                        assertThat(rs.next()).as("slot %s", slot).isTrue();
                        assertThat(rs.getBoolean(1)).as("walsender of %s terminated", slot).isTrue();
                    }
                }
            }
        }
        long written = 0;
        AtomicLong ids = new AtomicLong(7_000_000_000L);
        try (Shards shards = new Shards(cluster)) {
            for (Partition p : onShard) {
                for (int i = 0; i < 10; i++) {
                    shards.insert(FRESH, p, idIn(p, ids), "rebuilt", i);
                    written++;
                }
            }
            // every walsender is a new one, and every replica of the shard is in memory again
            await(() -> {
                try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER,
                        DevCluster.PASSWORD)) {
                    for (var e : pids.entrySet()) {
                        Integer now = activePid(c, e.getKey());
                        if (now == null || now.equals(e.getValue())) {
                            return false;
                        }
                    }
                } catch (SQLException e) {
                    return false;
                }
                return replicas.stream().allMatch(r -> r.status().stream()
                        .allMatch(s -> s.state() == ShardReplica.State.MEMORY));
            }, () -> "shard 1's replicas streaming again on new connections: " + replicas.stream()
                    .map(r -> r.slotName() + " " + r.status().stream().map(s -> s.partitionId() + ":" + s.state() + " "
                            + s.reason()).toList()).toList());
            for (Partition p : onShard) {
                for (int i = 0; i < 10; i++) {
                    shards.insert(FRESH, p, idIn(p, ids), "rebuilt", i);
                    written++;
                }
            }
        }
        long memoryBefore = replicas.stream().mapToLong(r -> r.reads().memory()).sum();
        try (Connection pg = Cluster.connect(cluster, 1)) {
            assertThat(callRows(pg, "replica_rebuilt_count")).as("rows written while and after it was rebuilt")
                    .isEqualTo(written);
        }
        long memoryReads = replicas.stream().mapToLong(r -> r.reads().memory()).sum() - memoryBefore;
        assertThat(memoryReads).as("reads of shard 1's partitions served from its rebuilt replicas (through SQL: %s)",
                replicas.stream().map(r -> r.reads().sqlByReason()).toList()).isGreaterThanOrEqualTo(onShard.size());
    }

    /**
     * On a one-node cluster of its own: the node's replica comes back by itself after PostgreSQL restarts (its
     * temporary slot gone with the server) and is served from memory with the rows written since; once the node
     * stops, its slot is gone from {@code pg_replication_slots}; the node started again (same host, same
     * configuration) builds its replica again by itself and serves from memory.
     */
    @Test
    void afterAPostgresRestartTheReplicaComesBackAndItsSlotDoesNotOutliveItsNode() throws Exception {
        java.nio.file.Path dir = Files.createTempDirectory("thresher-replica-");
        DevCluster own = DevCluster.start(new DevCluster.Options(dir, 0, 2_000, 4, 1, 7, Cluster.REPLICAS, false));
        try {
            Node node = own.nodes().get(0);
            ShardReplica replica = node.replicas().get(1);
            assertThat(replica).as("the node's replica of its shard").isNotNull();
            List<Partition> partitions = node.catalog().topology().partitions();
            awaitInMemory(own, partitions);
            try (Connection c = DriverManager.getConnection(own.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
                 PreparedStatement ps = c.prepareStatement(
                         "SELECT temporary, active_pid FROM pg_replication_slots WHERE slot_name = ?")) {
                ps.setString(1, replica.slotName());
                try (ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).as("slot %s while the node runs", replica.slotName()).isTrue();
                    assertThat(rs.getBoolean(1)).as("temporary").isTrue();
                    assertThat(rs.getObject(2)).as("streamed").isNotNull();
                }
            }
            bind(new ControlStore(dataSource(own.controlUrl())), "restarted_rows", "row_count",
                    "SELECT region, amount FROM orders WHERE region = 'restarted'");

            Faults.Postgres postgres = new Faults.Postgres(own);
            postgres.stop();
            postgres.startIfStopped();
            int written = 0;
            try (Connection c = DriverManager.getConnection(own.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
                 PreparedStatement ps = c.prepareStatement(
                         "INSERT INTO orders (order_id, region, amount, thresher_slot) VALUES (?, 'restarted', ?, ?)")) {
                for (long id = 1_000_001; id <= 1_000_012; id++) {
                    ps.setLong(1, id);
                    ps.setDouble(2, id % 100);
                    ps.setInt(3, Slots.ofLong(id));
                    written += ps.executeUpdate();
                }
            }
            await(() -> {
                try (Connection c = DriverManager.getConnection(own.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD)) {
                    if (activePid(c, replica.slotName()) == null) {
                        return false;
                    }
                } catch (SQLException e) {
                    return false;
                }
                return replica.status().stream().allMatch(s -> s.state() == ShardReplica.State.MEMORY);
            }, () -> "the replica streaming again after the restart: " + replica.status());
            long memoryBefore = replica.reads().memory();
            // the node's own pools reconnect after the restart: a call may fail until they have
            assertThat(callRowsOnceAnswered(node, "restarted_rows")).as("rows written after the restart")
                    .isEqualTo(written);
            assertThat(replica.reads().memory() - memoryBefore).as("reads served from memory after the restart "
                    + "(through SQL: %s)", replica.reads().sqlByReason()).isPositive();

            String slot = replica.slotName();
            node.close();
            await(() -> {
                try (Connection c = DriverManager.getConnection(own.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
                     PreparedStatement ps = c.prepareStatement(
                             "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'thresher\\_%'")) {
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return rs.getLong(1) == 0;
                    }
                } catch (SQLException e) {
                    return false;
                }
            }, () -> "slot " + slot + " gone once its node stopped: " + slots(own));

            Node again = Node.start(node.config());
            try {
                ShardReplica rebuilt = again.replicas().get(1);
                assertThat(rebuilt).as("the restarted node's replica of its shard").isNotNull().isNotSameAs(replica);
                awaitInMemory(List.of(again), partitions);
                // the restarted node takes its partitions' leases again: a call may be refused until it has
                assertThat(callRowsOnceAnswered(again, "restarted_rows")).as("rows after the node's restart")
                        .isEqualTo(written);
                assertThat(rebuilt.reads().memory()).as("reads served from memory after the node's restart (through"
                        + " SQL: %s)", rebuilt.reads().sqlByReason()).isPositive();
            } finally {
                again.close();
            }
        } finally {
            own.close();
        }
    }

    // ---- the operator's view -----------------------------------------------------------------------------------

    /**
     * {@code GET /admin/topology/replicas} on each node lists every partition of the shard databases the node is a
     * candidate for, as the control database has them; the sample table's partitions are in memory with their rows.
     */
    @Test
    void theReplicasRouteListsEveryPartitionOfTheNodesShardsInMemory() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        for (Node n : cluster.nodes()) {
            Set<Integer> shards = n.replicas().keySet();
            assertThat(shards).as("shards %s replicates", n.pgwireAddress()).hasSize(2);
            Map<Integer, Long> orderRows = new TreeMap<>();
            Set<Integer> expected = new TreeSet<>();
            try (Connection c = DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
                 PreparedStatement ps = c.prepareStatement("SELECT partition_id, table_name, shard_id, slot_lo, slot_hi"
                         + " FROM partitions WHERE shard_id = ANY(?)")) {
                ps.setArray(1, c.createArrayOf("integer", shards.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        expected.add(rs.getInt(1));
                        if (rs.getString(2).equals("orders")) {
                            orderRows.put(rs.getInt(1), sqlCount(rs.getInt(3), rs.getInt(4), rs.getInt(5)));
                        }
                    }
                }
            }
            assertThat(orderRows).as("sample partitions on the node's shards").isNotEmpty();
            JsonNode[] doc = new JsonNode[1];
            await(() -> {
                doc[0] = replicasRoute(http, n);
                Map<Integer, JsonNode> listed = new TreeMap<>();
                doc[0].get("partitions").forEach(p -> listed.put(p.get("partition").asInt(), p));
                return listed.keySet().equals(expected) && orderRows.entrySet().stream().allMatch(e -> {
                    JsonNode p = listed.get(e.getKey());
                    return p.get("state").asText().equals("memory") && p.get("rows").asLong() == e.getValue();
                });
            }, () -> n.httpAddress() + " lists partitions " + expected + ", the sample's in memory with rows " + orderRows
                    + ": " + doc[0]);
            JsonNode d = doc[0];
            assertThat(d.get("budgetBytes").asLong()).isEqualTo(Cluster.REPLICAS.replicaMemoryBytes());
            assertThat(d.get("usedBytes").asLong()).isPositive().isLessThanOrEqualTo(d.get("budgetBytes").asLong());
            assertThat(d.has("readsFromMemory")).isTrue();
            assertThat(d.get("readsThroughSqlByReason").isObject()).isTrue();
            for (JsonNode p : d.get("partitions")) {
                if (orderRows.containsKey(p.get("partition").asInt())) {
                    assertThat(p.get("table").asText()).isEqualTo("orders");
                    assertThat(shards).contains(p.get("shard").asInt());
                    assertThat(p.get("rows").asLong()).as("rows of partition %s", p).isPositive();
                    assertThat(p.get("bytes").asLong()).as("bytes of partition %s", p).isPositive();
                    assertThat(p.get("appliedLsn").asText()).as("applied WAL position of %s", p).matches("[0-9A-F]+/[0-9A-F]+");
                }
            }
        }
    }

    private static JsonNode replicasRoute(HttpClient http, Node n) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(n.httpAddress() + "/admin/topology/replicas"))
                    .header("Authorization", "Bearer " + cluster.adminToken()).GET().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            return JSON.readTree(r.body());
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static long sqlCount(int shard, int lo, int hi) throws SQLException {
        try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM orders WHERE thresher_slot BETWEEN ? AND ?")) {
            ps.setInt(1, lo);
            ps.setInt(2, hi);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    // ---- the churn writers' model --------------------------------------------------------------------------------

    /** One row of the churn table as its writer knows it. */
    private static final class Row {
        final long id;
        String region;
        long amount;

        Row(long id, String region, long amount) {
            this.id = id;
            this.region = region;
            this.amount = amount;
        }
    }

    /** One churn partition as its only writer knows it: its rows, its version row, and new keys in its slot range. */
    private static final class PartitionModel {
        final Partition partition;
        final List<Row> rows = new ArrayList<>();
        final AtomicLong ids;
        long versionId;
        /** The seeded totals: row count at [2L], amount sum at [2L + 1], for a region of length L. */
        long[] expected;

        PartitionModel(Partition partition, long firstId) {
            this.partition = partition;
            this.ids = new AtomicLong(firstId);
        }

        long[] totals() {
            long[] t = new long[20];
            for (Row r : rows) {
                t[2 * r.region.length()]++;
                t[2 * r.region.length() + 1] += r.amount;
            }
            return t;
        }

        /**
         * Writes one transaction (uncommitted) that keeps every region's count and sum and sets the version row; returns
         * what to apply to the model once it committed.
         */
        Runnable change(Shards shards, Random random, long version) throws SQLException {
            int shard = partition.shardId();
            int op = random.nextInt(3);
            Runnable applied;
            if (op == 0) {
                String region = REGIONS.get(random.nextInt(REGIONS.size()));
                List<Row> of = rows.stream().filter(r -> r.region.equals(region)).toList();
                Row from = of.get(random.nextInt(of.size()));
                Row to = of.get(random.nextInt(of.size()));
                while (to == from) {
                    to = of.get(random.nextInt(of.size()));
                }
                long d = 1 + random.nextInt(50);
                shards.update(CHURN, shard, "amount = amount - " + d, from.id);
                shards.update(CHURN, shard, "amount = amount + " + d, to.id);
                Row f = from;
                Row t = to;
                applied = () -> {
                    f.amount -= d;
                    t.amount += d;
                };
            } else if (op == 1) {
                Row old = rows.get(random.nextInt(rows.size()));
                Row replacement = new Row(idIn(partition, ids), old.region, old.amount);
                shards.delete(CHURN, shard, old.id);
                shards.insert(CHURN, partition, replacement.id, replacement.region, replacement.amount);
                applied = () -> {
                    rows.remove(old);
                    rows.add(replacement);
                };
            } else {
                Row x = rows.get(random.nextInt(rows.size()));
                List<Row> others = rows.stream().filter(r -> !r.region.equals(x.region)).toList();
                Row y = others.get(random.nextInt(others.size()));
                shards.update(CHURN, shard, "region = '" + y.region + "', amount = " + y.amount, x.id);
                shards.update(CHURN, shard, "region = '" + x.region + "', amount = " + x.amount, y.id);
                String xRegion = x.region;
                long xAmount = x.amount;
                applied = () -> {
                    x.region = y.region;
                    x.amount = y.amount;
                    y.region = xRegion;
                    y.amount = xAmount;
                };
            }
            shards.update(CHURN, shard, "amount = " + version, versionId);
            return applied;
        }
    }

    // ---- helpers -----------------------------------------------------------------------------------------------

    /** One connection to each shard database of the shared cluster, as an application writing rows holds them. */
    private static final class Shards implements AutoCloseable {
        private final Map<Integer, Connection> connections = new TreeMap<>();

        Shards(DevCluster c) throws SQLException {
            for (int shard = 1; shard <= c.options().shards(); shard++) {
                connections.put(shard, DriverManager.getConnection(c.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD));
            }
        }

        /** Every statement from now on is in a transaction, committed by {@link #commit}. */
        void transactional() throws SQLException {
            for (Connection c : connections.values()) {
                c.setAutoCommit(false);
            }
        }

        void commit(int shard) throws SQLException {
            connections.get(shard).commit();
        }

        void insert(String table, Partition p, long id, String region, long amount) throws SQLException {
            try (PreparedStatement ps = connections.get(p.shardId()).prepareStatement(
                    "INSERT INTO " + table + " (id, region, amount, thresher_slot) VALUES (?, ?, ?, ?)")) {
                int slot = Slots.ofLong(id);
                if (slot < p.slotLo() || slot > p.slotHi()) {
                    throw new IllegalArgumentException("id " + id + " (slot " + slot + ") is not in partition " + p);
                }
                ps.setLong(1, id);
                ps.setString(2, region);
                ps.setDouble(3, amount);
                ps.setInt(4, slot);
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
        }

        void update(String table, int shard, String set, long id) throws SQLException {
            try (PreparedStatement ps = connections.get(shard).prepareStatement(
                    "UPDATE " + table + " SET " + set + " WHERE id = ? AND thresher_slot = ?")) {
                ps.setLong(1, id);
                ps.setInt(2, Slots.ofLong(id));
                assertThat(ps.executeUpdate()).as("rows of id %d updated", id).isEqualTo(1);
            }
        }

        void delete(String table, int shard, long id) throws SQLException {
            try (PreparedStatement ps = connections.get(shard).prepareStatement(
                    "DELETE FROM " + table + " WHERE id = ? AND thresher_slot = ?")) {
                ps.setLong(1, id);
                ps.setInt(2, Slots.ofLong(id));
                assertThat(ps.executeUpdate()).as("rows of id %d deleted", id).isEqualTo(1);
            }
        }

        @Override
        public void close() throws SQLException {
            for (Connection c : connections.values()) {
                c.close();
            }
        }
    }

    /** Partition reads the replicas were asked for, summed over every node: served from memory, and through SQL by reason. */
    private record Reads(long memory, Map<String, Long> sqlByReason) {
        long sql() {
            return sqlByReason.values().stream().mapToLong(Long::longValue).sum();
        }

        Reads minus(Reads earlier) {
            Map<String, Long> sql = new TreeMap<>(sqlByReason);
            earlier.sqlByReason.forEach((k, v) -> sql.merge(k, -v, Long::sum));
            sql.values().removeIf(v -> v == 0);
            return new Reads(memory - earlier.memory, sql);
        }
    }

    private static Reads reads(DevCluster c) {
        long memory = 0;
        Map<String, Long> sql = new TreeMap<>();
        for (Node n : c.nodes()) {
            for (ShardReplica r : n.replicas().values()) {
                ShardReplica.Reads reads = r.reads();
                memory += reads.memory();
                reads.sqlByReason().forEach((k, v) -> sql.merge(k, v, Long::sum));
            }
        }
        return new Reads(memory, sql);
    }

    /**
     * Waits until every candidate node holds each of {@code partitions} in memory: each node replicating a
     * partition's shard database lists it as {@code MEMORY}, and at least one node replicates it.
     */
    private static void awaitInMemory(DevCluster c, Collection<Partition> partitions) {
        awaitInMemory(c.nodes(), partitions);
    }

    /** As {@link #awaitInMemory(DevCluster, Collection)}, over {@code nodes}. */
    private static void awaitInMemory(List<Node> nodes, Collection<Partition> partitions) {
        Set<Integer> ids = partitions.stream().map(Partition::id).collect(Collectors.toSet());
        Map<String, String> notYet = new TreeMap<>();
        await(() -> {
            notYet.clear();
            Map<Integer, Integer> inMemory = new HashMap<>();
            for (Node n : nodes) {
                for (ShardReplica r : n.replicas().values()) {
                    for (ShardReplica.PartitionStatus s : r.status()) {
                        if (!ids.contains(s.partitionId())) {
                            continue;
                        }
                        if (s.state() == ShardReplica.State.MEMORY) {
                            inMemory.merge(s.partitionId(), 1, Integer::sum);
                        } else {
                            notYet.put(n.pgwireAddress() + " partition " + s.partitionId(), s.state() + " " + s.reason());
                        }
                    }
                }
            }
            ids.stream().filter(id -> !inMemory.containsKey(id)).forEach(id -> notYet.putIfAbsent("partition " + id,
                    "on no node's replica"));
            return notYet.isEmpty();
        }, () -> "partitions in memory on every node replicating them; not yet: " + notYet);
    }

    /**
     * Waits until every partition of this class's tables is led by a home node of its shard under its current epoch, as the nodes settle
     * after new partitions appear (a standby that took one first hands it back), so no leadership moves under the
     * tests.
     */
    private static void awaitHomeLeadership(DevCluster c) {
        long[] waiting = new long[1];
        await(() -> {
            try (Connection conn = DriverManager.getConnection(c.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = conn.createStatement(); ResultSet rs = s.executeQuery("""
                         SELECT count(*) FROM partitions p WHERE NOT EXISTS (
                           SELECT 1 FROM partition_leases l JOIN host_shards hs ON hs.host_id = l.host_id AND hs.home
                           WHERE l.partition_id = p.partition_id AND l.epoch = p.epoch AND l.lease_until > now()
                             AND hs.shard_id = p.shard_id)
                         AND p.table_name IN ('""" + FRESH + "', '" + CHURN + "')")) {
                rs.next();
                waiting[0] = rs.getLong(1);
                return waiting[0] == 0;
            } catch (SQLException e) {
                return false;
            }
        }, () -> waiting[0] + " partitions of " + FRESH + " and " + CHURN + " not led by a home node of their shard");
    }

    /**
     * Calls {@code binding} until it answers (the nodes have just learnt of its table), within the settle bound: only
     * a retryable refusal, or the binding not known yet to a node that has not read it (UNKNOWN_BINDING), is called
     * again; anything else fails at once.
     */
    private static void awaitCallable(DevCluster c, String binding) {
        List<String> refused = new ArrayList<>();
        Await.until(binding + " answering on " + c.nodes().get(0).hostId(),
                Duration.ofSeconds(SETTLE_SECONDS), Duration.ofMillis(100), () -> {
                    try (Connection pg = connect(c, 0)) {
                        return call(pg, binding);
                    } catch (SQLException e) {
                        if (String.valueOf(e.getMessage()).contains("thresher_code=1003 ")) {
                            throw e; // UNKNOWN_BINDING: the node's view has not caught up with the binding yet
                        }
                        refuse(refused, binding, e);
                        throw e;
                    }
                }, answer -> true);
    }

    /**
     * Records a refusal of a call that is being called again; fails at once on one that is not retryable (an error a
     * client must not retry), or when the refusals are more than a node settling after a restart could explain.
     */
    private static void refuse(List<String> refused, String binding, SQLException e) {
        if (!settling(e)) {
            throw new AssertionError(binding + " failed other than retryably, after refusals " + refused, e);
        }
        refused.add(e.getSQLState() + " " + String.valueOf(e.getMessage()).lines().findFirst().orElse(""));
        assertThat(refused).as("retryable refusals of %s while the nodes settle", binding)
                .hasSizeLessThanOrEqualTo(MAX_SETTLE_REFUSALS);
    }

    /**
     * Refusals a call may meet while a node settles (its pools reconnecting, its leases not taken yet), called again
     * 100 to 200 ms apart: a few seconds' worth, far fewer than the settle bound would allow.
     */
    private static final int MAX_SETTLE_REFUSALS = 50;

    /** A refusal a client retries: a stale target or a node not ready for the call yet, said retryable. */
    private static boolean settling(SQLException e) {
        return ("40001".equals(e.getSQLState()) || "57P03".equals(e.getSQLState()))
                && String.valueOf(e.getMessage()).contains("retry_class=RETRYABLE");
    }

    private static void await(BooleanSupplier condition, Supplier<String> what) {
        Await.until(what, Duration.ofSeconds(SETTLE_SECONDS), Duration.ofMillis(100), condition);
    }

    private static Integer activePid(Connection c, String slot) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT active_pid FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? (Integer) rs.getObject(1) : null;
            }
        }
    }

    private static List<String> slots(DevCluster c) {
        List<String> slots = new ArrayList<>();
        try (Connection conn = DriverManager.getConnection(c.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = conn.createStatement();
             ResultSet rs = s.executeQuery("SELECT slot_name, temporary, active_pid FROM pg_replication_slots")) {
            while (rs.next()) {
                slots.add(rs.getString(1) + (rs.getBoolean(2) ? " temporary" : "") + " pid " + rs.getObject(3));
            }
        } catch (SQLException e) {
            slots.add("unreadable: " + e.getMessage());
        }
        return slots;
    }

    private static Partition partitionOf(List<Partition> partitions, int slot) {
        return partitions.stream().filter(p -> slot >= p.slotLo() && slot <= p.slotHi()).findFirst()
                .orElseThrow(() -> new AssertionError("no partition holds slot " + slot));
    }

    /** The next id of {@code ids} whose slot is in {@code p}. */
    private static long idIn(Partition p, AtomicLong ids) {
        while (true) {
            long id = ids.incrementAndGet();
            int slot = Slots.ofLong(id);
            if (slot >= p.slotLo() && slot <= p.slotHi()) {
                return id;
            }
        }
    }

    private static void bind(ControlStore store, String name, String guest, String selector) {
        byte[] wasm = ContractGuests.wasm(guest);
        String digest = Component.of(wasm).digest();
        store.ensureTenant(DevCluster.TENANT);
        store.putPackage(digest, wasm);
        store.putBinding(DevCluster.TENANT, name, digest, selector);
    }

    private static PGSimpleDataSource dataSource(String url) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(url);
        ds.setUser(DevCluster.USER);
        ds.setPassword(DevCluster.PASSWORD);
        return ds;
    }

    private static Connection connect(DevCluster c, int node) throws SQLException {
        return connectTo(c.nodes().get(node));
    }

    private static Connection connectTo(Node node) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        return DriverManager.getConnection("jdbc:postgresql://" + node.pgwireAddress() + "/thresher", p);
    }

    private static JsonNode call(Connection pg, String binding) throws SQLException {
        try (Statement s = pg.createStatement(); ResultSet rs = s.executeQuery("CALL BINDING " + binding + "('{}')")) {
            if (!rs.next()) {
                throw new AssertionError("CALL BINDING " + binding + " returned no row");
            }
            try {
                return JSON.readTree(rs.getString(1));
            } catch (java.io.IOException e) {
                throw new AssertionError("CALL BINDING " + binding + " returned " + rs.getString(1), e);
            }
        }
    }

    /**
     * {@link #callRows} on {@code node}, called again every 200 ms while it is refused retryably (a node whose pools
     * reconnect, or whose leases are not taken yet), for up to {@value #SETTLE_SECONDS} s; a failure that is not
     * retryable fails at once.
     */
    private static long callRowsOnceAnswered(Node node, String binding) {
        List<String> refused = new ArrayList<>();
        long rows = Await.until(binding + " answering on " + node.hostId(),
                Duration.ofSeconds(SETTLE_SECONDS), Duration.ofMillis(200), () -> {
                    try (Connection pg = connectTo(node)) {
                        return callRows(pg, binding);
                    } catch (SQLException e) {
                        refuse(refused, binding, e);
                        throw e;
                    }
                }, answered -> true);
        System.out.printf("%s answered on %s after %d retryable refusals %s%n", binding, node.hostId(), refused.size(),
                refused);
        return rows;
    }

    private static long callRows(Connection pg, String binding) throws SQLException {
        JsonNode r = call(pg, binding);
        if (!r.has("rows")) {
            throw new AssertionError("CALL BINDING " + binding + " returned " + r);
        }
        return r.get("rows").asLong();
    }

    /**
     * The calls of a test that failed: retryably (TARGET_STALE, a lease moved on a loaded machine: nothing published)
     * or otherwise.
     */
    private static final class FailedCalls {
        private final ConcurrentLinkedQueue<String> other = new ConcurrentLinkedQueue<>();
        private final LongAdder retried = new LongAdder();

        void add(SQLException e) {
            if (retryable(e)) {
                retried.increment();
            } else {
                other.add(e.getSQLState() + " " + e.getMessage());
            }
        }

        /** Few enough failures other than retryable ones to keep calling. */
        boolean few() {
            return other.size() < 5;
        }

        /** None failed but retryably, and those fewer than a tenth of the calls answered (or 10). */
        void check(long answered) {
            assertThat(other).as("calls that failed other than retryably").isEmpty();
            assertThat(retried.sum()).as("calls refused retryably (TARGET_STALE: a lease moved) against calls answered")
                    .isLessThan(Math.max(10, answered / 10));
        }
    }

    /** A call refused as a client retries it: its partition's lease moved while it was out, nothing published. */
    private static boolean retryable(SQLException e) {
        return "40001".equals(e.getSQLState()) && String.valueOf(e.getMessage()).contains("TARGET_STALE");
    }
}
