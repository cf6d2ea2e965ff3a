package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.Binding;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.cellhost.Component;
import dev.thresher.errors.ErrorCode;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints.Action;
import dev.thresher.limits.Limits;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.PublishOutcome;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRun;
import dev.thresher.wire.WireMessage;
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
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.util.PSQLException;

/**
 * The call contract, one test per statement, on a real three-node cluster whose nodes have
 * failpoints enabled. Slot and reduce leases are 3 s, the activation window 2 s and coordination
 * state is kept 5 s here, so expiry, windows and retention can be observed; every other limit is
 * the default.
 *
 * <p>Layout (from the dev cluster): 16 partitions of {@code orders}, partition p covers slots
 * [1024p, 1024p + 1023], is coordination slot p of every call, and is led by node {@code p % 3}.
 *
 * <p>The tests run in a random order (JUnit prints the seed; {@code -Djunit.jupiter.execution.order.random.seed=N}
 * replays one), so none depends on what another left behind, and every node's janitor sweeps at its
 * fastest (every second: a tenth of the 5 s retention, clamped to one second) while they run, so an
 * oracle that reads coordination state reads it for its own call only.
 */
@TestMethodOrder(MethodOrderer.Random.class)
class ContractIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern CODE = Pattern.compile("thresher_code=(\\d+)");
    private static final String ROWS = "{\"rows\":50000}";
    private static final long RETENTION_MS = 5000;
    /** Runs calls a test waits on; never the common pool, which a blocked call can starve on a small machine. */
    private static final ExecutorService CALLERS = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());

    private static DevCluster cluster;
    private static PGSimpleDataSource controlDb;
    private static ControlStore control;

    @BeforeAll
    static void start() throws Exception {
        // The fences under one leader per partition: no standby takes a partition over while a test holds its leader's
        // lease keeper, and leases outlast the holds (FencingIT, FailoverIT and TopologyChangesIT run with standbys).
        Limits limits = Limits.fromProperties(Map.of(
                "limits.reduceLeaseMs", "3000",
                "limits.activationWindowMs", "2000",
                "limits.partitionLeaseMs", "60000",
                "limits.coordinationRetentionMs", Long.toString(RETENTION_MS)));
        cluster = DevCluster.start(DevCluster.Options.defaults(Files.createTempDirectory("thresher-contract-"))
                .withPgwirePort(0).withLimits(limits).withFailpoints().withoutStandbys());
        controlDb = new PGSimpleDataSource();
        controlDb.setURL(cluster.controlUrl());
        controlDb.setUser(DevCluster.USER);
        controlDb.setPassword(DevCluster.PASSWORD);
        control = new ControlStore(controlDb);
        for (String guest : new String[] {"row_count", "emit_65", "nan_partial", "constant_key", "trap", "reduce_trap"}) {
            ContractGuests.bind(controlDb, DevCluster.TENANT, guest, guest);
        }
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @AfterEach
    void resetFailpoints() {
        cluster.nodes().forEach(n -> n.failpoints().reset());
    }

    // ---- dispatch ---------------------------------------------------------------------------------

    @Test
    void everyPartitionRunsBesideItsLeaderAndTheResultIsComplete() throws Exception {
        long[] receivedBefore = received();
        assertThat(call(0, "row_count")).isEqualTo(ROWS);
        long[] receivedAfter = received();
        // 16 partitions, led 6/5/5 by nodes 0/1/2: each node received exactly its own.
        assertThat(receivedAfter[0] - receivedBefore[0]).isEqualTo(6);
        assertThat(receivedAfter[1] - receivedBefore[1]).isEqualTo(5);
        assertThat(receivedAfter[2] - receivedBefore[2]).isEqualTo(5);
    }

    @Test
    void moreThanSixtyFourPartitionsIsATypedErrorNotATruncation() throws Exception {
        control.putTable(DevCluster.TENANT, "wide", "id", "bigint");
        int n = 65;
        int width = Slots.COUNT / n;
        for (int i = 0; i < n; i++) {
            int lo = i * width;
            control.putPartition(new Partition(1000 + i, DevCluster.TENANT, "wide", lo,
                    i == n - 1 ? Slots.COUNT - 1 : lo + width - 1, 1, 1));
        }
        byte[] wasm = ContractGuests.wasm("row_count");
        String digest = Component.of(wasm).digest();
        control.putPackage(digest, wasm);
        control.putBinding(DevCluster.TENANT, "wide_rows", digest, "SELECT region, amount FROM wide");
        long[] before = received();
        assertCode(() -> call(0, "wide_rows"), ErrorCode.TOO_MANY_COORDINATION_SLOTS, "53400");
        assertThat(received()).as("nothing was dispatched").isEqualTo(before);
        assertThat(lastInvocation("wide_rows", "state")).isEqualTo("failed");
        assertThat(lastInvocation("wide_rows", "error_code")).isEqualTo(String.valueOf(ErrorCode.TOO_MANY_COORDINATION_SLOTS.code()));
    }

    @Test
    void aTableWhosePartitionsLeaveSlotsOutIsRefusedNotAnsweredWithoutTheirRows() throws Exception {
        // Written partition by partition, past the checked set write: half the slot space has no partition.
        control.putTable(DevCluster.TENANT, "half", "id", "bigint");
        control.putPartition(new Partition(3200, DevCluster.TENANT, "half", 0, Slots.COUNT / 2 - 1, 1, 1));
        cluster.nodes().forEach(node -> node.catalog().refreshTopology()); // not racing the notification
        control.putBinding(DevCluster.TENANT, "half_rows", Component.of(ContractGuests.wasm("row_count")).digest(),
                "SELECT region, amount FROM half");
        long[] before = received();
        assertCode(() -> call(0, "half_rows"), ErrorCode.PARTITIONS_DO_NOT_TILE, "55000");
        assertThat(received()).as("nothing was dispatched").isEqualTo(before);
        assertThat(lastInvocation("half_rows", "error_code")).isEqualTo(String.valueOf(ErrorCode.PARTITIONS_DO_NOT_TILE.code()));
    }

    @Test
    void aPartitionPastTheRowBoundIsATypedErrorNotATruncation() throws Exception {
        // On shard 1 (node 0): slot 0 holds 4,097 rows (one past the bound), slots 1.. hold 4,096.
        try (Connection c = DriverManager.getConnection(cluster.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE dense (id bigint PRIMARY KEY, region text NOT NULL, amount double precision NOT NULL, "
                    + "thresher_slot integer NOT NULL)");
            s.execute("INSERT INTO dense SELECT g, 'r', 1.0, CASE WHEN g <= 4097 THEN 0 ELSE 1 END "
                    + "FROM generate_series(1, 8193) g");
        }
        control.putTable(DevCluster.TENANT, "dense", "id", "bigint");
        control.putPartition(new Partition(3000, DevCluster.TENANT, "dense", 0, 0, 1, 1));
        control.putPartition(new Partition(3001, DevCluster.TENANT, "dense", 1, Slots.COUNT - 1, 1, 1));
        cluster.nodes().get(0).leases().renew();
        String digest = Component.of(ContractGuests.wasm("row_count")).digest();
        control.putBinding(DevCluster.TENANT, "dense_all", digest, "SELECT region, amount FROM dense");
        control.putBinding(DevCluster.TENANT, "dense_bounded", digest, "SELECT region, amount FROM dense WHERE id <> 1");
        assertCode(() -> call(0, "dense_all"), ErrorCode.BATCH_TOO_MANY_ROWS, "53400");
        assertThat(lastInvocation("dense_all", "result_json")).as("no partial answer").isNull();
        assertThat(call(0, "dense_bounded")).as("exactly the bound is served whole").isEqualTo("{\"rows\":8192}");
    }

    /**
     * The call path does not write user tables, even through a view that writes when read: shard
     * sessions are read-only, so the read fails typed and nothing is written. A selector that calls a
     * function never reaches a shard at all.
     */
    @Test
    void theCallPathDoesNotWriteUserTables() throws Exception {
        try (Connection c = DriverManager.getConnection(cluster.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE audit_log (at timestamptz)");
            s.execute("CREATE FUNCTION audit_read() RETURNS int VOLATILE LANGUAGE sql AS "
                    + "'INSERT INTO audit_log VALUES (now()) RETURNING 1'");
            s.execute("CREATE TABLE audited_rows (id bigint PRIMARY KEY, region text NOT NULL, "
                    + "amount double precision NOT NULL, thresher_slot integer NOT NULL)");
            s.execute("INSERT INTO audited_rows SELECT g, 'r', 1.0, g % 16 FROM generate_series(1, 50) g");
            s.execute("CREATE VIEW audited AS SELECT * FROM audited_rows WHERE audit_read() = 1");
        }
        control.putTable(DevCluster.TENANT, "audited", "id", "bigint");
        control.putPartition(new Partition(3100, DevCluster.TENANT, "audited", 0, Slots.COUNT - 1, 1, 1));
        cluster.nodes().get(0).leases().renew();
        String digest = Component.of(ContractGuests.wasm("row_count")).digest();
        control.putBinding(DevCluster.TENANT, "writes_when_read", digest, "SELECT region, amount FROM audited");
        assertCode(() -> call(0, "writes_when_read"), ErrorCode.INVALID_SELECTOR, "42P17");
        // Written by hand, past every check a deploy makes: refused when the binding is read.
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO bindings (tenant, name, version, package_digest, selector_sql) VALUES (?, ?, 1, ?, ?)")) {
            ps.setString(1, DevCluster.TENANT);
            ps.setString(2, "calls_a_function");
            ps.setString(3, digest);
            ps.setString(4, "SELECT region, amount FROM audited_rows WHERE audit_read() = 1");
            ps.executeUpdate();
        }
        assertCode(() -> call(0, "calls_a_function"), ErrorCode.INVALID_SELECTOR, "42P17");
        try (Connection c = DriverManager.getConnection(cluster.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM audit_log")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getLong(1)).as("rows written by the call path").isZero();
        }
        assertThat(call(0, "row_count")).as("other bindings are unaffected").isEqualTo(ROWS);
    }

    @Test
    void aShardFailureStopsAdmission() throws Exception {
        // The first slot of each host (0, 1, 2) is held before its guest. Then slot 0 runs and fails: node 0
        // skips its later slots (3, 6, ...) and the coordinator tells nodes 1 and 2 that the call stopped.
        // Released after that, slots 1 and 2, admitted before the failure, run; nothing after them does.
        Action holdFirst = Action.halt();
        Action holdOthers = Action.halt();
        node(0).failpoints().arm(Failpoint.BEFORE_GUEST_START, s -> s.runIndex() == 0, 1, holdFirst);
        node(1).failpoints().arm(Failpoint.BEFORE_GUEST_START, s -> s.runIndex() == 1, 1, holdOthers);
        node(2).failpoints().arm(Failpoint.BEFORE_GUEST_START, s -> s.runIndex() == 2, 1, holdOthers);
        node(0).failpoints().arm(Failpoint.AFTER_GUEST_START, s -> s.runIndex() == 0, 1, Action.fail(ErrorCode.GUEST_TRAP));
        long stops1 = node(1).shardExecutor().stopsReceived();
        long stops2 = node(2).shardExecutor().stopsReceived();
        long starts = cluster.nodes().stream().mapToLong(n -> n.cells().guestStarts()).sum();
        CompletableFuture<Void> failed = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "row_count"),
                ErrorCode.GUEST_TRAP, "38000"), CALLERS);
        await(() -> node(0).failpoints().fired(Failpoint.BEFORE_GUEST_START) == 1
                && node(1).failpoints().fired(Failpoint.BEFORE_GUEST_START) == 1
                && node(2).failpoints().fired(Failpoint.BEFORE_GUEST_START) == 1, "slots 0, 1 and 2 are held", failed);
        node(0).failpoints().release(holdFirst);
        await(() -> node(1).shardExecutor().stopsReceived() > stops1 && node(2).shardExecutor().stopsReceived() > stops2,
                "nodes 1 and 2 heard that the call stopped", failed);
        cluster.nodes().forEach(n -> n.failpoints().release(holdOthers));
        failed.get(30, TimeUnit.SECONDS);
        assertThat(cluster.nodes().stream().mapToLong(n -> n.cells().guestStarts()).sum() - starts)
                .as("only slots 0, 1 and 2, admitted before the failure, ran their guests").isEqualTo(3);
    }

    // ---- deadline ---------------------------------------------------------------------------------

    @Test
    void anExpiredRequestIsRefusedWithoutRunningTheGuest() throws Exception {
        Node n2 = node(2);
        long starts = n2.cells().guestStarts();
        long refusals = n2.shardExecutor().refusals();
        long received = n2.failpoints().hits(Failpoint.WIRE_RECEIVE);
        // Every shard on node 2 is held past the 1 s call deadline before its guest would start.
        n2.failpoints().arm(Failpoint.BEFORE_GUEST_START, -1, Action.delay(Duration.ofMillis(1500)));
        try (Connection c = connect(0); Statement s = c.createStatement()) {
            s.execute("SET thresher.call_deadline_ms = 1000");
            assertCode(() -> query(s, "CALL BINDING row_count('{}')"), ErrorCode.DEADLINE_EXCEEDED, "57014");
        }
        await(() -> n2.shardExecutor().refusals() - refusals == n2.failpoints().hits(Failpoint.WIRE_RECEIVE) - received,
                "every shard node 2 received was refused");
        assertThat(n2.failpoints().hits(Failpoint.WIRE_RECEIVE) - received).isPositive();
        assertThat(n2.cells().guestStarts()).as("guest starts on node 2").isEqualTo(starts);
    }

    @Test
    void aCallerMayAskForLessTimeNeverMore() throws Exception {
        try (Connection c = connect(1); Statement s = c.createStatement()) {
            assertCode(() -> s.execute("SET thresher.call_deadline_ms = 30001"), ErrorCode.INVALID_DEADLINE, "22023");
            s.execute("SET thresher.call_deadline_ms = 5000");
            assertThat(query(s, "CALL BINDING row_count('{}')")).isEqualTo(ROWS);
        }
        HttpResponse<String> tooLong = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create(node(1).httpAddress() + "/v1/bindings/row_count/call"))
                .header("Authorization", "Bearer " + cluster.adminToken()).header("Thresher-Deadline-Ms", "30001").POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(tooLong.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(tooLong.body()).path("error").path("code").asInt()).isEqualTo(ErrorCode.INVALID_DEADLINE.code());
    }

    @Test
    void waitingForAMissingCellIsBoundedByTheEarlierOfDeadlineAndActivationWindow() throws Exception {
        control.putShard(99, "jdbc:postgresql://127.0.0.1:1/nowhere");
        control.putTable(DevCluster.TENANT, "orphan", "id", "bigint");
        control.putPartition(new Partition(2000, DevCluster.TENANT, "orphan", 0, Slots.COUNT - 1, 99, 1));
        byte[] wasm = ContractGuests.wasm("row_count");
        String digest = Component.of(wasm).digest();
        control.putPackage(digest, wasm);
        control.putBinding(DevCluster.TENANT, "orphan_rows", digest, "SELECT region, amount FROM orphan");
        try (Connection c = connect(2); Statement s = c.createStatement()) {
            // Deadline (1 s) before the window (2 s).
            s.execute("SET thresher.call_deadline_ms = 1000");
            assertCode(() -> query(s, "CALL BINDING orphan_rows('{}')"), ErrorCode.CELL_UNAVAILABLE, "57P03", false);
            // Window (2 s) before the default 30 s deadline: the call gives up long before its deadline.
            s.execute("SET thresher.call_deadline_ms = DEFAULT");
            long t0 = System.nanoTime();
            assertCode(() -> query(s, "CALL BINDING orphan_rows('{}')"), ErrorCode.CELL_UNAVAILABLE, "57P03");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).as("bounded by the window")
                    .isLessThan(15_000);
        }
    }

    // ---- failure, slots ---------------------------------------------------------------------------

    @Test
    void oneFailedShardFailsTheCallWithThatShardsCode() throws Exception {
        node(5).failpoints().arm(Failpoint.AFTER_GUEST_START, s -> s.partitionId() == 5, 1,
                Action.fail(ErrorCode.GUEST_REPORTED_FAILURE));
        assertCode(() -> call(0, "row_count"), ErrorCode.GUEST_REPORTED_FAILURE, "38000");
        try (Connection c = controlDb.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT state, error_code, result_json FROM invocations "
                     + "WHERE binding_name = 'row_count' ORDER BY created_at DESC LIMIT 1")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("failed");
            assertThat(rs.getInt(2)).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE.code());
            assertThat(rs.getString(3)).as("no partial answer is visible").isNull();
        }
    }

    @Test
    void sixtyFiveEmitsExceedTheEmitBound() {
        assertCode(() -> call(1, "emit_65"), ErrorCode.EMIT_LIMIT_EXCEEDED, "53400");
    }

    @Test
    void aNonFinitePartialIsRefused() {
        assertCode(() -> call(1, "nan_partial"), ErrorCode.PARTIAL_NON_NUMERIC, "39000");
    }

    @Test
    void theSameKeyFromTwoShardsIsAViolationNotASum() {
        assertCode(() -> call(2, "constant_key"), ErrorCode.PARTIAL_KEY_DUPLICATED, "39000");
    }

    @Test
    void aSlotWhoseLeaseEndedBeforeReduceFailsTheCall() {
        node(0).failpoints().arm(Failpoint.BEFORE_REDUCE, 1, Action.delay(Duration.ofMillis(3500)));
        assertCode(() -> call(0, "row_count"), ErrorCode.SLOT_EXPIRED, "40001", true);
    }

    @Test
    void aSlotProducedAgainstSupersededTopologyIsStale() throws Exception {
        Node leader = node(6);
        Action hold = Action.halt();
        leader.failpoints().arm(Failpoint.BEFORE_SLOT_PUBLISH, s -> s.partitionId() == 6, 1, hold);
        CompletableFuture<Void> failed = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "row_count"),
                ErrorCode.SLOT_STALE, "40001"), CALLERS);
        await(() -> leader.failpoints().fired(Failpoint.BEFORE_SLOT_PUBLISH) == 1, "slot 6 is about to publish", failed);
        // The leader's lease keeper is frozen first: otherwise it may notice the new epoch and give the lease up
        // before the slot publishes (TARGET_STALE, the lease lost), and the publish fence under test is not reached.
        leader.failpoints().arm(Failpoint.LEASE_RENEW, 1, Action.halt());
        CompletableFuture<List<Integer>> frozenRenewal = CompletableFuture.supplyAsync(() -> leader.leases().renew(), CALLERS);
        await(() -> leader.failpoints().fired(Failpoint.LEASE_RENEW) == 1, "the leader's lease keeper is frozen", failed);
        try (Connection c = controlDb.getConnection(); Statement s = c.createStatement()) {
            assertThat(s.executeUpdate("UPDATE partitions SET epoch = epoch + 1 WHERE partition_id = 6")).isEqualTo(1);
        }
        leader.failpoints().release(hold);
        failed.get(30, TimeUnit.SECONDS);
        leader.failpoints().disarm(Failpoint.LEASE_RENEW);
        frozenRenewal.get(30, TimeUnit.SECONDS);
        // The leader takes its lease again under the new epoch; calls are served again.
        leader.leases().renew();
        assertThat(call(0, "row_count")).isEqualTo(ROWS);
    }

    @Test
    void guestFailureInReduceFailsTheCall() {
        assertCode(() -> call(0, "reduce_trap"), ErrorCode.GUEST_TRAP, "38000");
    }

    // ---- retry classes ------------------------------------------------------------------------------

    @Test
    void aRetryableOutcomeThatProvablyRanNoGuestIsRetriedOnceAndSucceeds() throws Exception {
        Node leader = node(9);
        long retries = node(0).coordinator().shardRetries();
        long refusals = leader.shardExecutor().refusals();
        long starts = leader.cells().guestStarts();
        // Slot 9's request is held on arrival while partition 9 moves on to a new epoch for real (its leader
        // takes its lease again under it): the request names an epoch its receiver no longer leads under.
        Action hold = Action.halt();
        leader.failpoints().arm(Failpoint.WIRE_RECEIVE, s -> s.partitionId() == 9, 1, hold);
        CompletableFuture<String> call = CompletableFuture.supplyAsync(() -> callUnchecked(0, "row_count"), CALLERS);
        await(() -> leader.failpoints().fired(Failpoint.WIRE_RECEIVE) == 1, "slot 9's request arrived and is held", call);
        moveOn(leader, 9);
        leader.failpoints().release(hold);
        assertThat(call.get(30, TimeUnit.SECONDS)).isEqualTo(ROWS);
        assertThat(leader.shardExecutor().refusals() - refusals).as("slot 9 refused by the epoch fence").isEqualTo(1);
        assertThat(node(0).coordinator().shardRetries() - retries).isEqualTo(1);
        assertThat(lastInvocation("row_count", "attempts")).isEqualTo("17");
        // Node 0 leads six partitions and coordinates: six runs, each once (slot 9's only on its second attempt),
        // and the reduce.
        assertThat(leader.cells().guestStarts() - starts).isEqualTo(7);
    }

    @Test
    void aRequestThatNeverLeftIsRetriedOnAReResolvedTarget() throws Exception {
        long retries = node(0).coordinator().shardRetries();
        long received = node(12).failpoints().hits(Failpoint.WIRE_RECEIVE);
        node(0).failpoints().arm(Failpoint.WIRE_SEND, s -> s.partitionId() == 12, 1, Action.fail(ErrorCode.HOST_UNREACHABLE));
        assertThat(call(0, "row_count")).isEqualTo(ROWS);
        assertThat(node(0).failpoints().fired(Failpoint.WIRE_SEND)).isEqualTo(1);
        // Node 0 leads partitions 0, 3, 6, 9, 12, 15, all in one host request: the request that never left
        // is sent again whole, and only that second request arrived (six slots).
        assertThat(node(0).coordinator().shardRetries() - retries).isEqualTo(6);
        assertThat(node(12).failpoints().hits(Failpoint.WIRE_RECEIVE) - received).isEqualTo(6);
    }

    @Test
    void aSlotWaitingForANewLeaderIsNotSentAfterAnotherSlotFailed() throws Exception {
        Node n9 = node(9);
        Node n10 = node(10);
        Node coordinator = cluster.nodes().get(0);
        // Slot 9 is held on arrival, then refused before its guest (retryable), after partition 9 lost its leader
        // (so its retry has to wait for a new one); slot 10's guest runs and is held, then the slot fails for good.
        // The epoch stays: the coordinator has no reason to give up on the held request. Every send of slot 9 is
        // counted at the coordinator.
        Action holdNine = Action.haltThenFail(ErrorCode.TARGET_STALE);
        Action holdTen = Action.halt();
        n9.failpoints().arm(Failpoint.WIRE_RECEIVE, s -> s.partitionId() == 9, 1, holdNine);
        n10.failpoints().arm(Failpoint.AFTER_GUEST_START, s -> s.partitionId() == 10, 1, holdTen);
        n10.failpoints().arm(Failpoint.BEFORE_SLOT_PUBLISH, s -> s.partitionId() == 10, 1, Action.fail(ErrorCode.GUEST_TRAP));
        coordinator.failpoints().arm(Failpoint.WIRE_SEND, s -> s.runIndex() == 9, -1, Action.delay(Duration.ZERO));
        long failedBefore = coordinator.coordinator().failedShardRuns();
        long waitsBefore = coordinator.coordinator().leaderWaits();
        long supersededBefore = coordinator.coordinator().supersededRequests();
        // Slot 9 never started, so the failure that surfaces is slot 10's, the lowest started slot that failed.
        CompletableFuture<Void> failed = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "row_count"),
                ErrorCode.GUEST_TRAP, "38000"), CALLERS);
        await(() -> n9.failpoints().fired(Failpoint.WIRE_RECEIVE) == 1
                && n10.failpoints().fired(Failpoint.AFTER_GUEST_START) == 1, "slots 9 and 10 are held", failed);
        // Node 9's lease keeper is frozen (a renewal halted while it holds the keeper's turn), then the lease is
        // deleted: no renewal can take it back until the keeper thaws.
        n9.failpoints().arm(Failpoint.LEASE_RENEW, 1, Action.halt());
        CompletableFuture<List<Integer>> frozenRenewal = CompletableFuture.supplyAsync(() -> n9.leases().renew(), CALLERS);
        await(() -> n9.failpoints().fired(Failpoint.LEASE_RENEW) == 1, "node 9's lease keeper is frozen", failed);
        try (Connection c = controlDb.getConnection(); Statement s = c.createStatement()) {
            assertThat(s.executeUpdate("DELETE FROM partition_leases WHERE partition_id = 9")).isEqualTo(1);
        }
        n9.failpoints().release(holdNine);
        await(() -> coordinator.coordinator().leaderWaits() > waitsBefore, "slot 9 was refused and waits for a leader",
                failed);
        n10.failpoints().release(holdTen);
        await(() -> coordinator.coordinator().failedShardRuns() > failedBefore, "slot 10 failed for good", failed);
        n9.failpoints().disarm(Failpoint.LEASE_RENEW); // thawed: a leader for partition 9 appears while slot 9 may still wait
        assertThat(frozenRenewal.get(30, TimeUnit.SECONDS)).as("node 9 leads partition 9 again").contains(9);
        failed.get(30, TimeUnit.SECONDS);
        assertThat(coordinator.failpoints().fired(Failpoint.WIRE_SEND)).as("slot 9 was sent once, never again")
                .isEqualTo(1);
        assertThat(coordinator.coordinator().supersededRequests()).isEqualTo(supersededBefore);
    }

    @Test
    void theAttemptBudgetIsTwoAttemptsInAll() throws Exception {
        Node leader = node(10);
        long retries = node(0).coordinator().shardRetries();
        long refusals = leader.shardExecutor().refusals();
        // Both attempts of slot 10 are held on arrival, and each time partition 10 moves on before it is let go.
        Action first = Action.halt();
        Action second = Action.halt();
        leader.failpoints().arm(Failpoint.WIRE_RECEIVE, s -> s.partitionId() == 10, 1, first);
        leader.failpoints().arm(Failpoint.WIRE_RECEIVE, s -> s.partitionId() == 10, 1, second);
        // Slot 10's guest never ran, but the other slots' did: the hint says the call's guest code ran.
        CompletableFuture<Void> refused = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "row_count"),
                ErrorCode.TARGET_STALE, "40001", true), CALLERS);
        await(() -> leader.failpoints().fired(Failpoint.WIRE_RECEIVE) == 1, "attempt 1 of slot 10 is held", refused);
        moveOn(leader, 10);
        leader.failpoints().release(first);
        await(() -> leader.failpoints().fired(Failpoint.WIRE_RECEIVE) == 2, "attempt 2 of slot 10 is held", refused);
        moveOn(leader, 10);
        leader.failpoints().release(second);
        refused.get(30, TimeUnit.SECONDS);
        assertThat(leader.shardExecutor().refusals() - refusals).as("both attempts refused by the epoch fence").isEqualTo(2);
        assertThat(node(0).coordinator().shardRetries() - retries).isEqualTo(1);
    }

    @Test
    void aRetryableOutcomeAfterTheGuestStartedIsNotRetried() throws Exception {
        int slot = 11;
        Node leader = node(slot);
        Node thief = cluster.nodes().get((slot + 1) % 3);
        long retries = node(0).coordinator().shardRetries();
        // Slot 11's guest runs; before it publishes, another host takes the partition's lease: the publish
        // fence refuses it (TARGET_STALE, retryable), and since the guest ran, the call is not retried.
        Action hold = Action.halt();
        leader.failpoints().arm(Failpoint.AFTER_GUEST_START, s -> s.partitionId() == slot, 1, hold);
        CompletableFuture<Void> refused = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "row_count"),
                ErrorCode.TARGET_STALE, "40001", true), CALLERS);
        await(() -> leader.failpoints().fired(Failpoint.AFTER_GUEST_START) == 1, "slot 11's guest ran", refused);
        stealLease(slot, thief);
        try {
            leader.failpoints().release(hold);
            refused.get(30, TimeUnit.SECONDS);
        } finally {
            giveLeaseBack(slot, thief, leader);
        }
        assertThat(node(0).coordinator().shardRetries() - retries).isZero();
    }

    @Test
    void anAmbiguousTransportOutcomeIsNeverRetried() {
        long retries = node(0).coordinator().shardRetries();
        node(7).failpoints().arm(Failpoint.WIRE_RECEIVE, s -> s.partitionId() == 7, 1, Action.drop());
        assertCode(() -> call(0, "row_count"), ErrorCode.TRANSPORT_OUTCOME_UNKNOWN, "58000");
        assertThat(node(7).failpoints().fired(Failpoint.WIRE_RECEIVE)).isEqualTo(1);
        assertThat(node(0).coordinator().shardRetries() - retries).isZero();
    }

    @Test
    void severalFailuresSurfaceTheLowestSlotWhateverTheArrivalOrder() throws Exception {
        // Slots 1, 3 and 5 (on nodes 1, 0 and 2) all run their guests and are held; then they fail at publish
        // in the order 5, 3, 1, each failure reaching the coordinator before the next is let go. Slot 1's
        // cause surfaces.
        Node coordinator = cluster.nodes().get(0);
        int[] order = {5, 3, 1};
        ErrorCode[] codes = {ErrorCode.GUEST_TRAP, ErrorCode.GUEST_INVALID_RESULT, ErrorCode.GUEST_REPORTED_FAILURE};
        Action[] holds = new Action[order.length];
        for (int i = 0; i < order.length; i++) {
            int slot = order[i];
            holds[i] = Action.halt();
            node(slot).failpoints().arm(Failpoint.AFTER_GUEST_START, s -> s.runIndex() == slot, 1, holds[i]);
            node(slot).failpoints().arm(Failpoint.BEFORE_SLOT_PUBLISH, s -> s.runIndex() == slot, 1, Action.fail(codes[i]));
        }
        long failedBefore = coordinator.coordinator().failedShardRuns();
        CompletableFuture<Void> failed = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "row_count"),
                ErrorCode.GUEST_REPORTED_FAILURE, "38000"), CALLERS);
        await(() -> Arrays.stream(order).allMatch(p -> node(p).failpoints().fired(Failpoint.AFTER_GUEST_START) == 1),
                "slots 5, 3 and 1 ran their guests and are held", failed);
        for (int i = 0; i < order.length; i++) {
            node(order[i]).failpoints().release(holds[i]);
            long expected = failedBefore + i + 1;
            await(() -> coordinator.coordinator().failedShardRuns() >= expected, "slot " + order[i] + " failed", failed);
        }
        failed.get(30, TimeUnit.SECONDS);
    }

    // ---- identity, journal, publication -------------------------------------------------------------

    @Test
    void aRedeliveredWireIdentityReplaysTheJournaledOutcome() throws Exception {
        assertThat(call(0, "row_count")).isEqualTo(ROWS);
        UUID callId = UUID.fromString(lastInvocation("row_count", "call_id"));
        int slot = 4;
        Node leader = node(slot);
        String wireId;
        long epoch;
        byte[] journaled;
        int rows;
        String digest;
        try (Connection c = controlDb.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT s.wire_id, s.epoch, j.payload, j.row_count, i.package_digest "
                     + "FROM shard_runs s JOIN invocations i USING (call_id) "
                     + "JOIN journal j ON j.tenant = s.tenant AND j.wire_id = s.wire_id "
                     + "WHERE s.call_id = ? AND s.run_index = ?")) {
            ps.setObject(1, callId);
            ps.setInt(2, slot);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                wireId = rs.getString(1);
                epoch = rs.getLong(2);
                journaled = rs.getBytes(3);
                rows = rs.getInt(4);
                digest = rs.getString(5);
            }
        }
        Host host = control.readTopology().hosts().get(leader.hostId());
        int version = control.currentBinding(DevCluster.TENANT, "row_count").orElseThrow().version();
        long starts = leader.cells().guestStarts();
        long replays = leader.shardExecutor().replays();
        try (WireClient client = new WireClient("contract-test", Limits.DEFAULTS)) {
            for (int delivery = 1; delivery <= 2; delivery++) {
                HostReply reply = client.send(host.wireHost(), host.wirePort(), new HostRequest(delivery,
                        callId.toString(), DevCluster.TENANT, "row_count", digest, version, TimeUnit.SECONDS.toMicros(10),
                        "{}", List.of(new ShardRun(slot, slot, epoch, wireId, 1)))).get(30, TimeUnit.SECONDS);
                assertThat(reply.runs()).singleElement().satisfies(o -> {
                    assertThat(o.published()).as("delivery answers the journaled outcome").isTrue();
                    assertThat(o.rowCount()).isEqualTo(rows);
                });
            }
        }
        try (Connection c = controlDb.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*), (array_agg(payload))[1] FROM journal WHERE wire_id = ?")) {
            ps.setString(1, wireId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getInt(1)).as("one journal entry per wire identity").isEqualTo(1);
                assertThat(rs.getBytes(2)).as("the journaled partials are unchanged").isEqualTo(journaled);
            }
        }
        assertThat(leader.cells().guestStarts()).as("the guest did not run again").isEqualTo(starts);
        assertThat(leader.shardExecutor().replays() - replays).isEqualTo(2);
    }

    @Test
    void aRedeliveredFailureStillSaysTheGuestRan() throws Exception {
        // The trap guest traps in every partition: each host's first slot runs and traps, and a trap is journaled
        // as that slot's outcome (at least the one that failed the call; the others may have been stopped first).
        assertCode(() -> call(0, "trap"), ErrorCode.GUEST_TRAP, "38000");
        UUID callId = UUID.fromString(lastInvocation("trap", "call_id"));
        String wireId;
        long epoch;
        int slot;
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT wire_id, epoch, partition_id FROM journal
                WHERE call_id = ? AND kind = 'shard' AND NOT succeeded ORDER BY partition_id LIMIT 1""")) {
            ps.setObject(1, callId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("a trap journaled as a failure").isTrue();
                wireId = rs.getString(1);
                epoch = rs.getLong(2);
                slot = rs.getInt(3); // partition p is coordination slot p here
            }
        }
        Node leader = node(slot);
        Host host = control.readTopology().hosts().get(leader.hostId());
        Binding binding = control.currentBinding(DevCluster.TENANT, "trap").orElseThrow();
        long starts = leader.cells().guestStarts();
        try (WireClient client = new WireClient("contract-test", Limits.DEFAULTS)) {
            HostReply reply = client.send(host.wireHost(), host.wirePort(), new HostRequest(1, callId.toString(),
                    DevCluster.TENANT, "trap", binding.componentDigest(), binding.version(),
                    TimeUnit.SECONDS.toMicros(10), "{}", List.of(new ShardRun(slot, slot, epoch, wireId, 2))))
                    .get(30, TimeUnit.SECONDS);
            assertThat(reply.runs()).singleElement().satisfies(f -> {
                assertThat(f.code()).isEqualTo(ErrorCode.GUEST_TRAP);
                assertThat(f.guestStarted()).as("a replayed failure is no proof that the guest did not run").isTrue();
            });
        }
        assertThat(leader.cells().guestStarts()).as("the guest did not run again").isEqualTo(starts);
    }

    @Test
    void reduceRunsOnTheReduceLeaseHolderAndItsOutcomeIsJournaled() throws Exception {
        assertThat(call(1, "row_count")).isEqualTo(ROWS);
        UUID callId = UUID.fromString(lastInvocation("row_count", "call_id"));
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT r.host_id, j.host_id, j.payload, i.published_by, i.coordinator_host
                FROM reduce_leases r JOIN journal j ON j.wire_id = r.wire_id JOIN invocations i ON i.call_id = r.call_id
                WHERE r.call_id = ?""")) {
            ps.setObject(1, callId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                String coordinator = node(1).hostId();
                assertThat(rs.getString(1)).isEqualTo(coordinator);
                assertThat(rs.getString(2)).isEqualTo(coordinator);
                assertThat(new String(rs.getBytes(3), java.nio.charset.StandardCharsets.UTF_8)).isEqualTo(ROWS);
                assertThat(rs.getString(4)).isEqualTo(coordinator);
                assertThat(rs.getString(5)).isEqualTo(coordinator);
            }
        }
    }

    @Test
    void aResultBecomesVisibleOnceAndIsNeverReplaced() throws Exception {
        assertThat(call(2, "row_count")).isEqualTo(ROWS);
        UUID callId = UUID.fromString(lastInvocation("row_count", "call_id"));
        PublishOutcome again = control.calls().publishResult(callId, node(2).hostId(), "{\"rows\":1}", 0);
        assertThat(again.status()).isEqualTo(PublishOutcome.Status.ALREADY_PUBLISHED);
        assertThat(again.visibleResult()).contains(ROWS);
        assertThat(control.calls().takeReduceLease(callId, "intruder", callId + "/reduce", 3000))
                .as("a live reduce lease is not taken over").isFalse();
    }

    @Test
    void aRedeployDuringTheCallRefusesItsResultAsStale() throws Exception {
        byte[] wasm = ContractGuests.wasm("row_count");
        String digest = Component.of(wasm).digest();
        control.putBinding(DevCluster.TENANT, "redeployed", digest, ContractGuests.SELECTOR);
        Action hold = Action.halt();
        node(0).failpoints().arm(Failpoint.BEFORE_REDUCE, 1, hold);
        CompletableFuture<Void> refused = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "redeployed"),
                ErrorCode.TARGET_STALE, "40001"), CALLERS);
        await(() -> node(0).failpoints().fired(Failpoint.BEFORE_REDUCE) == 1, "the call reached reduce", refused);
        // Same component, another selector: a new binding version while the call is in flight.
        control.putBinding(DevCluster.TENANT, "redeployed", digest, ContractGuests.SELECTOR + " WHERE amount < 0");
        node(0).failpoints().release(hold);
        refused.get(30, TimeUnit.SECONDS);
        assertThat(lastInvocation("redeployed", "result_json")).as("nothing published").isNull();
        // Every shard runs the version its call was planned with; the next call plans with the new one.
        assertThat(call(0, "redeployed")).as("the next call runs the new selector everywhere").isEqualTo("{\"rows\":0}");
    }

    @Test
    void reduceDoesNotQueueBehindShardRuns() throws Exception {
        Node n0 = cluster.nodes().get(0);
        Action holdReduce = Action.halt();
        n0.failpoints().arm(Failpoint.BEFORE_REDUCE, 1, holdReduce);
        CompletableFuture<String> a = CompletableFuture.supplyAsync(() -> {
            try (Connection c = connect(0); Statement s = c.createStatement()) {
                s.execute("SET thresher.call_deadline_ms = 20000");
                return query(s, "CALL BINDING row_count('{}')");
            } catch (SQLException e) {
                throw new AssertionError(e);
            }
        }, CALLERS);
        await(() -> n0.failpoints().fired(Failpoint.BEFORE_REDUCE) == 1, "call A reached reduce", a);
        // Other calls fill every shard thread of node 0 (one host request each), held before their guests.
        Action holdShards = Action.halt();
        int threads = Limits.DEFAULTS.shardConcurrency();
        n0.failpoints().arm(Failpoint.BEFORE_GUEST_START, threads, holdShards);
        List<CompletableFuture<String>> others = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            int coordinator = 1 + i % 2;
            others.add(CompletableFuture.supplyAsync(() -> callUnchecked(coordinator, "row_count"), CALLERS));
        }
        await(() -> n0.failpoints().fired(Failpoint.BEFORE_GUEST_START) == threads,
                "every shard thread of node 0 is held", others.get(0));
        n0.failpoints().release(holdReduce);
        assertThat(a.get(30, TimeUnit.SECONDS)).as("call A reduced while node 0's shard threads were busy")
                .isEqualTo(ROWS);
        n0.failpoints().release(holdShards);
        for (CompletableFuture<String> other : others) {
            assertThat(other.get(30, TimeUnit.SECONDS)).isEqualTo(ROWS);
        }
    }

    @Test
    void aCallStillRunningKeepsItsCoordinationStatePastTheRetention() throws Exception {
        Node n0 = cluster.nodes().get(0);
        Action hold = Action.halt();
        n0.failpoints().arm(Failpoint.BEFORE_REDUCE, 1, hold);
        CompletableFuture<Void> call = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "row_count"),
                ErrorCode.SLOT_EXPIRED, "40001"), CALLERS);
        await(() -> n0.failpoints().fired(Failpoint.BEFORE_REDUCE) == 1, "the call reached reduce", call);
        UUID callId = UUID.fromString(lastInvocation("row_count", "call_id"));
        assertThat(lastInvocation("row_count", "state")).isEqualTo("running");
        int rows = rowsOf(callId);
        await(() -> olderThanRetention(callId), "the call's journal is older than the retention");
        control.calls().cleanup(RETENTION_MS);
        assertThat(rowsOf(callId)).as("journal, slots and lease of a running call survive a sweep").isEqualTo(rows);
        n0.failpoints().release(hold);
        // Its slots are still there, their leases (3 s here) ended: expired, not missing.
        call.get(30, TimeUnit.SECONDS);
    }

    private static boolean olderThanRetention(UUID callId) {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT bool_and(recorded_at < now() - make_interval(secs => ? / 1000.0)) FROM journal WHERE call_id = ?")) {
            ps.setLong(1, RETENTION_MS);
            ps.setObject(2, callId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void closingTheConnectionDoesNotStopDispatchedWork() throws Exception {
        Action hold = Action.halt();
        node(0).failpoints().arm(Failpoint.BEFORE_REDUCE, 1, hold);
        Connection c = connect(0);
        CompletableFuture<Void> abandoned = CompletableFuture.runAsync(() -> {
            try (Statement s = c.createStatement()) {
                s.executeQuery("CALL BINDING row_count('{}')");
            } catch (SQLException expected) {
                // the connection is closed under it
            }
        }, CALLERS);
        await(() -> node(0).failpoints().fired(Failpoint.BEFORE_REDUCE) == 1, "the call reached reduce", abandoned);
        UUID callId = UUID.fromString(lastInvocation("row_count", "call_id"));
        assertThat(invocation(callId, "state")).isEqualTo("running");
        c.abort(Runnable::run);
        abandoned.get(30, TimeUnit.SECONDS);
        node(0).failpoints().release(hold);
        await(() -> !"running".equals(invocation(callId, "state")), "the abandoned call settled");
        assertThat(invocation(callId, "state")).as("the abandoned call published its result").isEqualTo("succeeded");
        assertThat(invocation(callId, "result_json")).isEqualTo(ROWS);
    }

    /**
     * Partition {@code p} moves on to a new epoch for real, and its leader takes its lease again under it:
     * a request naming the old epoch is now stale at its receiver.
     */
    private static void moveOn(Node leader, int p) throws SQLException {
        long epoch;
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE partitions SET epoch = epoch + 1 WHERE partition_id = ? RETURNING epoch")) {
            ps.setInt(1, p);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                epoch = rs.getLong(1);
            }
        }
        assertThat(leader.leases().renew()).contains(p);
        assertThat(leader.leases().ledPartition(p, epoch)).as("%s leads %d under epoch %d", leader.hostId(), p, epoch)
                .isPresent();
    }

    /** Another host holds partition {@code p}'s lease now, for an hour: its leader can no longer publish for it. */
    private static void stealLease(int p, Node thief) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE partition_leases SET host_id = ?, lease_until = now() + interval '1 hour' WHERE partition_id = ?")) {
            ps.setString(1, thief.hostId());
            ps.setInt(2, p);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    private static void giveLeaseBack(int p, Node thief, Node leader) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "DELETE FROM partition_leases WHERE partition_id = ? AND host_id = ?")) {
            ps.setInt(1, p);
            ps.setString(2, thief.hostId());
            ps.executeUpdate();
        }
        assertThat(leader.leases().renew()).as("%s takes its lease back", leader.hostId()).contains(p);
    }

    /** A column of one invocation, by its call id; {@code null} when there is no such invocation (any more). */
    private static String invocation(UUID callId, String column) {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT " + column + "::text FROM invocations WHERE call_id = ?")) {
            ps.setObject(1, callId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void coordinationStateIsCleanedAfterItsRetention() throws Exception {
        assertThat(call(0, "row_count")).isEqualTo(ROWS);
        UUID callId = UUID.fromString(lastInvocation("row_count", "call_id"));
        assertThat(rowsOf(callId)).isPositive();
        await(() -> rowsOf(callId) == 0, "journal, slots, lease and invocation of the call are gone");
    }

    // ---- helpers ------------------------------------------------------------------------------------

    /** The node leading partition p (and so running coordination slot p). */
    private static Node node(int partition) {
        Node n = cluster.nodes().get(partition % 3);
        assertThat(n.leases().ledPartition(partition, currentEpoch(partition))).as("node %s leads %d", n.hostId(), partition)
                .isPresent();
        return n;
    }

    private static long currentEpoch(int partition) {
        return control.readTopology().partition(partition).orElseThrow().epoch();
    }

    private static Connection connect(int node) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        return DriverManager.getConnection("jdbc:postgresql://" + cluster.nodes().get(node).pgwireAddress() + "/thresher", p);
    }

    private static String call(int node, String binding) throws SQLException {
        try (Connection c = connect(node); Statement s = c.createStatement()) {
            return query(s, "CALL BINDING " + binding + "('{}')");
        }
    }

    private static String callUnchecked(int node, String binding) {
        try {
            return call(node, binding);
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    private static String query(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }

    @FunctionalInterface
    private interface SqlCall {
        Object run() throws Exception;
    }

    /** The call fails with this Thresher code (from the error's detail) and this SQLSTATE. */
    /** Like {@link #assertCode}, and the hint says whether guest code of the failed call ran. */
    private static void assertCode(SqlCall call, ErrorCode code, String sqlState, boolean guestCodeRan) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(PSQLException.class, e -> {
            assertThat(ErrorCode.ofCode(Integer.parseInt(codeOf(e)))).as(e.getMessage()).isEqualTo(code);
            assertThat(e.getSQLState()).isEqualTo(sqlState);
            String hint = e.getServerErrorMessage().getHint();
            if (guestCodeRan) {
                assertThat(hint).as("hint").startsWith("Retry after re-resolution").contains("guest code ran");
            } else {
                assertThat(hint).as("hint").startsWith("Safe to retry: guest code did not run");
            }
        });
    }

    private static String codeOf(PSQLException e) {
        String detail = e.getServerErrorMessage() == null ? "" : e.getServerErrorMessage().getDetail();
        Matcher m = CODE.matcher(detail == null ? "" : detail);
        assertThat(m.find()).as("thresher_code in %s (%s)", detail, e.getMessage()).isTrue();
        return m.group(1);
    }

    private static void assertCode(SqlCall call, ErrorCode code, String sqlState) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(PSQLException.class, e -> {
            String detail = e.getServerErrorMessage() == null ? "" : e.getServerErrorMessage().getDetail();
            Matcher m = CODE.matcher(detail == null ? "" : detail);
            assertThat(m.find()).as("thresher_code in %s (%s)", detail, e.getMessage()).isTrue();
            assertThat(ErrorCode.ofCode(Integer.parseInt(m.group(1)))).as(e.getMessage()).isEqualTo(code);
            assertThat(e.getSQLState()).isEqualTo(sqlState);
        });
    }

    private static long[] received() {
        return cluster.nodes().stream().mapToLong(n -> n.failpoints().hits(Failpoint.WIRE_RECEIVE)).toArray();
    }

    private static long sum(long[] v) {
        long s = 0;
        for (long x : v) {
            s += x;
        }
        return s;
    }

    private static long firedSum(Failpoint f) {
        return cluster.nodes().stream().mapToLong(n -> n.failpoints().fired(f)).sum();
    }

    private static String lastInvocation(String binding, String column) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT " + column + "::text FROM invocations WHERE binding_name = ? ORDER BY created_at DESC LIMIT 1")) {
            ps.setString(1, binding);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getString(1);
            }
        }
    }

    private static int rowsOf(UUID callId) {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT (SELECT count(*) FROM journal WHERE call_id = ?) + (SELECT count(*) FROM shard_runs WHERE call_id = ?)
                     + (SELECT count(*) FROM reduce_leases WHERE call_id = ?) + (SELECT count(*) FROM invocations WHERE call_id = ?)""")) {
            for (int i = 1; i <= 4; i++) {
                ps.setObject(i, callId);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Waits for a condition that a call in flight must bring about; when the call ends first, its
     * own outcome is the failure (it cannot bring the condition about any more).
     */
    private static void await(BooleanSupplier condition, String what, CompletableFuture<?> call) {
        Await.until(what, Duration.ofSeconds(30), condition, call);
    }

    /** Waits for a condition, up to 30 s; the assertion is on the condition, never on the time taken. */
    private static void await(BooleanSupplier condition, String what) {
        Await.until(what, Duration.ofSeconds(30), condition);
    }
}
