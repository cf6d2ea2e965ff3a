package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.TopologyService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Moving, splitting and handing over partitions on a cluster of its own (the shared one's topology stays as the
 * other tests expect it): under eight threads of calls every successful result equals the SQL reference and the
 * fences really ran; a move killed in each phase resumes and completes; refusals are typed; dry runs change
 * nothing; every change is audited; a node that cannot reach a shard database reads not ready.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TopologyChangesIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long LOAD_SECONDS = Long.getLong("thresher.topology.loadSeconds", 60);

    private static DevCluster cluster;
    private static TableAdmin tables;
    private static TopologyAdmin topology;
    private static Map<String, double[]> reference;

    @BeforeAll
    static void start() throws Exception {
        cluster = DevCluster.start(DevCluster.Options.defaults(Files.createTempDirectory("thresher-topology-"))
                .withPgwirePort(0).withRows(20_000));
        tables = new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                new PrintStream(PrintStream.nullOutputStream()));
        topology = new TopologyAdmin(tables, dev.thresher.limits.Limits.DEFAULTS,
                new PrintStream(PrintStream.nullOutputStream()));
        reference = Cluster.sqlReference(cluster);
    }

    @AfterAll
    static void stop() {
        if (tables != null) {
            tables.close();
        }
        if (cluster != null) {
            cluster.close();
        }
        cluster = null; // the closed cluster's cells and pools go with it
        tables = null;
        topology = null;
    }

    @Test
    @Order(1)
    void partitionsMovedSplitAndHandedOverWhileEightThreadsCallGiveOnlyCorrectResultsAndTheFencesRan() throws Exception {
        long retriesBefore = sum(n -> n.coordinator().shardRetries());
        long replansBefore = sum(n -> n.coordinator().replans());
        long supersededBefore = sum(n -> n.coordinator().supersededRequests());
        AtomicBoolean running = new AtomicBoolean(true);
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Failed> failed = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Ended> ended = new ConcurrentLinkedQueue<>();
        AtomicLong ok = new AtomicLong();
        ExecutorService clients = Executors.newFixedThreadPool(8);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            int client = t;
            futures.add(clients.submit(() -> {
                try (Connection c = connect(client % 3); Statement s = c.createStatement()) {
                    while (running.get()) {
                        long started = System.nanoTime();
                        try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                            rs.next();
                            String problem = Cluster.differs(JSON.readTree(rs.getString(1)), reference);
                            if (problem != null) {
                                wrong.add(problem);
                            } else {
                                ok.incrementAndGet();
                            }
                            ended.add(new Ended(started, System.nanoTime(), null));
                        } catch (SQLException e) {
                            Failed f = Failed.of(e);
                            failed.add(f);
                            ended.add(new Ended(started, System.nanoTime(), f));
                        }
                    }
                }
                return null;
            }));
        }
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(LOAD_SECONDS);
        List<TopologyService.Change> changes = new ArrayList<>();
        List<long[]> windows = new ArrayList<>(); // each change's start and end, by the test's clock
        int round = 0;
        while (System.nanoTime() < end || round < 4) {
            // partition 1 (shard 2) travels round the shards; partitions split; leadership moves
            int to = round % 3 + 1;
            changes.add(timed(windows, () -> topology.movePartition("it", 1,
                    Integer.toString(to == shardOf(1) ? to % 3 + 1 : to), false)));
            if (tables.control().readTopology().partitionsOf(DevCluster.TENANT, "orders").size() < 40) {
                changes.add(timed(windows, () -> topology.splitPartition("it", largest(), OptionalInt.empty(), false)));
            }
            int p = round % 16;
            changes.add(timed(windows, () -> topology.transferLeader("it", p, otherCandidate(p), false)));
            round++;
            Thread.sleep(500); // paces the changes: not a wait
        }
        // A change reaches every node by its push, or by the poll at the latest, and a lease handed over is taken by
        // the next renewal: after that bound, calls meet no change. The callers go on until 16 calls started past it.
        long settleMs = cluster.options().limits().topologyPollMs() + cluster.options().limits().partitionLeaseMs();
        long settled = windows.get(windows.size() - 1)[1] + TimeUnit.MILLISECONDS.toNanos(settleMs);
        Await.until("16 calls started " + settleMs + " ms after the last change ended", java.time.Duration.ofSeconds(120),
                () -> ended.stream().filter(e -> e.startNanos() - settled >= 0).count(), n -> n >= 16);
        running.set(false);
        for (Future<?> f : futures) {
            f.get(60, TimeUnit.SECONDS);
        }
        clients.shutdown();

        assertThat(changes).allSatisfy(c -> assertThat(c.outcome()).isEqualTo("succeeded"));
        assertThat(wrong).as("results that differ from the SQL reference").isEmpty();
        assertThat(ok.get()).isPositive();
        // A call fails only when a change overtook it: with the stale target or slot it was refused for (40001), or
        // the leader or cell it needed being replaced (57P03), each retryable. So every failed call was in flight
        // while a change ran or until its settle bound after; none started later failed; and no more failed than
        // the eight callers' calls in flight at each change.
        assertThat(failed).as("calls that failed with anything but a retryable stale target or a leader being replaced")
                .allSatisfy(f -> assertThat(DURING_A_CHANGE).as(f.toString()).containsEntry(f.code(), f.sqlState()));
        long settleNanos = TimeUnit.MILLISECONDS.toNanos(settleMs);
        assertThat(ended).filteredOn(e -> e.failure() != null)
                .as("failed calls in flight during no change (nor %d ms after one)", settleMs)
                .allSatisfy(e -> assertThat(windows).as("%s", e).anySatisfy(w -> assertThat(w[0] - e.endNanos() <= 0
                        && e.startNanos() - (w[1] + settleNanos) <= 0).isTrue()));
        assertThat(ended).filteredOn(e -> e.startNanos() - settled >= 0).as("calls started once the changes settled")
                .hasSizeGreaterThanOrEqualTo(16).allSatisfy(e -> assertThat(e.failure()).as("%s", e).isNull());
        long calls = ok.get() + wrong.size() + failed.size();
        assertThat((long) failed.size()).as("calls failed of %d, under %d changes: %s", calls, changes.size(), failed)
                .isLessThanOrEqualTo(8L * changes.size());
        long retries = sum(n -> n.coordinator().shardRetries()) - retriesBefore;
        long replans = sum(n -> n.coordinator().replans()) - replansBefore;
        long superseded = sum(n -> n.coordinator().supersededRequests()) - supersededBefore;
        System.out.printf("topology under load: %d rounds of changes (%d) in %d s; %d calls correct, %d failed (retryable:"
                        + " %s); %d slots refused stale and sent again, %d calls re-planned, %d requests superseded%n",
                round, changes.size(), LOAD_SECONDS, ok.get(), failed.size(), failed.stream().collect(
                        java.util.stream.Collectors.groupingBy(Failed::code, java.util.TreeMap::new,
                                java.util.stream.Collectors.counting())), retries, replans, superseded);
        assertThat(retries + replans).as("stale-target refusals re-resolved, or calls re-planned: the fence ran")
                .isPositive();
        Map<String, double[]> after = Cluster.sqlReference(cluster);
        assertThat(after.keySet()).isEqualTo(reference.keySet());
        after.forEach((region, v) -> {
            assertThat((long) v[1]).as("rows of %s after the moves", region).isEqualTo((long) reference.get(region)[1]);
            assertThat(v[0]).as("amounts of %s after the moves", region)
                    .isCloseTo(reference.get(region)[0], org.assertj.core.data.Offset.offset(1e-6 * reference.get(region)[0]));
        });
    }

    @Test
    @Order(2)
    void aMoveKilledInEachPhaseResumesAndCompletes() throws Exception {
        for (String phase : List.of("copy", "verify", "cutover", "cleanup")) {
            int partition = 2 + List.of("copy", "verify", "cutover", "cleanup").indexOf(phase) * 3; // 2, 5, 8, 11
            int from = shardOf(partition);
            int to = from % 3 + 1;
            long rows = rowsOf(partition);
            Process p = new ProcessBuilder(NodeProcesses.thresher(List.of("-Dthresher.move.haltAfter=" + phase),
                    // the move runs in this process (on the control database, --control-url), so killing it kills the move
                    "partition", "move", Integer.toString(partition), "--to", Integer.toString(to), "--control-url",
                    cluster.controlUrl(), "--db-user", DevCluster.USER, "--db-password", DevCluster.PASSWORD))
                    .redirectErrorStream(true).start();
            String output = new String(p.getInputStream().readAllBytes());
            assertThat(p.waitFor()).as("the move halted in phase %s:%n%s", phase, output).isEqualTo(137);
            assertThat(output).contains("halting in phase " + phase);
            String recorded = movePhase(partition).orElse("none");
            System.out.printf("move of partition %d killed in phase %s: recorded phase %s%n", partition, phase, recorded);
            assertThat(recorded).as("the move's recorded phase after a kill in %s", phase).isNotEqualTo("none");

            TopologyService.Change resumed = topology.movePartition("it", partition, Integer.toString(to), false);
            assertThat(resumed.outcome()).isEqualTo("succeeded");
            assertThat(resumed.steps().get(0)).startsWith("resuming the move of partition " + partition);
            assertThat(topology.changes(2).get(1)).satisfies(killed -> {
                assertThat(killed.requestedBy()).endsWith("@cli");
                assertThat(killed.outcome()).as("the killed run's audit").isEqualTo("failed");
                assertThat(killed.steps()).last().asString().isEqualTo("interrupted; resumed by change " + resumed.changeId());
            });
            assertThat(shardOf(partition)).isEqualTo(to);
            assertThat(movePhase(partition)).isEmpty();
            assertThat(rowsOn(to, partition)).as("rows of partition %d on its new shard", partition).isEqualTo(rows);
            assertThat(rowsOn(from, partition)).as("rows of partition %d left on its old shard", partition).isZero();
        }
        try (Connection c = connect(0); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
            rs.next();
            assertThat(Cluster.differs(JSON.readTree(rs.getString(1)), reference)).isNull();
        }
    }

    @Test
    @Order(3)
    void refusalsAreTypedDryRunsChangeNothingAndEveryChangeIsAudited() throws Exception {
        long since = topology.changes(1).get(0).changeId();
        long version = tables.control().readTopologyVersion();
        int partition = 3;
        int shard = shardOf(partition);
        TopologyService.Change dry = topology.movePartition("it", partition, Integer.toString(shard % 3 + 1), true);
        assertThat(dry.outcome()).isEqualTo("planned");
        assertThat(dry.steps()).anyMatch(s -> s.startsWith("would copy"));
        assertThat(topology.splitPartition("it", partition, OptionalInt.empty(), true).outcome()).isEqualTo("planned");
        assertThat(topology.drainNode("it", "node-1", true).outcome()).isEqualTo("planned");
        assertThat(tables.control().readTopologyVersion()).as("dry runs change nothing").isEqualTo(version);
        assertThat(shardOf(partition)).isEqualTo(shard);

        assertRefused(() -> topology.movePartition("it", partition, "no-such-shard", false), ErrorCode.INVALID_ARGUMENTS,
                "there is no shard no-such-shard");
        assertRefused(() -> topology.movePartition("it", 99_999, "1", false), ErrorCode.INVALID_ARGUMENTS,
                "there is no partition 99999");
        assertRefused(() -> topology.movePartition("it", partition, Integer.toString(shard), false),
                ErrorCode.TOPOLOGY_CHANGE_REFUSED, "already");
        assertRefused(() -> topology.removeShard("it", "shard-1", false), ErrorCode.TOPOLOGY_CHANGE_REFUSED, "holds");
        assertRefused(() -> topology.addShard("it", "jdbc:postgresql://127.0.0.1:1/nowhere", Optional.empty(), false),
                ErrorCode.TOPOLOGY_CHANGE_REFUSED, "cannot be reached");
        String notCandidate = "node-" + (shard % 3 + 1); // node i stands by for shard i + 1 only
        assertRefused(() -> topology.transferLeader("it", partition, notCandidate, false),
                ErrorCode.TOPOLOGY_CHANGE_REFUSED, "not a live, undrained candidate of shard " + shard);

        // residency: a table pinned to shards 1 and 2 cannot be moved to shard 3
        tables.create(DevCluster.TENANT, "pinned", "id", "id bigint, v text", 2, tables.shardIds(List.of("shard-1", "shard-2")));
        int pinned = tables.control().readTopology().partitionsOf(DevCluster.TENANT, "pinned").get(0).id();
        assertRefused(() -> topology.movePartition("it", pinned, "shard-3", false), ErrorCode.TOPOLOGY_CHANGE_REFUSED,
                "resident on shards 1,2 only");
        assertThatThrownBy(() -> tables.shardIds(List.of("shard-9"))).isInstanceOf(ThresherException.class);

        List<TopologyService.Change> audit = topology.changes(50).stream().filter(c -> c.changeId() > since).toList();
        assertThat(audit).hasSize(10);
        assertThat(audit).extracting(TopologyService.Change::outcome).contains("planned", "refused");
        assertThat(audit).allSatisfy(c -> assertThat(c.requestedBy()).isEqualTo("it"));
        assertThat(audit).filteredOn(c -> c.outcome().equals("refused")).allSatisfy(c ->
                assertThat(c.steps()).last().asString().startsWith("refused: "));

        // the same over HTTP
        HttpClient http = HttpClient.newHttpClient();
        String base = cluster.nodes().get(0).httpAddress();
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/admin/partitions/" + partition
                + "/move")).header("Authorization", "Bearer " + cluster.adminToken()).POST(HttpRequest.BodyPublishers.ofString("{\"to\": \"" + shard + "\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(409);
        assertThat(JSON.readTree(r.body()).path("error").path("name").asText()).isEqualTo("TOPOLOGY_CHANGE_REFUSED");
        r = http.send(HttpRequest.newBuilder(URI.create(base + "/admin/shards/shard-1/remove")).header("Authorization",
                "Bearer " + cluster.adminToken()).POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(409);
        assertThat(JSON.readTree(r.body()).path("error").path("message").asText()).contains("holds");
        r = http.send(HttpRequest.newBuilder(URI.create(base + "/admin/partitions/" + partition + "/split")).header("Authorization", "Bearer " + cluster.adminToken())
                .POST(HttpRequest.BodyPublishers.ofString("{\"dryRun\": true}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(r.body()).path("outcome").asText()).isEqualTo("planned");
        r = http.send(HttpRequest.newBuilder(URI.create(base + "/admin/topology/changes?limit=2")).header("Authorization", "Bearer " + cluster.adminToken()).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(JSON.readTree(r.body()).get(0).path("command").asText()).isEqualTo("partition split " + partition + " --dry-run");
    }

    @Test
    @Order(4)
    void aNodeThatCannotReachAShardDatabaseReadsNotReadyUntilItCanAgain() throws Exception {
        Node node = cluster.nodes().get(2); // node-3: home shard 3, standby for shard 1
        HttpClient http = HttpClient.newHttpClient();
        URI readyz = URI.create(node.httpAddress() + "/readyz");
        assertThat(http.send(HttpRequest.newBuilder(readyz).build(), HttpResponse.BodyHandlers.ofString()).statusCode())
                .isEqualTo(200);
        try (Connection c = DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            s.execute("ALTER DATABASE thresher_shard_1 ALLOW_CONNECTIONS false");
            s.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'thresher_shard_1'");
            try {
                HttpResponse<String> r = awaitStatus(http, readyz, 503, 30);
                assertThat(r.body()).contains("shard database 1 does not answer");
            } finally {
                s.execute("ALTER DATABASE thresher_shard_1 ALLOW_CONNECTIONS true");
            }
            awaitStatus(http, readyz, 200, 30);
        }
    }

    @Test
    @Order(5)
    void aShardIsAddedOnceReachableAndWritableAndRemovedOnlyWhenEmptyAndNoRunningNodesHome() throws Exception {
        try (Connection c = DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE thresher_shard_9 OWNER " + DevCluster.USER);
        }
        String url = cluster.shardUrl(1).replace("thresher_shard_1", "thresher_shard_9");
        TopologyService.Change dry = topology.addShard("it", url, Optional.of("shard-nine"), true);
        assertThat(dry.outcome()).isEqualTo("planned");
        assertThat(tables.shardNames()).doesNotContainValue("shard-nine");
        TopologyService.Change added = topology.addShard("it", url, Optional.of("shard-nine"), false);
        assertThat(added.outcome()).isEqualTo("succeeded");
        int id = tables.shardIds(List.of("shard-nine")).get(0);
        assertRefused(() -> topology.addShard("it", url, Optional.empty(), false), ErrorCode.TOPOLOGY_CHANGE_REFUSED,
                "a shard already");

        // a node whose home it is: refused while it runs, forgotten with the shard once it stopped
        try (Connection c = DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             PreparedStatement ps = c.prepareStatement("""
                     INSERT INTO hosts (host_id, shard_id, wire_host, wire_port) VALUES ('node-nine', ?, '127.0.0.1', 1)""")) {
            ps.setInt(1, id);
            ps.executeUpdate();
        }
        assertRefused(() -> topology.removeShard("it", "shard-nine", false), ErrorCode.TOPOLOGY_CHANGE_REFUSED,
                "node node-nine is running with shard " + id + " as its home shard");
        try (Connection c = DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE hosts SET heartbeat_at = now() - interval '1 hour' WHERE host_id = 'node-nine'");
        }
        TopologyService.Change removed = topology.removeShard("it", "shard-nine", false);
        assertThat(removed.outcome()).isEqualTo("succeeded");
        assertThat(removed.steps()).anyMatch(st -> st.contains("stopped node(s) [node-nine]"));
        assertThat(tables.shardNames()).doesNotContainKey(id);
        assertThat(tables.control().readTopology().hosts()).doesNotContainKey("node-nine");
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    /** The retryable failures a call may meet while a change overtakes it, and their SQLSTATEs. */
    private static final Map<ErrorCode, String> DURING_A_CHANGE = new java.util.EnumMap<>(Map.of(
            ErrorCode.TARGET_STALE, "40001", ErrorCode.SLOT_STALE, "40001", ErrorCode.SLOT_EXPIRED, "40001",
            ErrorCode.REDUCE_LEASE_LOST, "40001", ErrorCode.HOST_UNREACHABLE, "57P03", ErrorCode.CELL_UNAVAILABLE, "57P03"));

    /** A call's start and end (the test's clock), and how it failed, if it did. */
    private record Ended(long startNanos, long endNanos, Failed failure) {}

    /** Makes a change, recording its start and end in {@code windows}. */
    private static TopologyService.Change timed(List<long[]> windows,
                                                java.util.function.Supplier<TopologyService.Change> change) {
        long start = System.nanoTime();
        try {
            return change.get();
        } finally {
            windows.add(new long[] {start, System.nanoTime()});
        }
    }

    /** A failed call: its SQLSTATE, its Thresher code (from the error's detail) and its first line. */
    private record Failed(String sqlState, ErrorCode code, String message) {
        static Failed of(SQLException e) {
            String m = String.valueOf(e.getMessage());
            var code = java.util.regex.Pattern.compile("thresher_code=(\\d+)").matcher(m);
            return new Failed(e.getSQLState(), code.find() ? ErrorCode.ofCode(Integer.parseInt(code.group(1))) : null,
                    m.lines().findFirst().orElse(""));
        }
    }

    /** An HTTP answer, seen as its status and body. */
    private record Answer(HttpResponse<String> response) {
        @Override
        public String toString() {
            return response.statusCode() + " " + response.body();
        }
    }

    private static HttpResponse<String> awaitStatus(HttpClient http, URI uri, int status, int seconds) {
        return Await.until(uri + " to answer " + status, java.time.Duration.ofSeconds(seconds),
                java.time.Duration.ofMillis(200), () -> new Answer(http.send(HttpRequest.newBuilder(uri).build(),
                        HttpResponse.BodyHandlers.ofString())), a -> a.response().statusCode() == status).response();
    }

    private static void assertRefused(org.assertj.core.api.ThrowableAssert.ThrowingCallable change, ErrorCode code,
                                      String message) {
        assertThatThrownBy(change).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(code);
            assertThat(e.getMessage()).contains(message);
        });
    }

    private static long sum(java.util.function.ToLongFunction<Node> f) {
        return cluster.nodes().stream().mapToLong(f).sum();
    }

    private static Connection connect(int node) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        return DriverManager.getConnection("jdbc:postgresql://" + cluster.nodes().get(node).pgwireAddress() + "/thresher", p);
    }

    private static int shardOf(int partition) {
        return tables.control().readTopology().partition(partition).orElseThrow().shardId();
    }

    /** The orders partition with the most slots (so a split always has room). */
    private static int largest() {
        return tables.control().readTopology().partitionsOf(DevCluster.TENANT, "orders").stream()
                .max(java.util.Comparator.comparingInt((dev.thresher.topology.Partition p) -> p.slotHi() - p.slotLo()))
                .orElseThrow().id();
    }

    /** A live candidate of the partition's shard other than its leader. */
    private static String otherCandidate(int partition) {
        var t = tables.control().readTopology();
        var p = t.partition(partition).orElseThrow();
        String leader = t.leaders().containsKey(partition) ? t.leaders().get(partition).hostId() : "";
        return t.candidatesOf(p.shardId()).stream().map(dev.thresher.topology.Candidate::hostId)
                .filter(h -> !h.equals(leader)).findFirst().orElseThrow();
    }

    private static Optional<String> movePhase(int partition) throws SQLException {
        try (Connection c = DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             PreparedStatement ps = c.prepareStatement("SELECT phase FROM partition_moves WHERE partition_id = ?")) {
            ps.setInt(1, partition);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
            }
        }
    }

    private static long rowsOf(int partition) throws SQLException {
        return rowsOn(shardOf(partition), partition);
    }

    private static long rowsOn(int shard, int partition) throws SQLException {
        var p = tables.control().readTopology().partition(partition).orElseThrow();
        try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM orders WHERE thresher_slot BETWEEN ? AND ?")) {
            ps.setInt(1, p.slotLo());
            ps.setInt(2, p.slotHi());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
