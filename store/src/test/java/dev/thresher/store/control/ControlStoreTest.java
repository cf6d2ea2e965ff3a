package dev.thresher.store.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.store.control.CallJournal.ReduceStart;
import dev.thresher.store.control.CallJournal.ShardRunFence;
import dev.thresher.store.control.CallJournal.ShardRunPublication;
import dev.thresher.store.control.CallJournal.ShardRunPublished;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Proxy;
import java.net.ServerSocket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
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
 * {@link ControlStore} on a real PostgreSQL, one guard at a time: chiefly its call journal ({@link CallJournal} and its
 * {@link ShardRunPublisher}), and the leadership statements of {@link TopologyStore}. Every test works on ids of its own
 * (a shard with two hosts, partitions, bindings and calls created for it), so tests share one
 * database and never see each other's rows. A lease is made to end by writing it into the past, or
 * by taking it for 1 ms and waiting for the database clock to pass it; no assertion waits on a sleep.
 *
 * <p>Each test names, in a one-line comment, the guard of those stores (an SQL condition or a
 * branch) whose removal makes it fail.
 */
class ControlStoreTest {
    private static final String TENANT = "acme";
    private static final String TABLE = "orders";
    private static final String DIGEST = "sha256:" + "cd".repeat(32);
    private static final String SELECTOR = "SELECT region, amount FROM orders";
    private static final String SELECTOR_2 = "SELECT region FROM orders";
    private static final long LEASE_MS = 30_000;
    private static final long RETENTION_MS = 600_000;
    private static final Duration CLOCK_WAIT = Duration.ofSeconds(5);
    private static final AtomicInteger ids = new AtomicInteger(1000);

    private static HikariDataSource pool;
    private static ControlStore store;
    private static CallJournal calls;
    private static TopologyStore topology;

    /** This test's shard, with hosts {@link #hostA} and {@link #hostB} registered on it. */
    private final int shard = fresh();
    private final String hostA = "host-a-" + shard;
    private final String hostB = "host-b-" + shard;

