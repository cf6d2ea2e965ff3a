package dev.thresher.store.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.store.control.TopologyStore.Lease;
import dev.thresher.store.control.TopologyStore.Led;
import dev.thresher.store.control.TopologyStore.Move;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * {@link TopologyStore} and {@link TopologyChanges} on a real PostgreSQL: the statements of the operator's topology
 * changes (transfers, drains, splits, moves, shards) and of the audit. Leadership itself ({@code acquireLeadership},
 * {@code releaseLeadership}) is guarded in {@code ControlStoreTest}'s leadership section. Every test works on ids of its
 * own (a shard with two hosts, partitions of a table of its own), so tests share one database.
 *
 * <p>Each test names, in a one-line comment, the statement or condition whose removal makes it fail.
 */
class TopologyStoreTest {
    private static final String TENANT = "acme";
    private static final long LEASE_MS = 30_000;
    private static final AtomicInteger ids = new AtomicInteger(1000);

    private static HikariDataSource pool;
    private static ControlStore control;
    private static TopologyStore topology;
    private static TopologyChanges audit;

    /** This test's shard, with hosts {@link #hostA} (home) and {@link #hostB} (home) registered on it. */
    private final int shard = fresh();
    private final String hostA = "host-a-" + shard;
    private final String hostB = "host-b-" + shard;
    private final String table = "t" + shard;

    @BeforeAll
    static void migrate() {
        pool = Pools.open("topology-store-test", TestPostgres.newDatabase(), null, null, 4);
        ControlStore.migrate(pool);
        control = new ControlStore(pool);
        topology = new TopologyStore(pool);
        audit = new TopologyChanges(pool);
        control.ensureTenant(TENANT);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    @BeforeEach
    void registerHosts() {
        topology.putShard(shard, "jdbc:postgresql://shard-" + shard + "/db");
        topology.registerHost(new Host(hostA, shard, "127.0.0.1", 7001), "127.0.0.1:5433", "http://127.0.0.1:8081");
        topology.registerHost(new Host(hostB, shard, "127.0.0.1", 7002), null, null);
        control.putTable(TENANT, table, "id", "bigint");
    }

    // ---- hosts ----------------------------------------------------------------------------------------------

    @Test
    void aNodeIsKnownByItsRegistrationAndItsAddresses() {
        // kills: hostExists' and addresses' WHERE host_id = ?
        assertThat(tuple(topology.hostExists(hostA), topology.hostExists("nobody-" + shard),
                topology.addresses(hostA), topology.addresses(hostB), topology.addresses("nobody-" + shard)))
                .isEqualTo(tuple(true, false, Optional.of(new TopologyStore.Addresses("127.0.0.1:5433",
                        "http://127.0.0.1:8081")), Optional.of(new TopologyStore.Addresses(null, null)), Optional.empty()));
        assertThat(topology.hostIds()).contains(hostA, hostB).isSorted();
    }

    @Test
    void liveCandidatesAreUndrainedLiveAndHomeFirstButTheOneExcepted() {
        // kills: liveCandidates' "NOT h.draining", its heartbeat window, "IS DISTINCT FROM ?" and "ORDER BY NOT hs.home"
        int other = newShard();
        String standby = "a-standby-" + other; // sorts before the home hosts: only the home-first order puts it last
        topology.registerHost(new Host(standby, other, "127.0.0.1", 7003), null, null, List.of(shard));
        assertThat(topology.liveCandidates(shard, LEASE_MS, null)).containsExactly(hostA, hostB, standby);
        assertThat(topology.liveCandidates(shard, LEASE_MS, hostA)).containsExactly(hostB, standby);
        topology.setDraining(hostB, true);
        exec("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id = ?", standby);
        assertThat(topology.liveCandidates(shard, LEASE_MS, null)).containsExactly(hostA);
        topology.setDraining(hostB, false);
        assertThat(topology.liveCandidates(shard, LEASE_MS, null)).containsExactly(hostA, hostB);
    }

    @Test
    void theHomeHostsOfAShardAreTheLiveOnesOrAll() {
        // kills: liveHomeHosts' heartbeat window and both "WHERE shard_id = ?"
        exec("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id = ?", hostB);
        assertThat(tuple(topology.liveHomeHosts(shard, 2 * LEASE_MS), topology.homeHosts(shard)))
                .isEqualTo(tuple(List.of(hostA), List.of(hostA, hostB)));
    }

    // ---- leases ---------------------------------------------------------------------------------------------

    @Test
    void aTransferOfAPartitionNeverLedWritesAnEndedLeaseNamingTheTarget() {
        // kills: askTransfer's INSERT (a partition without a lease row could not be handed to anyone)
        Partition p = partition(0, 16383);
        topology.askTransfer(p.id(), hostB, p.epoch());
        assertThat(topology.lease(p.id())).contains(new Lease(hostB, 1, false, hostB));
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).doesNotContain(p.id());
        assertThat(topology.acquireLeadership(hostB, shard, LEASE_MS)).contains(p.id());
    }

