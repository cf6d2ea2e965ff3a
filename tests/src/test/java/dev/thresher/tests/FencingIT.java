package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Binding;
import dev.thresher.cellhost.Component;
import dev.thresher.errors.ErrorCode;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints.Action;
import dev.thresher.limits.Limits;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import dev.thresher.store.control.ControlStore;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
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
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.util.PSQLException;

/**
 * The fences, each on its real path: every stale target here comes from a real change of topology,
 * lease or binding made in the control database (or a request that names a target the receiver does
 * not serve), never from a failpoint returning the code under test. Failpoints only hold a call
 * (halt) at the moment the change is made.
 *
 * <p>Own three-node cluster with failpoints enabled; every limit is the default except the
 * activation window, {@value #WINDOW_MS} ms, distinct from the default (15 s) and from ContractIT's
 * (2 s), so the missing-cell wait can be timed for its reason. Layout (from the dev cluster): 16
 * partitions of {@code orders}, partition p is coordination slot p of every call and is led by
 * node {@code p % 3}. Each test calls a binding of its own, so a call is found by its binding, and
 * each judges its own call (its call id, its journal and {@code shard_runs} rows) rather than
 * counters other work could move.
 */
class FencingIT {
    private static final Pattern CODE = Pattern.compile("thresher_code=(\\d+)");
    private static final String ROWS = "{\"rows\":50000}";
    private static final long WINDOW_MS = 2500;
    /** The planner stops reading the topology again once less than one poll (100 ms) of the window is left. */
    private static final long ACTIVATION_POLL_MS = 100;
    /** Runs calls a test waits on; never the common pool, which a blocked call can starve on a small machine. */
    private static final ExecutorService CALLERS = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());

    private static DevCluster cluster;
    private static PGSimpleDataSource controlDb;
    private static ControlStore control;

    @BeforeAll
    static void start() throws Exception {
        Limits limits = Limits.fromProperties(Map.of("limits.activationWindowMs", Long.toString(WINDOW_MS)));
        cluster = DevCluster.start(DevCluster.Options.defaults(Files.createTempDirectory("thresher-fencing-"))
                .withPgwirePort(0).withLimits(limits).withFailpoints());
        controlDb = new PGSimpleDataSource();
        controlDb.setURL(cluster.controlUrl());
        controlDb.setUser(DevCluster.USER);
        controlDb.setPassword(DevCluster.PASSWORD);
        control = new ControlStore(controlDb);
        for (String binding : new String[] {"fence_receiver", "fence_binding", "fence_publish", "fence_reduce",
                "fence_redeploy", "fence_window"}) {
            ContractGuests.bind(controlDb, DevCluster.TENANT, binding, "row_count");
        }
        ContractGuests.bind(controlDb, DevCluster.TENANT, "fence_trap", "trap"); // stores another component
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

    // ---- the receiver's fence: lead the partition under the planned epoch ---------------------------

    @Test
    void aNodeAskedForAPartitionItDoesNotLeadUnderThatEpochRefusesBeforeAnyGuest() throws Exception {
        int partition = 3;
        Node leader = leaderOf(partition);
        Node other = cluster.nodes().get((partition + 1) % 3);
        Binding binding = control.currentBinding(DevCluster.TENANT, "fence_receiver").orElseThrow();
        // The partition moves on to a new epoch for real; its leader takes its lease again under it.
        long oldEpoch = currentEpoch(partition);
        long epoch = bumpEpoch(partition);
        assertThat(leader.leases().renew()).contains(partition);
        assertThat(leader.leases().ledPartition(partition, epoch)).isPresent();
        assertThat(other.leases().ledPartition(partition, epoch)).as("%s does not lead %d", other.hostId(), partition)
                .isEmpty();

        // The wrong node, under the current epoch.
        UUID wrongNode = UUID.randomUUID();
        assertRefusedWithoutGuest(other, request(wrongNode, binding, binding.componentDigest(), binding.version(),
                partition, epoch));
        // The right node, under the epoch it led the partition under before the move.
        UUID olderEpoch = UUID.randomUUID();
        assertRefusedWithoutGuest(leader, request(olderEpoch, binding, binding.componentDigest(), binding.version(),
                partition, oldEpoch));
        // The right node, under an epoch the partition has not reached.
        UUID newerEpoch = UUID.randomUUID();
        assertRefusedWithoutGuest(leader, request(newerEpoch, binding, binding.componentDigest(), binding.version(),
                partition, epoch + 1));

        // The same request to the right node under the current epoch runs: the refusals were the fence's.
        assertRunsAndPublishes(leader, UUID.randomUUID(), binding, partition, epoch);
    }

    @Test
    void aRequestNamingABindingVersionOrDigestTheReceiverDoesNotServeIsRefusedBeforeAnyGuest() throws Exception {
        int partition = 4;
        Node leader = leaderOf(partition);
        long epoch = currentEpoch(partition);
        Binding binding = control.currentBinding(DevCluster.TENANT, "fence_binding").orElseThrow();
        String otherDigest = control.currentBinding(DevCluster.TENANT, "fence_trap").orElseThrow().componentDigest();
        assertThat(otherDigest).isNotEqualTo(binding.componentDigest());

        // A version that does not exist (yet), with the current version's component.
        UUID unknownVersion = UUID.randomUUID();
        assertRefusedWithoutGuest(leader, request(unknownVersion, binding, binding.componentDigest(),
                binding.version() + 1, partition, epoch));
        // The current version, naming another stored component (the trap guest: it would fail loudly if run).
        UUID otherComponent = UUID.randomUUID();
        assertRefusedWithoutGuest(leader, request(otherComponent, binding, otherDigest, binding.version(), partition,
                epoch));

        assertRunsAndPublishes(leader, UUID.randomUUID(), binding, partition, epoch);
    }

    // ---- the publish fence: the partition lease, judged when the slot is written --------------------

    @Test
    void aLeaderWhoseLeaseWasTakenAwayCannotPublishItsSlot() throws Exception {
        int slot = 6;
        Node leader = leaderOf(slot);
        Node thief = cluster.nodes().get((slot + 1) % 3);
        Action hold = Action.halt();
        leader.failpoints().arm(Failpoint.BEFORE_SLOT_PUBLISH, s -> s.partitionId() == slot, 1, hold);
        CompletableFuture<Void> refused = CompletableFuture.runAsync(() -> assertCode(() -> call(1, "fence_publish"),
                ErrorCode.TARGET_STALE, "40001", true), CALLERS);
        await(() -> leader.failpoints().fired(Failpoint.BEFORE_SLOT_PUBLISH) == 1, "slot 6 ran and is about to publish",
                refused);
        UUID callId = runningCall("fence_publish");
        try {
            // Another host holds the partition's lease now, for an hour. The leader checked its own lease before the
            // guest; until its next renewal (every 20 s) its local view still says it leads.
            try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement("""
                    UPDATE partition_leases SET host_id = ?, lease_until = now() + interval '1 hour'
                    WHERE partition_id = ?""")) {
                ps.setString(1, thief.hostId());
                ps.setInt(2, slot);
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
            leader.failpoints().release(hold);
            refused.get(30, TimeUnit.SECONDS);

            String wireId = callId + "/shard/" + slot;
            assertThat(shardSlotHosts(callId, slot)).as("slot 6 of the call was not published").isEmpty();
            assertThat(journalSucceeded(wireId)).as("its guest ran and its outcome was journaled").isTrue();
            assertThat(shardSlotHosts(callId, 0)).as("slot 0, same host, same transaction, its lease intact")
                    .containsExactly(leader.hostId());
            assertThat(invocation(callId, "state")).isEqualTo("failed");
            assertThat(invocation(callId, "error_code")).isEqualTo(String.valueOf(ErrorCode.TARGET_STALE.code()));
            assertThat(invocation(callId, "result_json")).as("nothing is visible").isNull();
        } finally {
            try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "DELETE FROM partition_leases WHERE partition_id = ? AND host_id = ?")) {
                ps.setInt(1, slot);
                ps.setString(2, thief.hostId());
                ps.executeUpdate();
            }
            assertThat(leader.leases().renew()).as("the leader takes its lease back").contains(slot);
        }
        assertThat(call(1, "fence_publish")).as("the next call is served").isEqualTo(ROWS);
        UUID next = lastCall("fence_publish");
        assertThat(shardSlotHosts(next, slot)).containsExactly(leader.hostId());
    }

    // ---- the result fence: the reduce lease and the pinned binding version ---------------------------

    @Test
    void aCoordinatorWhoseReduceLeaseWasTakenCannotPublishTheResult() throws Exception {
        Node coordinator = cluster.nodes().get(2);
        Action hold = Action.halt();
        coordinator.failpoints().arm(Failpoint.AFTER_REDUCE_BEFORE_PUBLISH, 1, hold);
        CompletableFuture<Void> lost = CompletableFuture.runAsync(() -> assertCode(() -> call(2, "fence_reduce"),
                ErrorCode.REDUCE_LEASE_LOST, "40001", true), CALLERS);
        await(() -> coordinator.failpoints().fired(Failpoint.AFTER_REDUCE_BEFORE_PUBLISH) == 1,
                "the call reduced and is about to publish", lost);
        UUID callId = runningCall("fence_reduce");
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement("""
                UPDATE reduce_leases SET host_id = 'other', lease_until = now() + interval '1 hour'
                WHERE call_id = ? AND host_id = ?""")) {
            ps.setObject(1, callId);
            ps.setString(2, coordinator.hostId());
            assertThat(ps.executeUpdate()).as("the coordinator held the reduce lease").isEqualTo(1);
        }
        coordinator.failpoints().release(hold);
        lost.get(30, TimeUnit.SECONDS);

        assertThat(invocation(callId, "result_json")).as("no result is visible").isNull();
        assertThat(invocation(callId, "state")).isEqualTo("failed");
        assertThat(invocation(callId, "error_code")).isEqualTo(String.valueOf(ErrorCode.REDUCE_LEASE_LOST.code()));
        assertThat(invocation(callId, "published_by")).isNull();
        assertThat(journalSucceeded(callId + "/reduce")).as("reduce ran and its outcome was journaled").isTrue();
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT host_id FROM reduce_leases WHERE call_id = ?")) {
            ps.setObject(1, callId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).as("the lease stays with its new holder").isEqualTo("other");
            }
        }
    }

    @Test
    void aRedeployDuringTheCallIsRefusedAsStaleAndTheNextCallRunsTheNewVersion() throws Exception {
        Node coordinator = cluster.nodes().get(0);
        Binding planned = control.currentBinding(DevCluster.TENANT, "fence_redeploy").orElseThrow();
        Action hold = Action.halt();
        coordinator.failpoints().arm(Failpoint.BEFORE_REDUCE, 1, hold);
        CompletableFuture<Void> refused = CompletableFuture.runAsync(() -> assertCode(() -> call(0, "fence_redeploy"),
                ErrorCode.TARGET_STALE, "40001", true), CALLERS);
        await(() -> coordinator.failpoints().fired(Failpoint.BEFORE_REDUCE) == 1, "every slot settled, reduce is next",
                refused);
        UUID callId = runningCall("fence_redeploy");
        // Same component, another selector: a new version of the binding while the call is in flight.
        String selector = ContractGuests.SELECTOR + " WHERE amount < 500";
        Binding redeployed = control.putBinding(DevCluster.TENANT, "fence_redeploy", planned.componentDigest(), selector);
        assertThat(redeployed.version()).isEqualTo(planned.version() + 1);
        coordinator.failpoints().release(hold);
        refused.get(30, TimeUnit.SECONDS);

        assertThat(invocation(callId, "result_json")).as("nothing published").isNull();
        assertThat(invocation(callId, "state")).isEqualTo("failed");
        assertThat(invocation(callId, "error_code")).isEqualTo(String.valueOf(ErrorCode.TARGET_STALE.code()));
        assertThat(invocation(callId, "binding_version")).isEqualTo(String.valueOf(planned.version()));
        assertThat(shardRowsRead(callId)).as("every shard of the call ran the version it was planned with")
                .isEqualTo(50_000);

        long expected = ordersBelow(500);
        assertThat(expected).isStrictlyBetween(0L, 50_000L);
        assertThat(call(0, "fence_redeploy")).as("the next call runs the new selector on every shard")
                .isEqualTo("{\"rows\":" + expected + "}");
        UUID next = lastCall("fence_redeploy");
        assertThat(invocation(next, "binding_version")).isEqualTo(String.valueOf(redeployed.version()));
        assertThat(shardRowsRead(next)).isEqualTo(expected);
    }

    // ---- the missing-cell wait -----------------------------------------------------------------------

    @Test
    void aPartitionWithNoLeaderIsWaitedForTheActivationWindowThenRefused() throws Exception {
        int partition = 8;
        Node owner = leaderOf(partition);
        Node blocker = cluster.nodes().get((partition + 1) % 3);
        Node coordinator = cluster.nodes().get(1);
        long epoch = currentEpoch(partition);
        // The partition's epoch moves on while a lease under the old epoch, held by a host that does not serve
        // its shard, is still live: nobody leads the partition under its current epoch, and its own node cannot
        // take the lease (its renewals leave another host's live lease alone). One transaction, so no renewal of
        // the owner falls between the two statements.
        try (Connection c = controlDb.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement lease = c.prepareStatement("""
                    UPDATE partition_leases SET host_id = ?, epoch = ?, lease_until = now() + interval '1 hour'
                    WHERE partition_id = ?""");
                 PreparedStatement move = c.prepareStatement(
                         "UPDATE partitions SET epoch = epoch + 1 WHERE partition_id = ?")) {
                lease.setString(1, blocker.hostId());
                lease.setLong(2, epoch);
                lease.setInt(3, partition);
                assertThat(lease.executeUpdate()).isEqualTo(1);
                move.setInt(1, partition);
                assertThat(move.executeUpdate()).isEqualTo(1);
            }
            c.commit();
        }
        try {
            assertThat(owner.leases().renew()).as("the owner cannot take the partition back").doesNotContain(partition);
            await(() -> noLeaderIn(coordinator.catalog().topology(), partition),
                    "the coordinator's cache sees partition 8 without a leader");
            try (Connection c = connect(1); Statement s = c.createStatement()) {
                s.execute("SET thresher.call_deadline_ms = 20000"); // far past the window
                long t0 = System.nanoTime();
                assertCode(() -> query(s, "CALL BINDING fence_window('{}')"), ErrorCode.CELL_UNAVAILABLE, "57P03", false);
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertThat(tookMs).as("waited the activation window (%d ms) for a leader, then gave up", WINDOW_MS)
                        .isGreaterThanOrEqualTo(WINDOW_MS - ACTIVATION_POLL_MS)
                        .isLessThan(2 * WINDOW_MS);
            }
            UUID callId = lastCall("fence_window");
            assertThat(invocation(callId, "state")).isEqualTo("failed");
            assertThat(invocation(callId, "error_code")).isEqualTo(String.valueOf(ErrorCode.CELL_UNAVAILABLE.code()));
            assertThat(rowsOf(callId, "journal") + rowsOf(callId, "shard_runs")).as("nothing was dispatched").isZero();
        } finally {
            try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "DELETE FROM partition_leases WHERE partition_id = ? AND host_id = ?")) {
                ps.setInt(1, partition);
                ps.setString(2, blocker.hostId());
                ps.executeUpdate();
            }
            assertThat(owner.leases().renew()).as("the owner leads the partition again").contains(partition);
        }
        assertThat(owner.leases().ledPartition(partition, epoch + 1)).isPresent();
        assertThat(call(1, "fence_window")).as("the next call is served").isEqualTo(ROWS);
    }

    // ---- helpers ------------------------------------------------------------------------------------

    /** The node leading partition p under its current epoch (node {@code p % 3}). */
    private static Node leaderOf(int partition) {
        Node n = cluster.nodes().get(partition % 3);
        assertThat(n.leases().ledPartition(partition, currentEpoch(partition)))
                .as("node %s leads %d", n.hostId(), partition).isPresent();
        return n;
    }

    private static long currentEpoch(int partition) {
        return control.readTopology().partition(partition).orElseThrow().epoch();
    }

    private static long bumpEpoch(int partition) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE partitions SET epoch = epoch + 1 WHERE partition_id = ? RETURNING epoch")) {
            ps.setInt(1, partition);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getLong(1);
            }
        }
    }

    private static boolean noLeaderIn(Topology topology, int partition) {
        Partition p = topology.partition(partition).orElseThrow();
        return topology.leaderOf(p).isEmpty();
    }

    /** A one-slot host request for slot {@code partition} of call {@code callId}, as a coordinator would build it. */
    private static HostRequest request(UUID callId, Binding binding, String digest, int version, int partition,
                                          long epoch) {
        return new HostRequest(1, callId.toString(), DevCluster.TENANT, binding.name(), digest, version,
                TimeUnit.SECONDS.toMicros(10), "{}",
                List.of(new ShardRun(partition, partition, epoch, callId + "/shard/" + partition, 1)));
    }

    private static ShardRunOutcome send(Node to, HostRequest request) throws Exception {
        Host host = control.readTopology().hosts().get(to.hostId());
        try (WireClient client = new WireClient("fencing-test", Limits.DEFAULTS)) {
            HostReply reply = client.send(host.wireHost(), host.wirePort(), request).get(30, TimeUnit.SECONDS);
            assertThat(reply.runs()).hasSize(1);
            return reply.runs().get(0);
        }
    }

    /** Sent to {@code to}, the slot is refused as a stale target, provably before guest code; nothing is written. */
    private static void assertRefusedWithoutGuest(Node to, HostRequest request) throws Exception {
        long starts = to.cells().guestStarts();
        ShardRunOutcome o = send(to, request);
        assertThat(o.code()).as(o.message()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(o.guestStarted()).as("refused before any guest code: %s", o.message()).isFalse();
        assertThat(to.cells().guestStarts()).as("guest starts on %s", to.hostId()).isEqualTo(starts);
        UUID callId = UUID.fromString(request.callId());
        assertThat(rowsOf(callId, "journal")).as("nothing journaled").isZero();
        assertThat(rowsOf(callId, "shard_runs")).as("nothing published").isZero();
    }

    private static void assertRunsAndPublishes(Node to, UUID callId, Binding binding, int partition, long epoch)
            throws Exception {
        long starts = to.cells().guestStarts();
        ShardRunOutcome o = send(to, request(callId, binding, binding.componentDigest(), binding.version(), partition, epoch));
        assertThat(o.published()).as(o.message()).isTrue();
        assertThat(o.guestStarted()).isTrue();
        assertThat(to.cells().guestStarts() - starts).isEqualTo(1);
        assertThat(shardSlotHosts(callId, partition)).containsExactly(to.hostId());
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

    /** The call fails with this Thresher code (from the error's detail) and SQLSTATE; the hint says whether guest code ran. */
    private static void assertCode(SqlCall call, ErrorCode code, String sqlState, boolean guestCodeRan) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(PSQLException.class, e -> {
            String detail = e.getServerErrorMessage() == null ? "" : e.getServerErrorMessage().getDetail();
            Matcher m = CODE.matcher(detail == null ? "" : detail);
            assertThat(m.find()).as("thresher_code in %s (%s)", detail, e.getMessage()).isTrue();
            assertThat(ErrorCode.ofCode(Integer.parseInt(m.group(1)))).as(e.getMessage()).isEqualTo(code);
            assertThat(e.getSQLState()).isEqualTo(sqlState);
            String hint = e.getServerErrorMessage().getHint();
            if (guestCodeRan) {
                assertThat(hint).as("hint").startsWith("Retry after re-resolution").contains("guest code ran");
            } else {
                assertThat(hint).as("hint").startsWith("Safe to retry: guest code did not run");
            }
        });
    }

    /** The one call of {@code binding} that is running now. */
    private static UUID runningCall(String binding) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT call_id FROM invocations WHERE binding_name = ? AND state = 'running'")) {
            ps.setString(1, binding);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("a running call of %s", binding).isTrue();
                UUID id = rs.getObject(1, UUID.class);
                assertThat(rs.next()).as("only one running call of %s", binding).isFalse();
                return id;
            }
        }
    }

    private static UUID lastCall(String binding) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT call_id FROM invocations WHERE binding_name = ? ORDER BY created_at DESC LIMIT 1")) {
            ps.setString(1, binding);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getObject(1, UUID.class);
            }
        }
    }

    private static String invocation(UUID callId, String column) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT " + column + "::text FROM invocations WHERE call_id = ?")) {
            ps.setObject(1, callId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("invocation %s", callId).isTrue();
                return rs.getString(1);
            }
        }
    }

    /** The host of the call's published slot, if it was published. */
    private static List<String> shardSlotHosts(UUID callId, int slot) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT host_id FROM shard_runs WHERE call_id = ? AND run_index = ?")) {
            ps.setObject(1, callId);
            ps.setInt(2, slot);
            try (ResultSet rs = ps.executeQuery()) {
                List<String> hosts = new ArrayList<>();
                while (rs.next()) {
                    hosts.add(rs.getString(1));
                }
                return hosts;
            }
        }
    }

    private static boolean journalSucceeded(String wireId) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT succeeded FROM journal WHERE tenant = ? AND wire_id = ?")) {
            ps.setString(1, DevCluster.TENANT);
            ps.setString(2, wireId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("journal entry %s", wireId).isTrue();
                return rs.getBoolean(1);
            }
        }
    }

    /** Rows the call's shards read, summed over their journaled outcomes. */
    private static long shardRowsRead(UUID callId) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*), coalesce(sum(row_count), 0) FROM journal WHERE call_id = ? AND kind = 'shard'")) {
            ps.setObject(1, callId);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getInt(1)).as("one journaled outcome per slot").isEqualTo(16);
                return rs.getLong(2);
            }
        }
    }

    private static int rowsOf(UUID callId, String table) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM " + table + " WHERE call_id = ?")) {
            ps.setObject(1, callId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** Orders with {@code amount < bound}, counted on the shard databases themselves. */
    private static long ordersBelow(double bound) throws SQLException {
        long n = 0;
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM orders WHERE amount < ?")) {
                ps.setDouble(1, bound);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    n += rs.getLong(1);
                }
            }
        }
        return n;
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