    @BeforeAll
    static void migrate() {
        pool = Pools.open("control-store-test", TestPostgres.newDatabase(), null, null, 4);
        ControlStore.migrate(pool);
        store = new ControlStore(pool);
        calls = store.calls();
        topology = new TopologyStore(pool);
        store.ensureTenant(TENANT);
        store.putPackage(DIGEST, new byte[] {0, 'a', 's', 'm'});
        store.putTable(TENANT, TABLE, "id", "bigint");
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    @BeforeEach
    void registerHosts() {
        store.putShard(shard, "jdbc:postgresql://shard-" + shard + "/db");
        topology.registerHost(new Host(hostA, shard, "127.0.0.1", 7001), null, null);
        topology.registerHost(new Host(hostB, shard, "127.0.0.1", 7002), null, null);
    }

    // ---- plans -------------------------------------------------------------------------------------

    @Test
    void aCallsSlotsAreReadByKeyEvenByAPlanMadeWhileTheTablesWereSmall() throws SQLException {
        // kills: joining the journal and partitions in READ_SHARD_RUNS, whose plan cached while the tables were small
        // scanned the whole journal on every reduce once it had grown (1.4 ms a call at 20,000 journal rows)
        String plan = genericPlan(List.of(
                "INSERT INTO partitions (partition_id, tenant, table_name, slot_lo, slot_hi, shard_id) "
                        + "SELECT g, 't', 'orders', g, g, 1 FROM generate_series(0, 15) g",
                "INSERT INTO journal (tenant, wire_id, call_id, kind, host_id, succeeded, payload, guest_micros) "
                        + "SELECT 't', 'w' || g, gen_random_uuid(), 'shard', 'h', true, '\\x00', 1 FROM generate_series(1, 160) g",
                "INSERT INTO shard_runs (call_id, run_index, tenant, partition_id, epoch, wire_id, host_id, "
                        + "row_count, emit_count, entry_count, lease_until) SELECT ('00000000-0000-0000-0000-'"
                        + " || lpad((g / 16)::text, 12, '0'))::uuid, g % 16, 't', g % 16, 1, 'w' || g, 'h', 0, 0, 0, now() "
                        + "FROM generate_series(1, 160) g"),
                CallJournal.READ_SHARD_RUNS);
        assertThat(plan).as(plan).doesNotContain("Seq Scan on journal").contains("journal_pkey");
    }

    @Test
    void aSlotPublicationLooksUpItsCallsDeadlineByKeyEvenByAPlanMadeWhileTheTableWasSmall() throws SQLException {
        // kills: judging the deadline by a semi-join of invocations with the outcomes, whose plan made while the table
        // was small scanned every invocation on each publication (0.3 ms of a 0.6 ms statement at 3,000 invocations)
        String plan = genericPlan(List.of(
                "INSERT INTO invocations (call_id, tenant, binding_name, binding_version, package_digest, principal, "
                        + "coordinator_host, state, shard_count, deadline_at) SELECT gen_random_uuid(), 't', 'b', 1, 'd', "
                        + "'p', 'h', 'running', 16, now() FROM generate_series(1, 40) g"),
                ShardRunPublisher.journalAndPublishShardRunsSql(3));
        assertThat(plan).as(plan).doesNotContain("Seq Scan on invocations").contains("invocations_pkey");
    }

    /**
     * The generic plan PostgreSQL makes for {@code statement} in a fresh control database holding only the rows
     * {@code inserts} write, as a cluster holds right after it started: never analyzed, a page or two each, no
     * references checked.
     */
    private static String genericPlan(List<String> inserts, String statement) throws SQLException {
        try (HikariDataSource fresh = Pools.open("control-store-plan-test", TestPostgres.newDatabase(), null, null, 2)) {
            ControlStore.migrate(fresh);
            try (Connection c = fresh.getConnection(); java.sql.Statement s = c.createStatement()) {
                s.execute("SET session_replication_role = replica");
                for (String insert : inserts) {
                    s.execute(insert);
                }
                s.execute("RESET session_replication_role");
                return TestPostgres.genericPlan(s, statement);
            }
        }
    }

    // ---- partitions -------------------------------------------------------------------------------

    @Test
    void aTablesPartitionsAreWrittenAsOneSetThatTilesOrNotAtAll() {
        // kills: putTablePartitions' tiling check, its check for partitions already there, its one transaction
        String table = "tiled_" + fresh();
        store.putTable(TENANT, table, "id", "bigint");
        int a = fresh();
        int b = fresh();
        int c = fresh();
        java.util.function.Function<int[], List<Partition>> set = ranges -> {
            List<Partition> out = new java.util.ArrayList<>();
            int[] ids = {a, b, c};
            for (int i = 0; i < ranges.length / 2; i++) {
                out.add(new Partition(ids[i], TENANT, table, ranges[2 * i], ranges[2 * i + 1], shard, 1));
            }
            return out;
        };
        assertThatThrownBy(() -> store.putTablePartitions(TENANT, table, set.apply(new int[] {0, 999, 2000, 16383})))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE);
                    assertThat(e.getMessage()).contains("slots 1000..1999 are in no partition");
                });
        assertThatThrownBy(() -> store.putTablePartitions(TENANT, table, set.apply(new int[] {0, 999, 900, 16383})))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE);
                    assertThat(e.getMessage()).contains("both hold slots 900..999");
                });
        assertThat(store.readTopology().partitionsOf(TENANT, table)).as("nothing written").isEmpty();

        store.putTablePartitions(TENANT, table, set.apply(new int[] {0, 999, 1000, 8191, 8192, 16383}));
        assertThat(store.readTopology().partitionsOf(TENANT, table)).extracting(Partition::id).containsExactly(a, b, c);
        assertThatThrownBy(() -> store.putTablePartitions(TENANT, table, List.of(
                new Partition(fresh(), TENANT, table, 0, 16383, shard, 1))))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE));
        assertThat(store.readTopology().partitionsOf(TENANT, table)).hasSize(3);
    }

    // ---- leadership (TopologyStore) ----------------------------------------------------------------

    @Test
    void aFreePartitionIsTaken() {
        // kills: the INSERT branch of acquireLeadership (a partition without a lease row gets one)
        Partition p = partition();
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).containsExactly(p.id());
    }

    @Test
    void aPartitionBeingDeletedIsSkippedNotWaitedForNorLeased() throws Exception {
        // a table being dropped locks its partitions' rows first: a lease keeper meanwhile neither waits for them
        // nor takes a lease that would then stop their deletion
        Partition kept = partition();
        Partition dropped = partition();
        try (java.sql.Connection drop = pool.getConnection()) {
            drop.setAutoCommit(false);
            try (java.sql.PreparedStatement lock = drop.prepareStatement(
                    "SELECT partition_id FROM partitions WHERE partition_id = ? FOR UPDATE")) {
                lock.setInt(1, dropped.id());
                lock.executeQuery().close();
            }
            // bounded: a keeper that waited for the locked row would hang here until the drop ends
            java.util.concurrent.CompletableFuture<List<Integer>> taken =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> topology.acquireLeadership(hostA, shard, LEASE_MS));
            try {
                assertThat(taken.get(10, java.util.concurrent.TimeUnit.SECONDS)).containsExactly(kept.id());
            } catch (java.util.concurrent.TimeoutException e) {
                drop.rollback();
                throw new AssertionError("the lease keeper waited for a partition row locked for deletion", e);
            }
            try (java.sql.PreparedStatement del = drop.prepareStatement("DELETE FROM partitions WHERE partition_id = ?")) {
                del.setInt(1, dropped.id());
                assertThat(del.executeUpdate()).isEqualTo(1);
            }
            drop.commit();
        }
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).containsExactly(kept.id());
    }

    @Test
    void aLiveLeaseOfAnotherHostIsLeftAlone() {
        // kills: acquireLeadership's ON CONFLICT ... WHERE (without it any host takes a live lease)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        List<Integer> ledByB = topology.acquireLeadership(hostB, shard, LEASE_MS);
        assertThat(tuple(ledByB, lease(p))).isEqualTo(tuple(List.of(), Optional.of(new Lease(hostA, 1))));
    }

    @Test
    void aLeaseTakenWhileARenewalWaitedForItsRowIsLeftToItsNewHolder() throws Exception {
        // kills: acquireLeadership's ON CONFLICT ... WHERE: the renewal's snapshot saw its own lease, but another host
        // took the row meanwhile (locked until that commit); without the check on the row it waited for, the renewal
        // overwrites a live lease of another host
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        java.util.concurrent.ExecutorService renewal = java.util.concurrent.Executors.newSingleThreadExecutor();
        try (Connection other = pool.getConnection(); Connection watch = pool.getConnection()) {
            other.setAutoCommit(false);
            try (PreparedStatement take = other.prepareStatement("UPDATE partition_leases SET host_id = ?,"
                    + " lease_until = now() + interval '1 hour' WHERE partition_id = ?")) {
                take.setString(1, hostB);
                take.setInt(2, p.id());
                assertThat(take.executeUpdate()).isEqualTo(1);
            }
            java.util.concurrent.Future<List<Integer>> renewed =
                    renewal.submit(() -> topology.acquireLeadership(hostA, shard, LEASE_MS));
            long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (!waitingForARow(watch)) {
                assertThat(renewed.isDone()).as("the renewal ended without waiting for the row another host holds").isFalse();
                assertThat(System.nanoTime()).as("the renewal waiting for the lease's row within 10 s").isLessThan(until);
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
            }
            other.commit();
            assertThat(renewed.get(10, java.util.concurrent.TimeUnit.SECONDS)).doesNotContain(p.id());
        } finally {
            renewal.shutdownNow();
        }
        assertThat(lease(p)).contains(new Lease(hostB, 1));
    }

    /** Whether a session of the database waits for another transaction (a row it holds). */
    private static boolean waitingForARow(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1) > 0;
        }
    }

    @Test
    void anExpiredLeaseIsTakenOverByTheNewHolderUnderANewEpoch() {
        // kills: acquireLeadership's "OR partition_leases.lease_until < now()" and the bumped CTE (a takeover from
        // another holder moves the partition to a new epoch, so the old holder's runs can never publish)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        bumpEpoch(p);
        expirePartitionLease(p);
        topology.acquireLeadership(hostB, shard, LEASE_MS);
        assertThat(lease(p)).contains(new Lease(hostB, 3));
        assertThat(store.readTopology().partition(p.id()).orElseThrow().epoch()).isEqualTo(3);
    }

    @Test
    void theSameHolderRetakingItsExpiredLeaseKeepsTheEpoch() {
        // kills: the bumped CTE's "e.holder <> ?" (every renewal would move the epoch)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        expirePartitionLease(p);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        assertThat(lease(p)).contains(new Lease(hostA, 1));
    }

    @Test
    void aStandbyTakesAFreeLeaseOnlyWhileNoHomeCandidateIsLive() {
        // kills: acquireLeadership's "hs.home OR NOT EXISTS (live home candidate)" (a standby would race the home
        // node for every new partition) and its heartbeat window (a dead home would keep its partitions leaderless)
        int otherShard = newShard();
        String standby = "standby-" + otherShard;
        topology.registerHost(new Host(standby, otherShard, "127.0.0.1", 7003), null, null, List.of(shard));
        liveForAnHour(standby);
        Partition p = partition();
        exec("UPDATE partitions SET created_at = now() - interval '1 hour' WHERE partition_id = ?", p.id());
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).doesNotContain(p.id());
        exec("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id IN (?, ?)", hostA, hostB);
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).contains(p.id());
    }

    @Test
    void aStandbyTakesNoFreeLeaseUntilItHasItselfBeenLiveForALease() {
        // kills: acquireLeadership's "me.live_since < now() - lease" (after an outage of the control database every
        // heartbeat is stale: a standby renewing first would take its home nodes' partitions, then hand them back)
        int otherShard = newShard();
        String standby = "standby-" + otherShard;
        topology.registerHost(new Host(standby, otherShard, "127.0.0.1", 7003), null, null, List.of(shard));
        Partition p = partition();
        exec("UPDATE partitions SET created_at = now() - interval '1 hour' WHERE partition_id = ?", p.id());
        exec("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id IN (?, ?, ?)", hostA, hostB, standby);
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).as("back after a gap").doesNotContain(p.id());
        liveForAnHour(standby);
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).as("live for a lease").contains(p.id());
    }

    /** Makes {@code host} live without a gap for the last hour (a standby that has run all along). */
    private static void liveForAnHour(String host) {
        exec("UPDATE hosts SET heartbeat_at = now(), live_since = now() - interval '1 hour' WHERE host_id = ?", host);
    }

    @Test
    void aStandbyLeavesAPartitionNeverLedAndYoungerThanTwoLeasesToItsHomeNodeStartingLater() {
        // kills: acquireLeadership's "p.created_at < now() - 2 leases" (a standby starting first would take every
        // partition of a home node that starts a moment later)
        int otherShard = newShard();
        String standby = "standby-" + otherShard;
        topology.registerHost(new Host(standby, otherShard, "127.0.0.1", 7003), null, null, List.of(shard));
        liveForAnHour(standby);
        exec("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id IN (?, ?)", hostA, hostB);
        Partition p = partition();
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).doesNotContain(p.id());
        exec("UPDATE partitions SET created_at = now() - interval '1 hour' WHERE partition_id = ?", p.id());
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).contains(p.id());
    }

    @Test
    void aStandbyHandsLeadershipBackOnceAHomeCandidateHasBeenLiveForALease() {
        // kills: the renewal's "hs.home OR NOT EXISTS (settled home)" (failback) and "settled" (a home node that just
        // came back would take leadership at once, and flap with it)
        int otherShard = newShard();
        String standby = "standby-" + otherShard;
        topology.registerHost(new Host(standby, otherShard, "127.0.0.1", 7003), null, null, List.of(shard));
        liveForAnHour(standby);
        exec("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id IN (?, ?)", hostA, hostB);
        Partition p = partition();
        exec("UPDATE partitions SET created_at = now() - interval '1 hour' WHERE partition_id = ?", p.id());
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).contains(p.id());
        exec("UPDATE hosts SET heartbeat_at = now(), live_since = now() WHERE host_id = ?", hostA); // just back
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).contains(p.id());
        exec("UPDATE hosts SET live_since = now() - interval '1 hour' WHERE host_id = ?", hostA); // settled
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).doesNotContain(p.id());
        expirePartitionLease(p);
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).contains(p.id());
        assertThat(lease(p)).contains(new Lease(hostA, 2));
    }

    @Test
    void aDrainingHostNeitherTakesNorRenewsAndItsStandbyTakesOver() {
        // kills: acquireLeadership's "NOT me.draining" and the home check's "NOT oh.draining"
        int otherShard = newShard();
        String standby = "standby-" + otherShard;
        topology.registerHost(new Host(standby, otherShard, "127.0.0.1", 7003), null, null, List.of(shard));
        liveForAnHour(standby);
        exec("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id = ?", hostB);
        Partition p = partition();
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).contains(p.id());
        exec("UPDATE hosts SET draining = true WHERE host_id = ?", hostA);
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).doesNotContain(p.id());
        expirePartitionLease(p);
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).isEmpty();
        assertThat(topology.acquireLeadership(standby, shard, LEASE_MS)).contains(p.id());
        assertThat(lease(p)).contains(new Lease(standby, 2));
    }

    @Test
    void aTransferStopsTheHoldersRenewalsAndOnlyTheNamedHostTakesTheEndedLease() {
        // kills: acquireLeadership's "l.transfer_to IS NULL" on renewal and "l.transfer_to = ?" on taking
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        exec("UPDATE partition_leases SET transfer_to = ? WHERE partition_id = ?", hostB, p.id());
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).doesNotContain(p.id());
        expirePartitionLease(p);
        assertThat(topology.acquireLeadership(hostA, shard, LEASE_MS)).doesNotContain(p.id());
        assertThat(topology.acquireLeadership(hostB, shard, LEASE_MS)).contains(p.id());
        assertThat(lease(p)).contains(new Lease(hostB, 2));
    }

    @Test
    void theHolderRenewsItsOwnLease() {
        // kills: acquireLeadership's "partition_leases.host_id = EXCLUDED.host_id" (the holder could not renew)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, 60_000);
        Timestamp before = partitionLeaseUntil(p);
        topology.acquireLeadership(hostA, shard, 600_000);
        assertThat(partitionLeaseUntil(p)).isAfter(before);
    }

    @Test
    void releaseFreesTheHostsLeasesForAnotherHostAtOnce() {
        // kills: releaseLeadership's DELETE (the successor would have to wait for expiry)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        topology.releaseLeadership(hostA);
        assertThat(topology.acquireLeadership(hostB, shard, LEASE_MS)).containsExactly(p.id());
    }

    @Test
    void releaseLeavesOtherHostsLeasesAlone() {
        // kills: releaseLeadership's "WHERE host_id = ?"
        Partition mine = partition();
        int otherShard = newShard();
        Partition theirs = partitionOn(otherShard);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        candidate(hostB, otherShard);
        topology.acquireLeadership(hostB, otherShard, LEASE_MS);
        topology.releaseLeadership(hostA);
        Timestamp now = new Timestamp(System.currentTimeMillis());
        assertThat(tuple(partitionLeaseUntil(mine).before(now), partitionLeaseUntil(theirs).after(now)))
                .isEqualTo(tuple(true, true));
    }

    @Test
    void theTopologySeesALiveLeaderUnderTheCurrentEpoch() {
        // kills: readTopology's partition_leases read (no leader would be seen)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        assertThat(leaderOf(p)).contains(hostA);
    }

    @Test
    void theTopologySeesNoLeaderWhoseLeaseIsUnderAnEarlierEpoch() {
        // kills: Topology.leaderOf's "l.epoch() != p.epoch()" over readTopology's epochs (partitions.epoch, lease epoch)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        bumpEpoch(p);
        assertThat(leaderOf(p)).isEmpty();
    }

    @Test
    void theTopologySeesNoLeaderWhoseLeaseEnded() {
        // kills: Topology.leaderOf's "!l.leaseUntil().isAfter(readAt)" over readTopology's now() stamp
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, 1);
        awaitDbClockPast(partitionLeaseUntil(p));
        assertThat(leaderOf(p)).isEmpty();
    }

    // ---- the slot publish fence ---------------------------------------------------------------------

    @Test
    void aSlotIsPublishedWhileTheHostHoldsALiveLeaseUnderTheOutcomesEpoch() {
        // kills: the shard_runs INSERT of publishShardOutcomes (or a fence that refuses a true leader)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        assertThat(publishOne(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5)), 0, hostA))
                .isEqualTo(new Publication(ShardRunFence.PUBLISHED, true));
    }

    @Test
    void aSlotIsNotPublishedUnderAnotherHostsLease() {
        // kills: the fence's "l.host_id = ?"
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        assertThat(publishOne(shardOutcome(call, 0, p, 1, hostB, 3, new Partial("eu", 1.5)), 0, hostB))
                .isEqualTo(new Publication(ShardRunFence.NOT_LEADER, false));
    }

    @Test
    void aSlotIsNotPublishedUnderAnExpiredLease() {
        // kills: the fence's "l.lease_until > clock_timestamp()"
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        expirePartitionLease(p);
        UUID call = UUID.randomUUID();
        assertThat(publishOne(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5)), 0, hostA))
                .isEqualTo(new Publication(ShardRunFence.NOT_LEADER, false));
    }

    @Test
    void aSlotIsNotPublishedUnderALeaseOfAnotherEpoch() {
        // kills: the fence's "l.epoch = ?" (the partition moved on to epoch 2 and the host holds its lease under 2)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        bumpEpoch(p);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        assertThat(publishOne(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5)), 0, hostA))
                .isEqualTo(new Publication(ShardRunFence.NOT_LEADER, false));
    }

    @Test
    void aSlotIsNotPublishedByTheLeaseOfAnotherPartition() {
        // kills: the fence's "l.partition_id = ?" (the host leads a partition, but not this one)
        Partition led = partition();
        int otherShard = newShard();
        Partition notLed = partitionOn(otherShard);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        candidate(hostB, otherShard);
        topology.acquireLeadership(hostB, otherShard, LEASE_MS);
        UUID call = UUID.randomUUID();
        assertThat(publishOne(shardOutcome(call, 0, notLed, 1, hostA, 3, new Partial("eu", 1.5)), 0, hostA))
                .isEqualTo(new Publication(ShardRunFence.NOT_LEADER, false));
    }

    @Test
    void aSlotIsNotPublishedWithoutAnyLease() {
        // kills: the fence's WHERE EXISTS as a whole
        Partition p = partition();
        UUID call = UUID.randomUUID();
        assertThat(publishOne(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5)), 0, hostA))
                .isEqualTo(new Publication(ShardRunFence.NOT_LEADER, false));
    }

    @Test
    void aFailedOutcomeIsJournaled() {
        // kills: the journal INSERT of publishShardOutcomes for a failed outcome
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        JournalEntry failed = failedShard(call, 0, p, hostA);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(failed, 0)), hostA, LEASE_MS);
        assertThat(calls.journaled(TENANT, failed.wireId())).get()
                .extracting(JournalEntry::succeeded, JournalEntry::errorCode, JournalEntry::errorMessage)
                .containsExactly(false, ErrorCode.GUEST_TRAP.code(), "trap");
    }

    @Test
    void aFailedOutcomeIsNotPublished() {
        // kills: publishShardOutcomes' "if (standing...succeeded())" (a failed outcome would fill a slot)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        assertThat(publishOne(failedShard(call, 0, p, hostA), 0, hostA))
                .isEqualTo(new Publication(ShardRunFence.PUBLISHED, false));
    }

    @Test
    void theFirstWriterWinsInTheJournal() {
        // kills: the journal's "ON CONFLICT (tenant, wire_id) DO NOTHING" and the read-back of the earlier writer
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        JournalEntry first = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        JournalEntry second = shardOutcome(call, 0, p, 1, hostA, 5, new Partial("us", 9.0), new Partial("eu", 2.0));
        calls.publishShardOutcomes(List.of(new ShardRunPublication(first, 0)), hostA, LEASE_MS);
        ShardRunPublished again = calls.publishShardOutcomes(List.of(new ShardRunPublication(second, 0)), hostA, LEASE_MS).get(0);
        assertThat(again.standing()).usingRecursiveComparison().isEqualTo(first);
    }

    @Test
    void aSecondPublicationOfAWireIdLeavesTheSlotTheFirsts() {
        // kills: the journal's first-writer rule as the slot sees it (its counts and the partials it names)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        JournalEntry first = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        JournalEntry second = shardOutcome(call, 0, p, 1, hostA, 5, new Partial("us", 9.0), new Partial("eu", 2.0));
        calls.publishShardOutcomes(List.of(new ShardRunPublication(first, 0)), hostA, LEASE_MS);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(second, 0)), hostA, LEASE_MS);
        assertThat(startReduce(call, hostA).runs())
                .extracting(ShardRunRow::rowCount, ShardRunRow::emitCount, ShardRunRow::entryCount, ShardRunRow::partials)
                .containsExactly(tuple(3, 1, 1, first.payload()));
    }

    @Test
    void aSlotPublishedByARedeliveryHoldsTheJournaledOutcome() {
        // kills: publishShardOutcomes building the slot from the standing entry, not from the redelivered one
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        JournalEntry first = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        calls.journal(first);
        JournalEntry redelivered = shardOutcome(call, 0, p, 1, hostA, 5, new Partial("us", 9.0), new Partial("eu", 2.0));
        calls.publishShardOutcomes(List.of(new ShardRunPublication(redelivered, 0)), hostA, LEASE_MS);
        assertThat(startReduce(call, hostA).runs())
                .extracting(ShardRunRow::rowCount, ShardRunRow::emitCount, ShardRunRow::entryCount, ShardRunRow::partials)
                .containsExactly(tuple(3, 1, 1, first.payload()));
    }

    @Test
    void aRePublicationByTheSameWireIdRenewsTheSlotsLease() {
        // kills: the slot upsert's "DO UPDATE SET lease_until = EXCLUDED.lease_until" (a DO NOTHING would keep the old lease)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        JournalEntry e = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        calls.publishShardOutcomes(List.of(new ShardRunPublication(e, 0)), hostA, 1_000);
        Timestamp before = slotLeaseUntil(call, 0);
        ShardRunFence fence = calls.publishShardOutcomes(List.of(new ShardRunPublication(e, 0)), hostA, 600_000).get(0).fence();
        assertThat(tuple(fence, slotLeaseUntil(call, 0).after(before))).isEqualTo(tuple(ShardRunFence.PUBLISHED, true));
    }

    @Test
    void anotherWireIdForAFilledSlotDoesNotRenewIt() {
        // kills: the slot upsert's "WHERE shard_runs.wire_id = EXCLUDED.wire_id"
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = UUID.randomUUID();
        JournalEntry e = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        calls.publishShardOutcomes(List.of(new ShardRunPublication(e, 0)), hostA, 1_000);
        Timestamp before = slotLeaseUntil(call, 0);
        JournalEntry other = new JournalEntry(TENANT, call + "/shard/0-other", call, JournalEntry.SHARD, hostA, p.id(), 1,
                true, 0, null, 4, 1, PartialsCodec.encode(List.of(new Partial("us", 2.0))), 10);
        ShardRunFence fence = calls.publishShardOutcomes(List.of(new ShardRunPublication(other, 0)), hostA, 600_000).get(0).fence();
        assertThat(tuple(fence, slotLeaseUntil(call, 0))).isEqualTo(tuple(ShardRunFence.NOT_LEADER, before));
    }

    @Test
    void aMixedBatchIsAnsweredPublicationByPublicationInOrder() {
        // kills: the per-publication fence verdicts of publishShardOutcomes (counts[i] mapped back to its wire id, in order)
        Partition led = partition();
        int otherShard = newShard();
        Partition notLed = partitionOn(otherShard);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        candidate(hostB, otherShard);
        topology.acquireLeadership(hostB, otherShard, LEASE_MS);
        UUID call = UUID.randomUUID();
        JournalEntry published = shardOutcome(call, 0, led, 1, hostA, 3, new Partial("a", 1));
        JournalEntry fencedOut = shardOutcome(call, 1, notLed, 1, hostA, 4, new Partial("b", 2));
        JournalEntry failed = failedShard(call, 2, led, hostA);
        calls.journal(shardOutcome(call, 3, led, 1, hostA, 7, new Partial("d", 4)));
        JournalEntry replayed = shardOutcome(call, 3, led, 1, hostA, 9, new Partial("x", 5));
        List<ShardRunPublished> answers = calls.publishShardOutcomes(List.of(new ShardRunPublication(published, 0),
                new ShardRunPublication(fencedOut, 1), new ShardRunPublication(failed, 2), new ShardRunPublication(replayed, 3)),
                hostA, LEASE_MS);
        assertThat(answers)
                .extracting(a -> a.standing().wireId(), a -> a.standing().succeeded(), a -> a.standing().rowCount(),
                        ShardRunPublished::fence)
                .containsExactly(
                        tuple(call + "/shard/0", true, 3, ShardRunFence.PUBLISHED),
                        tuple(call + "/shard/1", true, 4, ShardRunFence.NOT_LEADER),
                        tuple(call + "/shard/2", false, 0, ShardRunFence.PUBLISHED),
                        tuple(call + "/shard/3", true, 7, ShardRunFence.PUBLISHED));
    }

    @Test
    void aMixedBatchFillsExactlyTheSlotsItPublished() {
        // kills: the fence applied row by row within one batch (a fenced-out or failed slot is never written)
        Partition led = partition();
        int otherShard = newShard();
        Partition notLed = partitionOn(otherShard);
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        candidate(hostB, otherShard);
        topology.acquireLeadership(hostB, otherShard, LEASE_MS);
        UUID call = UUID.randomUUID();
        calls.publishShardOutcomes(List.of(
                new ShardRunPublication(shardOutcome(call, 0, led, 1, hostA, 3, new Partial("a", 1)), 0),
                new ShardRunPublication(shardOutcome(call, 1, notLed, 1, hostA, 4, new Partial("b", 2)), 1),
                new ShardRunPublication(failedShard(call, 2, led, hostA), 2),
                new ShardRunPublication(shardOutcome(call, 3, led, 1, hostA, 7, new Partial("d", 4)), 3)), hostA, LEASE_MS);
        assertThat(startReduce(call, hostA).runs()).extracting(ShardRunRow::runIndex).containsExactly(0, 3);
    }

    // ---- invocations --------------------------------------------------------------------------------

    @Test
    void aCallIsRecordedRunningUnderTheCurrentBindingVersion() {
        // kills: insertInvocation's INSERT ... SELECT (nothing recorded for a current version)
        Binding b = binding();
        UUID call = UUID.randomUUID();
        boolean recorded = insert(call, b);
        assertThat(tuple(recorded, invocation(call).map(Invocation::state))).isEqualTo(tuple(true, Optional.of("running")));
    }

    @Test
    void aCallIsNotRecordedOnceANewerBindingVersionExists() {
        // kills: insertInvocation's "WHERE ? = (SELECT max(b.version) FROM bindings b ...)"
        Binding v1 = binding();
        store.putBinding(TENANT, v1.name(), DIGEST, SELECTOR_2);
        UUID call = UUID.randomUUID();
        boolean recorded = insert(call, v1);
        assertThat(tuple(recorded, invocation(call))).isEqualTo(tuple(false, Optional.empty()));
    }

    @Test
    void aNewerVersionOfAnotherBindingDoesNotRefuseTheCall() {
        // kills: insertInvocation's "b.name = ?" (the version would be compared with the tenant's highest of any name)
        Binding mine = binding();
        Binding other = binding();
        store.putBinding(TENANT, other.name(), DIGEST, SELECTOR_2);
        assertThat(insert(UUID.randomUUID(), mine)).isTrue();
    }

    @Test
    void aRefusedCallIsRecordedFailedWithItsCode() {
        // kills: insertRefusedInvocation's 'failed' state, code and message (a refused call recorded as anything else)
        Binding b = binding();
        UUID call = UUID.randomUUID();
        calls.insertRefusedInvocation(call, b, "alice", hostA, 30_000, 30_000,
                ErrorCode.CELL_UNAVAILABLE, "no leader");
        assertThat(invocation(call)).contains(new Invocation("failed", ErrorCode.CELL_UNAVAILABLE.code(), "no leader", null, 0));
    }

    @Test
    void failInvocationFailsARunningCall() {
        // kills: failInvocation's UPDATE (state, code, message, attempts)
        UUID call = running(binding());
        boolean changed = calls.failInvocation(call, ErrorCode.GUEST_TRAP, "trap", 2);
        assertThat(tuple(changed, invocation(call)))
                .isEqualTo(tuple(true, Optional.of(new Invocation("failed", ErrorCode.GUEST_TRAP.code(), "trap", null, 2))));
    }

    @Test
    void failInvocationLeavesASucceededCallAsItIs() {
        // kills: failInvocation's "AND state = 'running'"
        UUID call = running(binding());
        startReduce(call, hostA);
        calls.publishResult(call, hostA, "{\"n\":1}", 1);
        boolean changed = calls.failInvocation(call, ErrorCode.GUEST_TRAP, "late", 3);
        assertThat(tuple(changed, invocation(call)))
                .isEqualTo(tuple(false, Optional.of(new Invocation("succeeded", null, null, "{\"n\":1}", 1))));
        // kills: failUnlessPublished reading the state the update found (a published call's result, for its coordinator
        // that never heard the publication answered)
        assertThat(calls.failUnlessPublished(call, ErrorCode.DEADLINE_EXCEEDED, "late", 3)).hasValue("{\"n\":1}");
        UUID other = running(binding());
        assertThat(calls.failUnlessPublished(other, ErrorCode.DEADLINE_EXCEEDED, "late", 1)).isEmpty();
        assertThat(invocation(other).orElseThrow().state()).isEqualTo("failed");
    }

    // ---- one clock: the call's deadline as the control database keeps it -----------------------------

    @Test
    void anInvocationsDeadlineIsTheDatabasesClockPlusTheTimeLeft() {
        // kills: insertInvocation's "clock_timestamp() + make_interval(secs => ? / 1000.0)" and its RETURNING
        long before = queryLong("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint");
        UUID call = UUID.randomUUID();
        long deadline = calls.insertInvocation(call, binding(), "alice", hostA, 1, 5_000, 30_000).orElseThrow();
        long after = queryLong("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint");
        long stored = queryLong("SELECT (extract(epoch FROM deadline_at) * 1000000)::bigint FROM invocations"
                + " WHERE call_id = ?", call);
        assertThat(tuple(deadline == stored, deadline >= before + 5_000_000, deadline <= after + 5_000_000))
                .isEqualTo(tuple(true, true, true));
    }

    @Test
    void aRequestStartReadsTheJournalTheCallsDeadlineAndTheDatabasesClockInOneStatement() {
        // kills: requestStart's join of the invocation and its clock_timestamp()
        UUID call = running(binding());
        Partition p = partition();
        JournalEntry done = failedShard(call, 0, p, hostA);
        calls.journal(done);
        long deadline = queryLong("SELECT (extract(epoch FROM deadline_at) * 1000000)::bigint FROM invocations"
                + " WHERE call_id = ?", call);
        CallJournal.RequestStart start = calls.requestStart(TENANT, call, List.of(done.wireId(), call + "/shard/1"));
        long now = queryLong("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint");
        assertThat(tuple(start.journaled().keySet(), start.deadlineMicros().getAsLong(),
                start.clockMicros() <= now && start.clockMicros() > now - 60_000_000))
                .isEqualTo(tuple(java.util.Set.of(done.wireId()), deadline, true));
        assertThat(calls.requestStart(TENANT, UUID.randomUUID(), List.of("nothing")).deadlineMicros()).isEmpty();
    }

    @Test
    void aSlotIsNotPublishedOnceItsCallsDeadlinePassedOnTheDatabasesClock() {
        // kills: the slot publication's "late" fence (a leader that ran past the deadline still publishing)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = running(binding());
        exec("UPDATE invocations SET deadline_at = clock_timestamp() - interval '1 second' WHERE call_id = ?", call);
        JournalEntry outcome = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        assertThat(tuple(publishOne(outcome, 0, hostA), calls.journaled(TENANT, outcome.wireId()).isPresent()))
                .isEqualTo(tuple(new Publication(ShardRunFence.DEADLINE_PASSED, false), true));
    }

    @Test
    void aJournaledOutcomeIsNotPublishedAgainOnceItsCallsDeadlinePassed() {
        // kills: publishStanding's deadline fence (a redelivery after the deadline publishing the first outcome)
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = running(binding());
        JournalEntry outcome = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        calls.journal(outcome);
        exec("UPDATE invocations SET deadline_at = clock_timestamp() - interval '1 second' WHERE call_id = ?", call);
        assertThat(publishOne(outcome, 0, hostA).slotStored()).isFalse();
    }

    @Test
    void aShardRunsGuestStartIsJournaledOnTheDatabasesClock() {
        // kills: the journal insert's guest_started_at
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID call = running(binding());
        JournalEntry e = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("eu", 1.5));
        long startedAt = 1_700_000_000_123_456L;
        JournalEntry started = new JournalEntry(e.tenant(), e.wireId(), e.callId(), e.kind(), e.hostId(), e.partitionId(),
                e.epoch(), true, 0, null, 3, 1, e.payload(), 10, startedAt);
        publishOne(started, 0, hostA);
        assertThat(queryLong("SELECT (extract(epoch FROM guest_started_at) * 1000000)::bigint FROM journal"
                + " WHERE wire_id = ?", e.wireId())).isEqualTo(startedAt);
    }

    @Test
    void aResultIsNotPublishedOnceItsCallsDeadlinePassed() {
        // kills: the result publication's "i.deadline_at >= clock_timestamp()"
        UUID call = running(binding());
        startReduce(call, hostA);
        exec("UPDATE invocations SET deadline_at = clock_timestamp() - interval '1 second' WHERE call_id = ?", call);
        assertThat(tuple(calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 1).getValue(),
                invocation(call).map(Invocation::state)))
                .isEqualTo(tuple(Optional.of(new PublishOutcome(PublishOutcome.Status.DEADLINE_PASSED, Optional.empty())),
                        Optional.of("running")));
    }

    @Test
    void theReconcilerEndsACallStillRunningPastItsDeadlineAndGrace() {
        // kills: reconcileInvocations' deadline condition
        UUID call = running(binding());
        exec("UPDATE invocations SET deadline_at = clock_timestamp() - interval '10 seconds' WHERE call_id = ?", call);
        calls.reconcileInvocations("host-r", 2_000);
        Invocation after = invocation(call).orElseThrow();
        assertThat(tuple(after.state(), after.errorCode(), after.errorMessage().startsWith("reconciled by host-r: still"
                + " running"))).isEqualTo(tuple("failed", ErrorCode.DEADLINE_EXCEEDED.code(), true));
    }

    @Test
    void theReconcilerLeavesCallsWithinTheirDeadlineOrGraceAndFinishedOnesAlone() {
        // kills: reconcileInvocations' "state = 'running'" and its grace
        UUID live = running(binding());
        UUID inGrace = running(binding());
        exec("UPDATE invocations SET deadline_at = clock_timestamp() - interval '1 second' WHERE call_id = ?", inGrace);
        UUID published = publishedCall();
        exec("UPDATE invocations SET deadline_at = clock_timestamp() - interval '10 seconds' WHERE call_id = ?", published);
        calls.reconcileInvocations("host-r", 5_000);
        assertThat(Stream.of(live, inGrace, published).map(c -> invocation(c).orElseThrow().state()).toList())
                .containsExactly("running", "running", "succeeded");
    }

    @Test
    void theReconcilerEndsACallWhoseCoordinatorRestartedSinceItWasRecorded() {
        // kills: reconcileInvocations' "h.started_at > i.created_at"
        UUID call = running(binding());
        exec("UPDATE invocations SET created_at = clock_timestamp() - interval '1 minute' WHERE call_id = ?", call);
        topology.registerHost(new Host(hostA, shard, "127.0.0.1", 7001), null, null); // the coordinator starts again
        calls.reconcileInvocations("host-r", 2_000);
        assertThat(invocation(call).map(Invocation::errorCode)).contains(ErrorCode.COORDINATOR_LOST.code());
    }

    @Test
    void textPostgresCannotHoldIsStoredWithTheReplacementCharacter() {
        // kills: storable() in bindFrom and in the slot publication's parameters
        UUID call = running(binding());
        calls.failInvocation(call, ErrorCode.GUEST_REPORTED_FAILURE, "bad\u0000key \uD800!", 1);
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        UUID other = running(binding());
        JournalEntry failed = new JournalEntry(TENANT, other + "/shard/0", other, JournalEntry.SHARD, hostA, p.id(), 1,
                false, ErrorCode.GUEST_REPORTED_FAILURE.code(), "key a\u0000b", 0, 0, null, 10);
        publishOne(failed, 0, hostA);
        assertThat(tuple(invocation(call).map(Invocation::errorMessage),
                calls.journaled(TENANT, failed.wireId()).map(JournalEntry::errorMessage)))
                .isEqualTo(tuple(Optional.of("bad\uFFFDkey \uFFFD!"), Optional.of("key a\uFFFDb")));
    }

    // ---- the reduce lease ---------------------------------------------------------------------------

    @Test
    void theReduceLeaseIsGrantedWhenFree() {
        // kills: TAKE_REDUCE_LEASE's INSERT branch
        UUID call = running(binding());
        assertThat(startReduce(call, hostA).leaseHeld()).isTrue();
    }

    @Test
    void theReduceLeaseIsGrantedToTheSameHostAgain() {
        // kills: TAKE_REDUCE_LEASE's "reduce_leases.host_id = EXCLUDED.host_id"
        UUID call = running(binding());
        startReduce(call, hostA);
        assertThat(startReduce(call, hostA).leaseHeld()).isTrue();
    }

    @Test
    void theReduceLeaseIsRefusedWhileAnotherHostsLeaseIsLiveAndNothingIsRead() {
        // kills: TAKE_REDUCE_LEASE's ON CONFLICT ... WHERE as a whole (and startReduce's "if (!held)" early return)
        UUID call = running(binding());
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("a", 1)), 0)),
                hostA, LEASE_MS);
        calls.journal(reduction(call, hostA, "{}"));
        startReduce(call, hostA);
        ReduceStart refused = startReduce(call, hostB);
        assertThat(refused).usingRecursiveComparison().isEqualTo(new ReduceStart(false, List.of(), Optional.empty()));
    }

    @Test
    void anExpiredReduceLeaseIsTakenOver() {
        // kills: TAKE_REDUCE_LEASE's "OR reduce_leases.lease_until < now()"
        UUID call = running(binding());
        calls.startReduce(call, TENANT, hostA, call + "/reduce", 1);
        awaitDbClockPast(reduceLeaseUntil(call));
        boolean taken = startReduce(call, hostB).leaseHeld();
        assertThat(tuple(taken, reduceLeaseHolder(call))).isEqualTo(tuple(true, hostB));
    }

    @Test
    void takeReduceLeaseRefusesAnotherHostWhileTheLeaseIsLive() {
        // kills: TAKE_REDUCE_LEASE's ON CONFLICT ... WHERE, as takeReduceLease runs it
        UUID call = UUID.randomUUID();
        calls.takeReduceLease(call, hostA, call + "/reduce", LEASE_MS);
        assertThat(calls.takeReduceLease(call, hostB, call + "/reduce", LEASE_MS)).isFalse();
    }

    @Test
    void startReduceReadsTheCallsSlotsInOrderWithTheirPartialsLeasesAndCurrentEpochs() {
        // kills: startReduce's slot read (the journal join for the partials, "s.call_id = ?", ORDER BY run_index)
        UUID call = running(binding());
        UUID otherCall = UUID.randomUUID();
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        JournalEntry s1 = shardOutcome(call, 1, p, 1, hostA, 4, new Partial("b", 2), new Partial("c", 3));
        JournalEntry s0 = shardOutcome(call, 0, p, 1, hostA, 3, new Partial("a", 1));
        calls.publishShardOutcomes(List.of(new ShardRunPublication(s1, 1), new ShardRunPublication(s0, 0),
                new ShardRunPublication(shardOutcome(otherCall, 0, p, 1, hostA, 1, new Partial("z", 1)), 0)), hostA, LEASE_MS);
        assertThat(startReduce(call, hostA).runs()).usingRecursiveFieldByFieldElementComparator().containsExactly(
                new ShardRunRow(0, p.id(), 1, s0.wireId(), hostA, 3, 1, 1, s0.payload(), true, 1),
                new ShardRunRow(1, p.id(), 1, s1.wireId(), hostA, 4, 2, 2, s1.payload(), true, 1));
    }

    @Test
    void startReduceSeesASlotWhoseLeaseEnded() {
        // kills: startReduce's "s.lease_until > clock_timestamp()" (an ended slot lease read as live)
        UUID call = running(binding());
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("a", 1)), 0)),
                hostA, 1);
        awaitDbClockPast(slotLeaseUntil(call, 0));
        assertThat(startReduce(call, hostA).runs()).extracting(ShardRunRow::leaseLive).containsExactly(false);
    }

    @Test
    void startReduceSeesThePartitionsCurrentEpochBesideTheSlots() {
        // kills: startReduce's "LEFT JOIN partitions p ... coalesce(p.epoch, -1)" (the epoch moved on after publication)
        UUID call = running(binding());
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("a", 1)), 0)),
                hostA, LEASE_MS);
        bumpEpoch(p);
        assertThat(startReduce(call, hostA).runs()).extracting(ShardRunRow::epoch, ShardRunRow::currentEpoch)
                .containsExactly(tuple(1L, 2L));
    }

    @Test
    void startReduceReadsASlotOfARemovedPartitionWithEpochMinusOne() {
        // kills: startReduce's LEFT (not inner) JOIN on partitions and its coalesce(p.epoch, -1)
        UUID call = running(binding());
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("a", 1)), 0)),
                hostA, LEASE_MS);
        exec("DELETE FROM partition_leases WHERE partition_id = ?", p.id());
        exec("DELETE FROM partitions WHERE partition_id = ?", p.id());
        assertThat(startReduce(call, hostA).runs()).extracting(ShardRunRow::runIndex, ShardRunRow::currentEpoch)
                .containsExactly(tuple(0, -1L));
    }

    @Test
    void startReduceReturnsTheJournaledReduction() {
        // kills: startReduce's journaled lookup of the reduce wire id
        UUID call = running(binding());
        JournalEntry reduced = reduction(call, hostA, "{\"n\":3}");
        calls.journal(reduced);
        assertThat(startReduce(call, hostA).journaledReduce()).get().usingRecursiveComparison().isEqualTo(reduced);
    }

    @Test
    void startReduceReturnsNoReductionBeforeOneIsJournaled() {
        // kills: startReduce's lookup keyed by the reduce wire id (a journaled shard of the call is no reduction)
        UUID call = running(binding());
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("a", 1)), 0)),
                hostA, LEASE_MS);
        assertThat(startReduce(call, hostA).journaledReduce()).isEmpty();
    }

    // ---- journal and publish ------------------------------------------------------------------------

    @Test
    void aReductionIsPublished() {
        // kills: publishResult's UPDATE (running -> succeeded under the live lease and current binding)
        UUID call = running(binding());
        startReduce(call, hostA);
        assertThat(calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 1).getValue())
                .contains(new PublishOutcome(PublishOutcome.Status.PUBLISHED, Optional.of("{\"n\":1}")));
    }

    @Test
    void aPublishedResultIsTheInvocationsResult() {
        // kills: publishResult's SET (state, result_json, attempts)
        UUID call = running(binding());
        startReduce(call, hostA);
        calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 2);
        assertThat(invocation(call)).contains(new Invocation("succeeded", null, null, "{\"n\":1}", 2));
    }

    @Test
    void aSecondReductionFindsTheFirstResultAlreadyPublished() {
        // kills: publishResult's "i.state = 'running'" (a second reduction would replace the visible result)
        UUID call = running(binding());
        startReduce(call, hostA);
        calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 1);
        JournalEntry second = new JournalEntry(TENANT, call + "/reduce-again", call, JournalEntry.REDUCE, hostA, -1, -1,
                true, 0, null, 0, 0, "{\"n\":2}".getBytes(StandardCharsets.UTF_8), 10);
        PublishOutcome again = calls.journalAndPublish(second, hostA, 1).getValue().orElseThrow();
        assertThat(tuple(again, invocation(call).map(Invocation::result))).isEqualTo(tuple(
                new PublishOutcome(PublishOutcome.Status.ALREADY_PUBLISHED, Optional.of("{\"n\":1}")),
                Optional.of("{\"n\":1}")));
    }

    @Test
    void aRedeliveredReductionReplaysTheJournaledOneAndFindsItPublished() {
        // kills: journalAndPublish publishing the standing (first-journaled) reduction rather than the redelivered one
        UUID call = running(binding());
        startReduce(call, hostA);
        calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 1);
        Map.Entry<JournalEntry, Optional<PublishOutcome>> again =
                calls.journalAndPublish(reduction(call, hostA, "{\"n\":2}"), hostA, 1);
        assertThat(tuple(new String(again.getKey().payload(), StandardCharsets.UTF_8), again.getValue())).isEqualTo(tuple(
                "{\"n\":1}", Optional.of(new PublishOutcome(PublishOutcome.Status.ALREADY_PUBLISHED, Optional.of("{\"n\":1}")))));
    }

    @Test
    void aRedeliveredReductionPublishesTheJournaledResultNotItsOwn() {
        // kills: journalAndPublish publishing the standing reduction's payload (not the redelivered reduction's)
        UUID call = running(binding());
        startReduce(call, hostA);
        calls.journal(reduction(call, hostA, "{\"n\":1}"));
        assertThat(calls.journalAndPublish(reduction(call, hostA, "{\"n\":2}"), hostA, 1).getValue())
                .contains(new PublishOutcome(PublishOutcome.Status.PUBLISHED, Optional.of("{\"n\":1}")));
    }

    @Test
    void aResultIsRefusedUnderAnotherHostsReduceLease() {
        // kills: publishResult's "r.host_id = ?"
        UUID call = running(binding());
        startReduce(call, hostA);
        Optional<PublishOutcome> outcome = calls.journalAndPublish(reduction(call, hostB, "{\"n\":1}"), hostB, 1).getValue();
        assertThat(tuple(outcome, invocation(call).map(Invocation::state))).isEqualTo(tuple(
                Optional.of(new PublishOutcome(PublishOutcome.Status.REDUCE_LEASE_LOST, Optional.empty())),
                Optional.of("running")));
    }

    @Test
    void aResultIsRefusedUnderAnExpiredReduceLease() {
        // kills: publishResult's "r.lease_until > now()"
        UUID call = running(binding());
        calls.startReduce(call, TENANT, hostA, call + "/reduce", 1);
        awaitDbClockPast(reduceLeaseUntil(call));
        Optional<PublishOutcome> outcome = calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 1).getValue();
        assertThat(tuple(outcome, invocation(call).map(Invocation::state))).isEqualTo(tuple(
                Optional.of(new PublishOutcome(PublishOutcome.Status.REDUCE_LEASE_LOST, Optional.empty())),
                Optional.of("running")));
    }

    @Test
    void aResultIsRefusedByTheReduceLeaseOfAnotherCall() {
        // kills: publishResult's "r.call_id = i.call_id" (the host's lease on another call would admit this one)
        UUID call = running(binding());
        UUID otherCall = running(binding());
        startReduce(otherCall, hostA);
        assertThat(calls.publishResult(call, hostA, "{\"n\":1}", 1))
                .isEqualTo(new PublishOutcome(PublishOutcome.Status.REDUCE_LEASE_LOST, Optional.empty()));
    }

    @Test
    void aResultIsRefusedOnceANewerBindingVersionExists() {
        // kills: publishResult's "i.binding_version = (SELECT max(b.version) ...)"
        Binding v1 = binding();
        UUID call = running(v1);
        startReduce(call, hostA);
        store.putBinding(TENANT, v1.name(), DIGEST, SELECTOR_2);
        Optional<PublishOutcome> outcome = calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 1).getValue();
        assertThat(tuple(outcome, invocation(call).map(Invocation::state))).isEqualTo(tuple(
                Optional.of(new PublishOutcome(PublishOutcome.Status.BINDING_REPLACED, Optional.empty())),
                Optional.of("running")));
    }

    @Test
    void aNewerVersionOfAnotherBindingDoesNotRefuseTheResult() {
        // kills: publishResult's "b.name = i.binding_name" (compared with the tenant's highest version of any name)
        Binding mine = binding();
        Binding other = binding();
        store.putBinding(TENANT, other.name(), DIGEST, SELECTOR_2);
        UUID call = running(mine);
        startReduce(call, hostA);
        assertThat(calls.publishResult(call, hostA, "{\"n\":1}", 1).status()).isEqualTo(PublishOutcome.Status.PUBLISHED);
    }

    @Test
    void aResultOfAFailedCallIsRefusedAsNotRunning() {
        // kills: publishResult's "i.state = 'running'" for a failed call (a failed call would turn succeeded)
        UUID call = running(binding());
        startReduce(call, hostA);
        calls.failInvocation(call, ErrorCode.GUEST_TRAP, "trap", 1);
        Optional<PublishOutcome> outcome = calls.journalAndPublish(reduction(call, hostA, "{\"n\":1}"), hostA, 1).getValue();
        assertThat(tuple(outcome, invocation(call).map(Invocation::state))).isEqualTo(tuple(
                Optional.of(new PublishOutcome(PublishOutcome.Status.NOT_RUNNING, Optional.empty())), Optional.of("failed")));
    }

    @Test
    void aFailedReductionPublishesNothing() {
        // kills: journalAndPublish's "if (!standing.succeeded())"
        UUID call = running(binding());
        startReduce(call, hostA);
        Optional<PublishOutcome> outcome = calls.journalAndPublish(failedReduction(call, hostA), hostA, 1).getValue();
        assertThat(tuple(outcome, invocation(call).map(Invocation::state))).isEqualTo(tuple(Optional.empty(),
                Optional.of("running")));
    }

    @Test
    void aFailedReductionIsJournaled() {
        // kills: journalAndPublish's journal INSERT (before anything is published)
        UUID call = running(binding());
        startReduce(call, hostA);
        calls.journalAndPublish(failedReduction(call, hostA), hostA, 1);
        assertThat(calls.journaled(TENANT, call + "/reduce")).get()
                .extracting(JournalEntry::kind, JournalEntry::succeeded, JournalEntry::errorCode)
                .containsExactly(JournalEntry.REDUCE, false, ErrorCode.GUEST_TRAP.code());
    }

    // ---- retention ----------------------------------------------------------------------------------

    @Test
    void aFinishedCallsStateOlderThanTheRetentionGoes() {
        // kills: cleanup's four age-bounded DELETEs (journal, shard_runs, reduce_leases, finished invocations)
        UUID call = publishedCall();
        // Created within the hour past the retention, so only the DELETE of finished invocations takes it.
        backdateInvocation(call, "30 minutes", "20 minutes");
        backdateState(call, "20 minutes");
        calls.cleanup(RETENTION_MS);
        assertThat(rows(call)).isEqualTo(new Rows(0, 0, 0, 0));
    }

    @Test
    void aFinishedCallsStateYoungerThanTheRetentionStays() {
        // kills: cleanup's "recorded_at / published_at / taken_at / finished_at < now() - retention" bounds
        UUID call = publishedCall();
        calls.cleanup(RETENTION_MS);
        assertThat(rows(call)).isEqualTo(new Rows(2, 1, 1, 1));
    }

    @Test
    void aRunningCallKeepsItsJournalSlotsAndLeaseWhateverTheirAge() {
        // kills: cleanup's "AND NOT EXISTS (... i.state = 'running')" on journal, shard_runs and reduce_leases
        UUID call = runningCallWithState();
        backdateInvocation(call, "60 minutes", null);
        backdateState(call, "50 minutes");
        calls.cleanup(RETENTION_MS);
        assertThat(rows(call)).isEqualTo(new Rows(2, 1, 1, 1));
    }

    @Test
    void aRunningInvocationOlderThanTheRetentionButWithinTheHourStays() {
        // kills: cleanup's "- interval '1 hour'" on invocations left running
        UUID call = runningCallWithState();
        backdateInvocation(call, "30 minutes", null);
        calls.cleanup(RETENTION_MS);
        assertThat(rows(call).invocations()).isEqualTo(1);
    }

    @Test
    void anInvocationLeftRunningGoesAnHourAfterTheRetentionAndItsStateWithTheNextSweep() {
        // kills: cleanup's "DELETE FROM invocations WHERE created_at < now() - retention - interval '1 hour'"
        UUID call = runningCallWithState();
        backdateInvocation(call, "2 days", null);
        backdateState(call, "2 days");
        calls.cleanup(RETENTION_MS);
        Rows afterFirst = rows(call);
        calls.cleanup(RETENTION_MS);
        assertThat(tuple(afterFirst, rows(call))).isEqualTo(tuple(new Rows(2, 1, 1, 0), new Rows(0, 0, 0, 0)));
    }

    // ---- error mapping ------------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @MethodSource("everyStatement")
    void aStatementAgainstAnUnreachableDatabaseIsStoreUnavailable(Consumer<ControlStore> statement) {
        // kills: the "catch (SQLException e) -> unavailable(e)" of inTransaction, update and queryOne (connect fails)
        ControlStore unreachable = new ControlStore(Unreachable.dataSource());
        assertThatThrownBy(() -> statement.accept(unreachable))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE))
                .hasCauseInstanceOf(SQLException.class);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("everyStatement")
    void aStatementOnAConnectionWhoseDatabaseStoppedIsStoreUnavailable(Consumer<ControlStore> statement) {
        // kills: the same catches when the statement itself fails (and inTransaction's rollback on a dead connection)
        ControlStore stopped = new ControlStore(StoppedDatabase.connectionOpenedBeforeItStopped());
        assertThatThrownBy(() -> statement.accept(stopped))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE))
                .hasCauseInstanceOf(SQLException.class);
    }

    /**
     * Every public statement of ControlStore but {@code migrate} (Flyway's, reported as Flyway's own exception); the
     * topology's writes are TopologyStore's (TopologyStoreTest).
     */
    static Stream<Named<Consumer<ControlStore>>> everyStatement() {
        UUID call = UUID.fromString("00000000-0000-0000-0000-00000000c0de");
        Binding b = new Binding(TENANT, "sum", 1, DIGEST, Selector.parse(SELECTOR));
        Partition p = new Partition(1, TENANT, TABLE, 0, 16383, 1, 1);
        JournalEntry shardEntry = shardOutcome(call, 0, p, 1, "h", 1, new Partial("a", 1));
        JournalEntry reduceEntry = reduction(call, "h", "{}");
        long deadline = System.currentTimeMillis() + 30_000;
        return Stream.of(
                Named.of("ensureTenant", s -> s.ensureTenant(TENANT)),
                Named.of("putPackage", s -> s.putPackage(DIGEST, new byte[] {1})),
                Named.of("packageBytes", s -> s.packageBytes(DIGEST)),
                Named.of("putBinding", s -> s.putBinding(TENANT, "sum", DIGEST, SELECTOR)),
                Named.of("currentBinding", s -> s.currentBinding(TENANT, "sum")),
                Named.of("binding", s -> s.binding(TENANT, "sum", 1)),
                Named.of("putShard", s -> s.putShard(1, "jdbc:postgresql://x/db")),
                Named.of("putTable", s -> s.putTable(TENANT, TABLE, "id", "bigint")),
                Named.of("putPartition", s -> s.putPartition(p)),
                Named.of("readTopology", ControlStore::readTopology),
                Named.of("readTopologyVersion", ControlStore::readTopologyVersion),
                Named.of("insertInvocation", s -> s.calls().insertInvocation(call, b, "alice", "h", 1, deadline, 30_000)),
                Named.of("insertRefusedInvocation", s -> s.calls().insertRefusedInvocation(call, b, "alice", "h", deadline, 30_000,
                        ErrorCode.CELL_UNAVAILABLE, "no leader")),
                Named.of("failInvocation", s -> s.calls().failInvocation(call, ErrorCode.GUEST_TRAP, "trap", 1)),
                Named.of("journaled", s -> s.calls().journaled(TENANT, shardEntry.wireId())),
                Named.of("journaled(list)", s -> s.calls().journaled(TENANT, List.of(shardEntry.wireId()))),
                Named.of("journal", s -> s.calls().journal(shardEntry)),
                Named.of("publishShardOutcomes", s -> s.calls().publishShardOutcomes(List.of(new ShardRunPublication(shardEntry, 0)),
                        "h", LEASE_MS)),
                Named.of("startReduce", s -> s.calls().startReduce(call, TENANT, "h", reduceEntry.wireId(), LEASE_MS)),
                Named.of("takeReduceLease", s -> s.calls().takeReduceLease(call, "h", reduceEntry.wireId(), LEASE_MS)),
                Named.of("journalAndPublish", s -> s.calls().journalAndPublish(reduceEntry, "h", 1)),
                Named.of("publishResult", s -> s.calls().publishResult(call, "h", "{}", 1)),
                Named.of("cleanup", s -> s.calls().cleanup(RETENTION_MS)),
                Named.of("countInvocations", s -> s.calls().countInvocations("running")));
    }

    // ---- fixtures -----------------------------------------------------------------------------------

    /** What a publication answered for its slot, and whether the slot row exists afterwards. */
    record Publication(ShardRunFence fence, boolean slotStored) {}

    record Lease(String host, long epoch) {}

    record Invocation(String state, Integer errorCode, String errorMessage, String result, int attempts) {}

    /** A call's rows: journal entries, shard slots, reduce leases, invocations. */
    record Rows(long journal, long slots, long reduceLeases, long invocations) {}

    private static int fresh() {
        return ids.incrementAndGet();
    }

    private static int newShard() {
        int id = fresh();
        store.putShard(id, "jdbc:postgresql://shard-" + id + "/db");
        return id;
    }

    /** A new partition of this test's shard at epoch 1. */
    private Partition partition() {
        return partitionOn(shard);
    }

    private static Partition partitionOn(int shardId) {
        Partition p = new Partition(fresh(), TENANT, TABLE, 0, 16383, shardId, 1);
        store.putPartition(p);
        return p;
    }

    /** A new binding at version 1. */
    private static Binding binding() {
        return store.putBinding(TENANT, "binding-" + fresh(), DIGEST, SELECTOR);
    }

    private boolean insert(UUID call, Binding b) {
        return calls.insertInvocation(call, b, "alice", hostA, 1, 30_000, 30_000).isPresent();
    }

    /** A call recorded running under {@code b}. */
    private UUID running(Binding b) {
        UUID call = UUID.randomUUID();
        if (!insert(call, b)) {
            throw new IllegalStateException("binding " + b + " is not current");
        }
        return call;
    }

    private ReduceStart startReduce(UUID call, String host) {
        return calls.startReduce(call, TENANT, host, call + "/reduce", LEASE_MS);
    }

    private Publication publishOne(JournalEntry e, int slot, String host) {
        ShardRunFence fence = calls.publishShardOutcomes(List.of(new ShardRunPublication(e, slot)), host, LEASE_MS).get(0).fence();
        return new Publication(fence, queryLong("SELECT count(*) FROM shard_runs WHERE call_id = ? AND run_index = ?",
                e.callId(), slot) == 1);
    }

    /** A call that ran one slot, took its reduce lease and published: two journal entries, a slot, a lease, succeeded. */
    private UUID publishedCall() {
        UUID call = runningCallWithState();
        if (!calls.publishResult(call, hostA, "{\"n\":1}", 1).published()) {
            throw new IllegalStateException("not published");
        }
        return call;
    }

    /** A running call with a published slot, the reduce lease and a journaled reduction. */
    private UUID runningCallWithState() {
        UUID call = running(binding());
        Partition p = partition();
        topology.acquireLeadership(hostA, shard, LEASE_MS);
        calls.publishShardOutcomes(List.of(new ShardRunPublication(shardOutcome(call, 0, p, 1, hostA, 3, new Partial("a", 1)), 0)),
                hostA, LEASE_MS);
        startReduce(call, hostA);
        calls.journal(reduction(call, hostA, "{\"n\":1}"));
        return call;
    }

    /** Moves a call's coordination state (journal entries, slots, reduce lease) {@code age} into the past. */
    private static void backdateState(UUID call, String age) {
        exec("UPDATE journal SET recorded_at = now() - ?::interval WHERE call_id = ?", age, call);
        exec("UPDATE shard_runs SET published_at = now() - ?::interval WHERE call_id = ?", age, call);
        exec("UPDATE reduce_leases SET taken_at = now() - ?::interval WHERE call_id = ?", age, call);
    }

    /** Moves a call's invocation into the past: created {@code createdAge} ago, finished (unless null) {@code finishedAge} ago. */
    private static void backdateInvocation(UUID call, String createdAge, String finishedAge) {
        exec("UPDATE invocations SET created_at = now() - ?::interval WHERE call_id = ?", createdAge, call);
        if (finishedAge != null) {
            exec("UPDATE invocations SET finished_at = now() - ?::interval WHERE call_id = ?", finishedAge, call);
        }
    }

    private static Rows rows(UUID call) {
        return new Rows(queryLong("SELECT count(*) FROM journal WHERE call_id = ?", call),
                queryLong("SELECT count(*) FROM shard_runs WHERE call_id = ?", call),
                queryLong("SELECT count(*) FROM reduce_leases WHERE call_id = ?", call),
                queryLong("SELECT count(*) FROM invocations WHERE call_id = ?", call));
    }

    static JournalEntry shardOutcome(UUID call, int slot, Partition p, long epoch, String host, int rows,
                                     Partial... partials) {
        return new JournalEntry(TENANT, call + "/shard/" + slot, call, JournalEntry.SHARD, host, p.id(), epoch, true, 0,
                null, rows, partials.length, PartialsCodec.encode(List.of(partials)), 10);
    }

    private static JournalEntry failedShard(UUID call, int slot, Partition p, String host) {
        return new JournalEntry(TENANT, call + "/shard/" + slot, call, JournalEntry.SHARD, host, p.id(), 1, false,
                ErrorCode.GUEST_TRAP.code(), "trap", 0, 0, null, 10);
    }

    static JournalEntry reduction(UUID call, String host, String json) {
        return new JournalEntry(TENANT, call + "/reduce", call, JournalEntry.REDUCE, host, -1, -1, true, 0, null, 0, 0,
                json.getBytes(StandardCharsets.UTF_8), 10);
    }

    private static JournalEntry failedReduction(UUID call, String host) {
        return new JournalEntry(TENANT, call + "/reduce", call, JournalEntry.REDUCE, host, -1, -1, false,
                ErrorCode.GUEST_TRAP.code(), "trap", 0, 0, null, 10);
    }

    private static Optional<String> leaderOf(Partition p) {
        Topology t = store.readTopology();
        return t.partition(p.id()).flatMap(t::leaderOf).map(Host::hostId);
    }

    private static void bumpEpoch(Partition p) {
        exec("UPDATE partitions SET epoch = epoch + 1 WHERE partition_id = ?", p.id());
    }

    private static void expirePartitionLease(Partition p) {
        exec("UPDATE partition_leases SET lease_until = now() - interval '1 second' WHERE partition_id = ?", p.id());
    }

    private static Optional<Lease> lease(Partition p) {
        return query("SELECT host_id, epoch FROM partition_leases WHERE partition_id = ?",
                rs -> new Lease(rs.getString(1), rs.getLong(2)), p.id());
    }

    private static Timestamp partitionLeaseUntil(Partition p) {
        return query("SELECT lease_until FROM partition_leases WHERE partition_id = ?", rs -> rs.getTimestamp(1), p.id())
                .orElseThrow();
    }

    private static Timestamp slotLeaseUntil(UUID call, int slot) {
        return query("SELECT lease_until FROM shard_runs WHERE call_id = ? AND run_index = ?", rs -> rs.getTimestamp(1),
                call, slot).orElseThrow();
    }

    private static Timestamp reduceLeaseUntil(UUID call) {
        return query("SELECT lease_until FROM reduce_leases WHERE call_id = ?", rs -> rs.getTimestamp(1), call).orElseThrow();
    }

    private static String reduceLeaseHolder(UUID call) {
        return query("SELECT host_id FROM reduce_leases WHERE call_id = ?", rs -> rs.getString(1), call).orElseThrow();
    }

    private static Optional<Invocation> invocation(UUID call) {
        return query("SELECT state, error_code, error_message, result_json, attempts FROM invocations WHERE call_id = ?",
                rs -> new Invocation(rs.getString(1), rs.getObject(2, Integer.class), rs.getString(3), rs.getString(4),
                        rs.getInt(5)), call);
    }

    /** Waits (bounded) until the database clock is past {@code t}: a lease ending at {@code t} has ended. */
    private static void awaitDbClockPast(Timestamp t) {
        TestPostgres.await(CLOCK_WAIT, "the database clock to pass " + t,
                () -> query("SELECT clock_timestamp() > ?", rs -> rs.getBoolean(1), t).orElseThrow());
    }

    @FunctionalInterface
    private interface Row<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private static <T> Optional<T> query(String sql, Row<T> row, Object... args) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(row.read(rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static long queryLong(String sql, Object... args) {
        return query(sql, rs -> rs.getLong(1), args).orElseThrow();
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

    /** A database nobody listens for: a port that was free a moment ago. */
    private static final class Unreachable {
        private static final int PORT = closedPort();

        static DataSource dataSource() {
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setServerNames(new String[] {"127.0.0.1"});
            ds.setPortNumbers(new int[] {PORT});
            ds.setDatabaseName("postgres");
            ds.setUser("postgres");
            ds.setConnectTimeout(2);
            return ds;
        }

        private static int closedPort() {
            try (ServerSocket s = new ServerSocket(0)) {
                return s.getLocalPort();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /**
     * A second embedded PostgreSQL, migrated, with connections opened while it ran, then stopped: each
     * data source hands out one of those connections, so the statement (not the connect) meets the stop.
     *
     * <p>The connections come from a copy of pgjdbc loaded with its own assertions off, as a node runs
     * it by default: pgjdbc 42.7 holds an {@code assert false} on the path of a batch whose connection
     * died ({@code BatchResultHandler.isAutoCommit}), which under the test JVM's {@code -ea} would throw
     * an {@link AssertionError} where a node without {@code -ea} gets the {@code BatchUpdateException}.
     */
    private static final class StoppedDatabase {
        private static final BlockingQueue<Connection> OPENED = open(40);

        static DataSource connectionOpenedBeforeItStopped() {
            Connection c = OPENED.poll();
            if (c == null) {
                throw new IllegalStateException("more statements than connections opened before the stop");
            }
            return (DataSource) Proxy.newProxyInstance(StoppedDatabase.class.getClassLoader(),
                    new Class<?>[] {DataSource.class}, (proxy, m, args) -> {
                        if (m.getName().equals("getConnection")) {
                            return c;
                        }
                        throw new UnsupportedOperationException(m.getName());
                    });
        }

        private static BlockingQueue<Connection> open(int n) {
            try {
                URLClassLoader pgjdbc = new URLClassLoader("pgjdbc-without-assertions",
                        new URL[] {org.postgresql.Driver.class.getProtectionDomain().getCodeSource().getLocation()},
                        ClassLoader.getPlatformClassLoader());
                pgjdbc.setDefaultAssertionStatus(false);
                pgjdbc.setPackageAssertionStatus("org.postgresql", false);
                Driver driver = (Driver) pgjdbc.loadClass("org.postgresql.Driver")
                        .getDeclaredConstructor().newInstance();
                EmbeddedPostgres pg =
                        EmbeddedPostgres.builder().start();
                ControlStore.migrate(pg.getPostgresDatabase());
                String url = pg.getJdbcUrl("postgres", "postgres");
                BlockingQueue<Connection> opened = new LinkedBlockingQueue<>();
                for (int i = 0; i < n; i++) {
                    opened.add(driver.connect(url, new Properties()));
                }
                pg.close();
                return opened;
            } catch (IOException | SQLException | ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** Makes {@code host} a (home) candidate of {@code shardId} besides the shard it registered with. */
    private void candidate(String host, int shardId) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO host_shards (host_id, shard_id, home) VALUES (?, ?, true) ON CONFLICT DO NOTHING")) {
            ps.setString(1, host);
            ps.setInt(2, shardId);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

}