    @Test
    void aTransferOfALedPartitionOnlyNamesTheTarget() {
        // kills: askTransfer's "DO UPDATE SET transfer_to" touching anything else (the holder's lease would end early)
        Partition p = partition(0, 16383);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        topology.askTransfer(p.id(), hostB, p.epoch());
        assertThat(topology.lease(p.id())).contains(new Lease(hostA, 1, true, hostB));
    }

    @Test
    void aHostsLiveLeasesAreCountedAndListedWithTheirShard() {
        // kills: ledBy's and liveLeaseCount's "lease_until > now()" and "host_id = ?"
        Partition led = partition(0, 8191);
        Partition ended = partition(8192, 16383);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        exec("UPDATE partition_leases SET lease_until = now() - interval '1 second' WHERE partition_id = ?", ended.id());
        assertThat(tuple(topology.ledBy(hostA), topology.liveLeaseCount(hostA), topology.ledBy(hostB)))
                .isEqualTo(tuple(List.of(new Led(led.id(), shard)), 1L, List.of()));
    }

    @Test
    void aPartitionIsLeaderlessWithoutALiveLeaseUnderItsEpoch() {
        // kills: leaderless' "l.epoch = p.epoch" and "l.lease_until > now()", and its "= ANY (?)"
        Partition led = partition(0, 4095);
        Partition stale = partition(4096, 8191);
        Partition ended = partition(8192, 16383);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        exec("UPDATE partitions SET epoch = epoch + 1 WHERE partition_id = ?", stale.id());
        exec("UPDATE partition_leases SET lease_until = now() - interval '1 second' WHERE partition_id = ?", ended.id());
        assertThat(tuple(topology.leaderless(List.of(led.id())), topology.leaderless(List.of(stale.id(), ended.id())),
                topology.leaderless(List.of()))).isEqualTo(tuple(0L, 2L, 0L));
    }

    @Test
    void aPartitionLedByAStandbyIsNotLedFromHome() {
        // kills: partitionsNotLedFromHome's "hs.home" and "hs.shard_id = p.shard_id"
        Partition p = partition(0, 16383);
        long before = topology.partitionsNotLedFromHome();
        int other = newShard();
        String standby = "standby-" + other;
        topology.registerHost(new Host(standby, other, "127.0.0.1", 7003), null, null, List.of(shard));
        exec("INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until) VALUES (?, ?, 1,"
                + " now() + interval '1 minute')", p.id(), standby);
        long byStandby = topology.partitionsNotLedFromHome();
        exec("UPDATE partition_leases SET host_id = ? WHERE partition_id = ?", hostA, p.id());
        assertThat(tuple(byStandby - before, topology.partitionsNotLedFromHome() - before)).isEqualTo(tuple(0L, -1L));
    }

    // ---- partitions -----------------------------------------------------------------------------------------

    @Test
    void aSplitMakesTwoPartitionsAtTheNextEpochAndTheLeaseCoversBoth() {
        // kills: split's epoch bump, its INSERT of the new partition, and the lease's move to the new epoch and copy
        Partition p = partition(0, 16383);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        int newId = topology.split(p, 100);
        assertThat(List.of(topology.partition(p.id()).orElseThrow(), topology.partition(newId).orElseThrow()))
                .containsExactly(new Partition(p.id(), TENANT, table, 0, 99, shard, 2),
                        new Partition(newId, TENANT, table, 100, 16383, shard, 2));
        assertThat(tuple(topology.lease(p.id()).map(Lease::epoch), topology.lease(newId).map(Lease::host),
                topology.partitionCount(TENANT, table))).isEqualTo(tuple(Optional.of(2L), Optional.of(hostA), 2L));
    }

    @Test
    void aSplitOfAPartitionChangedSinceItWasPlannedIsStaleAndWritesNothing() {
        // kills: split's check of the locked row against the planned one
        Partition p = partition(0, 16383);
        exec("UPDATE partitions SET epoch = 5 WHERE partition_id = ?", p.id());
        assertThatThrownBy(() -> topology.split(p, 100)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.TARGET_STALE));
        assertThat(topology.partitionCount(TENANT, table)).isEqualTo(1);
    }

    @Test
    void aSplitThatWouldNotTileIsRolledBack() {
        // kills: split's tiling check and its one transaction (the new partition would stay, overlapping)
        Partition p = partition(0, 8191);
        partition(8192, 16383);
        exec("UPDATE partitions SET slot_hi = 9000 WHERE partition_id = ?", p.id()); // overlapping the other already
        Partition planned = new Partition(p.id(), TENANT, table, 0, 9000, shard, 1);
        assertThatThrownBy(() -> topology.split(planned, 100)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE));
        assertThat(tuple(topology.partitionCount(TENANT, table), topology.partition(p.id()).orElseThrow().epoch()))
                .isEqualTo(tuple(2L, 1L));
    }

    @Test
    void thereIsNoSuchPartitionToSplit() {
        // kills: lockPartition's "there is no partition" (a split of a deleted partition would insert half of it)
        Partition gone = new Partition(fresh(), TENANT, table, 0, 16383, shard, 1);
        assertThatThrownBy(() -> topology.split(gone, 100)).hasMessage("there is no partition " + gone.id())
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
    }

    // ---- moves ----------------------------------------------------------------------------------------------

    @Test
    void aMoveIsRecordedThroughItsPhasesAndForgotten() {
        // kills: startMove's, setMovePhase's, moveVerified's and endMove's statements
        Partition p = partition(0, 16383);
        int to = newShard();
        long change = audit.start("test", "partition move", false).changeId();
        topology.startMove(p.id(), shard, to, p.epoch(), change);
        Move copying = topology.move(p.id()).orElseThrow();
        topology.setMovePhase(p.id(), "verify");
        String verifying = topology.move(p.id()).orElseThrow().phase();
        topology.moveVerified(p.id(), 42, "123");
        String verified = topology.move(p.id()).orElseThrow().phase();
        long ofShard = topology.movesOfShard(to);
        topology.endMove(p.id());
        assertThat(tuple(copying, verifying, verified, ofShard, topology.move(p.id()), topology.movesOfShard(to)))
                .isEqualTo(tuple(new Move(p.id(), shard, to, "copy", 1), "verify", "cutover", 1L, Optional.empty(), 0L));
    }

    @Test
    void theCutoverPutsThePartitionOnItsNewShardAtANewEpochWithoutALeaseOnce() {
        // kills: cutover's UPDATE of partitions, its DELETE of the lease, its phase, and "locked.shardId() == from"
        Partition p = partition(0, 16383);
        int to = newShard();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        long change = audit.start("test", "partition move", false).changeId();
        topology.startMove(p.id(), shard, to, p.epoch(), change);
        Move m = topology.move(p.id()).orElseThrow();
        long first = topology.cutover(m, () -> {});
        long again = topology.cutover(m, () -> {});
        assertThat(tuple(first, again, topology.partition(p.id()).orElseThrow().shardId(), topology.lease(p.id()),
                topology.move(p.id()).orElseThrow().phase())).isEqualTo(tuple(2L, 2L, to, Optional.empty(), "cleanup"));
    }

    @Test
    void aCutoverThatFailsBeforeItsCommitLeavesNothingWritten() {
        // kills: the cutover's one transaction (a crash before its commit would leave the partition half moved)
        Partition p = partition(0, 16383);
        int to = newShard();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        long change = audit.start("test", "partition move", false).changeId();
        topology.startMove(p.id(), shard, to, p.epoch(), change);
        Move m = topology.move(p.id()).orElseThrow();
        assertThatThrownBy(() -> topology.cutover(m, () -> {
            throw new IllegalStateException("halted");
        })).hasMessage("halted");
        assertThat(tuple(topology.partition(p.id()), topology.lease(p.id()).map(Lease::host),
                topology.move(p.id()).orElseThrow().phase()))
                .isEqualTo(tuple(Optional.of(p), Optional.of(hostA), "copy"));
    }

    // ---- shards ---------------------------------------------------------------------------------------------

    @Test
    void aShardIsFoundByNameIdOrUrl() {
        // kills: shardByNameOrId's "OR shard_id::text = ?", shardNamed's and shardWithUrl's WHERE
        int id = nextFreeShard();
        topology.addShard(id, "jdbc:postgresql://named-" + id + "/db", "named-" + id);
        assertThat(tuple(topology.shardByNameOrId("named-" + id), topology.shardByNameOrId(Integer.toString(id)),
                topology.shardNamed("named-" + id), topology.shardWithUrl("jdbc:postgresql://named-" + id + "/db"),
                topology.shardByNameOrId("nothing-" + id)))
                .isEqualTo(tuple(Optional.of(id), Optional.of(id), Optional.of(id), Optional.of(id), Optional.empty()));
        assertThat(topology.shardLabels()).contains(id + " (named-" + id + ")");
        assertThat(topology.nextShardId()).isEqualTo(id + 1);
    }

    @Test
    void removingAShardForgetsItsStoppedNodesTheirEndedLeasesAndCandidacies() {
        // kills: removeShard's DELETEs (ended leases first: hosts could not be deleted under them)
        int gone = newShard();
        String stopped = "stopped-" + gone;
        topology.registerHost(new Host(stopped, gone, "127.0.0.1", 7004), null, null, List.of(shard));
        Partition p = partition(0, 16383);
        exec("INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until) VALUES (?, ?, 1,"
                + " now() - interval '1 minute')", p.id(), stopped);
        topology.removeShard(gone);
        assertThat(tuple(topology.hostExists(stopped), topology.lease(p.id()), topology.shardByNameOrId(
                Integer.toString(gone)), count("SELECT count(*) FROM host_shards WHERE host_id = '" + stopped + "'")))
                .isEqualTo(tuple(false, Optional.empty(), Optional.empty(), 0L));
        assertThat(topology.partitionCountOnShard(shard)).isEqualTo(1);
    }

    // ---- the audit ------------------------------------------------------------------------------------------

    @Test
    void aChangeIsRecordedRunningThenWithItsOutcomeAndSteps() {
        // kills: finish's UPDATE and latest's "ORDER BY change_id DESC"
        TopologyChanges.Started a = audit.start("alice", "node drain x", true);
        TopologyChanges.Started b = audit.start("bob", "node undrain x", false);
        audit.finish(a.changeId(), "planned", "one\ntwo");
        List<TopologyChanges.Recorded> latest = audit.latest(2);
        assertThat(latest).extracting(TopologyChanges.Recorded::changeId, TopologyChanges.Recorded::outcome,
                        TopologyChanges.Recorded::detail, TopologyChanges.Recorded::requestedBy)
                .containsExactly(tuple(b.changeId(), "running", null, "bob"),
                        tuple(a.changeId(), "planned", "one\ntwo", "alice"));
        assertThat(latest.get(1).requestedAt()).isEqualTo(a.requestedAt());
    }

    @Test
    void anInterruptedMovesChangeIsRecordedFailedOnlyWhileStillRunning() {
        // kills: interruptedMove's "AND outcome = 'running'" and its appended detail
        Partition p = partition(0, 16383);
        int to = newShard();
        long first = audit.start("alice", "partition move", false).changeId();
        audit.finish(first, "running", "copied 3 rows");
        topology.startMove(p.id(), shard, to, p.epoch(), first);
        long second = audit.start("bob", "partition move", false).changeId();
        audit.interruptedMove(p.id(), second);
        topology.resumeMove(p.id(), second);
        long third = audit.start("carol", "partition move", false).changeId();
        audit.finish(second, "succeeded", "done");
        audit.interruptedMove(p.id(), third);
        List<TopologyChanges.Recorded> latest = audit.latest(3);
        assertThat(latest).extracting(TopologyChanges.Recorded::outcome, TopologyChanges.Recorded::detail)
                .containsExactly(tuple("running", null), tuple("succeeded", "done"),
                        tuple("failed", "copied 3 rows\ninterrupted; resumed by change " + second));
    }

    // ---- error mapping --------------------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("everyStatement")
    void aStatementAgainstAnUnreachableDatabaseIsStoreUnavailable(Consumer<TopologyStore> statement) {
        // kills: a statement run on a connection of its own instead of through ControlSql (its failure untyped)
        TopologyStore unreachable = new TopologyStore(unreachable());
        assertThatThrownBy(() -> statement.accept(unreachable))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE))
                .hasMessageStartingWith("control database: ")
                .hasCauseInstanceOf(SQLException.class);
    }

    /** Every public statement of TopologyStore. */
    static Stream<Named<Consumer<TopologyStore>>> everyStatement() {
        Partition p = new Partition(1, TENANT, "t", 0, 16383, 1, 1);
        Move m = new Move(1, 1, 2, "cutover", 1);
        List<Named<Consumer<TopologyStore>>> all = new ArrayList<>(List.of(
                Named.of("registerHost", s -> s.registerHost(new Host("h", 1, "127.0.0.1", 1), null, null)),
                Named.of("acquireLeadership", s -> s.acquireLeadership("h", LEASE_MS)),
                Named.of("releaseLeases", s -> s.releaseLeases("h", List.of(1))),
                Named.of("releaseLeadership", s -> s.releaseLeadership("h")),
                Named.of("readTopology", TopologyStore::readTopology),
                Named.of("readTopologyVersion", TopologyStore::readTopologyVersion),
                Named.of("addresses", s -> s.addresses("h")),
                Named.of("hostExists", s -> s.hostExists("h")),
                Named.of("hostIds", TopologyStore::hostIds),
                Named.of("setDraining", s -> s.setDraining("h", true)),
                Named.of("liveCandidates", s -> s.liveCandidates(1, LEASE_MS, null)),
                Named.of("liveHomeHosts", s -> s.liveHomeHosts(1, LEASE_MS)),
                Named.of("homeHosts", s -> s.homeHosts(1)),
                Named.of("lease", s -> s.lease(1)),
                Named.of("askTransfer", s -> s.askTransfer(1, "h", 1)),
                Named.of("ledBy", s -> s.ledBy("h")),
                Named.of("liveLeaseCount", s -> s.liveLeaseCount("h")),
                Named.of("leaderless", s -> s.leaderless(List.of(1))),
                Named.of("partitionsNotLedFromHome", TopologyStore::partitionsNotLedFromHome)));
        all.addAll(List.of(
                Named.of("partition", s -> s.partition(1)),
                Named.of("partitionCount", s -> s.partitionCount(TENANT, "t")),
                Named.of("partitionCountOnShard", s -> s.partitionCountOnShard(1)),
                Named.of("split", s -> s.split(p, 100)),
                Named.of("move", s -> s.move(1)),
                Named.of("startMove", s -> s.startMove(1, 1, 2, 1, 1)),
                Named.of("resumeMove", s -> s.resumeMove(1, 1)),
                Named.of("setMovePhase", s -> s.setMovePhase(1, "verify")),
                Named.of("moveVerified", s -> s.moveVerified(1, 1, "1")),
                Named.of("endMove", s -> s.endMove(1)),
                Named.of("movesOfShard", s -> s.movesOfShard(1)),
                Named.of("cutover", s -> s.cutover(m, () -> {})),
                Named.of("putShard", s -> s.putShard(1, "jdbc:postgresql://x/db")),
                Named.of("addShard", s -> s.addShard(1, "jdbc:postgresql://x/db", "x")),
                Named.of("shardWithUrl", s -> s.shardWithUrl("jdbc:postgresql://x/db")),
                Named.of("shardNamed", s -> s.shardNamed("x")),
                Named.of("shardByNameOrId", s -> s.shardByNameOrId("x")),
                Named.of("nextShardId", TopologyStore::nextShardId),
                Named.of("shardLabels", TopologyStore::shardLabels),
                Named.of("removeShard", s -> s.removeShard(1))));
        return all.stream();
    }

    // ---- fixtures -------------------------------------------------------------------------------------------

    private static int fresh() {
        return ids.incrementAndGet();
    }

    private static int newShard() {
        int id = fresh();
        topology.putShard(id, "jdbc:postgresql://shard-" + id + "/db");
        return id;
    }

    /** A shard id above every one registered, so the next one allocated is known. */
    private static synchronized int nextFreeShard() {
        int id = Math.max(fresh(), topology.nextShardId());
        ids.set(id + 10);
        return id;
    }

    /** A new partition of this test's table and shard, at epoch 1, old enough for any candidate to take. */
    private Partition partition(int slotLo, int slotHi) {
        Partition p = new Partition(fresh(), TENANT, table, slotLo, slotHi, shard, 1);
        control.putPartition(p);
        exec("UPDATE partitions SET created_at = now() - interval '1 hour' WHERE partition_id = ?", p.id());
        return p;
    }

    private static void exec(String sql, Object... args) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static long count(String sql) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql);
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A data source whose database is not there: nothing listens on its port. */
    private static DataSource unreachable() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setServerNames(new String[] {"127.0.0.1"});
        try (ServerSocket s = new ServerSocket(0)) {
            ds.setPortNumbers(new int[] {s.getLocalPort()});
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ds.setDatabaseName("postgres");
        ds.setUser("postgres");
        ds.setConnectTimeout(2);
        return ds;
    }
}
