package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Failover on a cluster of separate node processes (each node stands by for the next node's shard database):
 * a leader killed with {@code kill -9}, and a leader frozen with {@code SIGSTOP} for 60 s, while eight clients call
 * through another node. Calls succeed again within 10 s of the fault; every successful result equals the SQL
 * reference; the frozen leader, once resumed, tries to publish what it ran (its log says so) and publishes nothing.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FailoverIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long RECOVERY_BOUND_MS = 10_000;
    /** How long the leader stays frozen: the acceptance's 60 s, far past its lease and the recovery bound. */
    private static final long FREEZE_MS = Long.getLong("thresher.failover.freezeMs", 60_000);

    private static DevCluster databases;
    private static NodeProcesses nodes;
    private static Map<String, double[]> reference;

    @BeforeAll
    static void start() throws Exception {
        Path dir = Files.createTempDirectory("thresher-failover-");
        databases = DevCluster.start(DevCluster.Options.defaults(dir).withPgwirePort(0).withRows(20_000).withoutNodes());
        nodes = new NodeProcesses(databases, dir, Map.of());
        for (int i = 1; i <= 3; i++) {
            nodes.start(i);
        }
        reference = Cluster.sqlReference(databases);
    }

    @AfterAll
    static void stop() {
        if (nodes != null) {
            nodes.close();
        }
        if (databases != null) {
            databases.close();
        }
        databases = null;
        nodes = null;
    }

    /** One call's outcome, by the test's clock. */
    record Outcome(long startNanos, long endNanos, String problem) {}

    @Test
    @Order(1)
    void aLeaderKilledWithSigkillIsReplacedAndCallsSucceedAgainWithinTenSeconds() throws Exception {
        try (Calls calls = new Calls(1)) {
            calls.await(40, "calls before the fault");
            long killed = System.nanoTime();
            nodes.kill(2);
            calls.awaitStartedAfter(killed + TimeUnit.MILLISECONDS.toNanos(RECOVERY_BOUND_MS), 40,
                    "calls started 10 s after the kill");
            List<Outcome> outcomes = calls.stop();
            assertRecovered(outcomes, killed, "kill -9 of node-2");
        }
        assertThat(ledBy("node-1", 2)).as("node-1, standing by for shard 2, leads its partitions").isPositive();
        nodes.start(2);
    }

    @Test
    @Order(2)
    void aLeaderFrozenWithSigstopIsReplacedWithinTenSecondsAndPublishesNothingOnceResumed() throws Exception {
        Timestamp frozenAt;
        try (Calls calls = new Calls(1)) {
            calls.await(40, "calls before the fault");
            frozenAt = nodes.controlNow();
            long frozen = System.nanoTime();
            nodes.signal(3, "STOP");
            long linesBefore;
            try {
                Thread.sleep(FREEZE_MS); // the fault lasts this long: a time simulated, not a wait
            } finally {
                try {
                    linesBefore = Files.readAllLines(nodes.log(3)).size();
                } finally {
                    nodes.signal(3, "CONT");
                }
            }
            // the resumed node's runs from before the freeze end: each goes on to publish what it ran and is refused
            // (its call's deadline passed while the node was frozen, or its lease moved; node-3 logs each refused
            // publication), or stops before publishing; none may publish (checked below). Calls stop right after,
            // before node-3 has been live two leases and takes its partitions back under a new epoch.
            Await.until("node-3's host requests from before the freeze ended (thresher_host_requests_running)",
                    Duration.ofSeconds(30), () -> nodes.metric(3, "thresher_host_requests_running"), v -> v == 0);
            long skip = linesBefore;
            System.out.println("node-3's refused publications after it resumed: " + Files.readAllLines(nodes.log(3))
                    .stream().skip(skip).filter(l -> l.contains("not published")).toList());
            List<Outcome> outcomes = calls.stop();
            assertRecovered(outcomes, frozen, "SIGSTOP of node-3");
        }
        assertThat(ledBy("node-2", 3)).as("node-2, standing by for shard 3, leads its partitions").isPositive();
        try (Connection c = nodes.control(); PreparedStatement ps = c.prepareStatement("""
                SELECT count(*) FROM shard_runs WHERE host_id = 'node-3'
                  AND published_at > ?::timestamptz + interval '500 milliseconds'""")) {
            ps.setTimestamp(1, frozenAt);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getLong(1)).as("slots node-3 published after it was frozen").isZero();
            }
        }
    }

    private static void assertRecovered(List<Outcome> outcomes, long faultNanos, String fault) {
        List<String> wrong = outcomes.stream().map(Outcome::problem)
                .filter(p -> p != null && p.startsWith("WRONG")).toList();
        assertThat(wrong).as("results that differ from the SQL reference").isEmpty();
        long bound = faultNanos + TimeUnit.MILLISECONDS.toNanos(RECOVERY_BOUND_MS);
        List<Outcome> late = outcomes.stream().filter(o -> o.startNanos() >= bound).toList();
        assertThat(late).as("calls started 10 s after the fault").hasSizeGreaterThan(8);
        assertThat(late.stream().filter(o -> o.problem() != null).map(Outcome::problem).toList())
                .as("calls started 10 s after the %s that failed", fault).isEmpty();
        long firstBack = outcomes.stream().filter(o -> o.startNanos() >= faultNanos && o.problem() == null)
                .mapToLong(Outcome::endNanos).min().orElse(Long.MAX_VALUE);
        long failed = outcomes.stream().filter(o -> o.problem() != null).count();
        long lastFailure = outcomes.stream().filter(o -> o.problem() != null).mapToLong(Outcome::endNanos).max()
                .orElse(faultNanos);
        System.out.printf("%s: %d calls, %d failed; calls all succeed again %d ms after the fault (last failure at +%d ms,"
                        + " first success of a call started after it at +%d ms)%n", fault, outcomes.size(), failed,
                TimeUnit.NANOSECONDS.toMillis(Math.max(0, lastFailure - faultNanos)),
                TimeUnit.NANOSECONDS.toMillis(Math.max(0, lastFailure - faultNanos)),
                TimeUnit.NANOSECONDS.toMillis(firstBack - faultNanos));
    }

    private static long ledBy(String host, int shard) throws Exception {
        try (Connection c = nodes.control(); PreparedStatement ps = c.prepareStatement("""
                SELECT count(*) FROM partition_leases l JOIN partitions p USING (partition_id)
                WHERE l.host_id = ? AND p.shard_id = ? AND l.epoch = p.epoch AND l.lease_until > now()""")) {
            ps.setString(1, host);
            ps.setInt(2, shard);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Eight clients calling the sample binding through one node until stopped, each outcome recorded. */
    private static final class Calls implements AutoCloseable {
        private final ExecutorService clients = Executors.newFixedThreadPool(8);
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
        private final List<Future<?>> futures = new ArrayList<>();

        Calls(int node) {
            for (int t = 0; t < 8; t++) {
                futures.add(clients.submit(() -> {
                    Connection c = null;
                    while (running.get()) {
                        long start = System.nanoTime();
                        String problem;
                        try {
                            if (c == null) {
                                c = nodes.connect(node);
                            }
                            try (Statement s = c.createStatement();
                                 ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                                rs.next();
                                String differs = Cluster.differs(JSON.readTree(rs.getString(1)), reference);
                                problem = differs == null ? null : "WRONG " + differs;
                            }
                        } catch (SQLException e) {
                            problem = e.getSQLState() + " " + e.getMessage();
                        }
                        outcomes.add(new Outcome(start, System.nanoTime(), problem));
                    }
                    if (c != null) {
                        c.close();
                    }
                    return null;
                }));
            }
        }

        void await(int count, String what) {
            Await.until(count + " " + what + " that succeeded", Duration.ofSeconds(60),
                    () -> outcomes.stream().filter(o -> o.problem() == null).count(), n -> n >= count);
        }

        /** Waits until {@code count} calls started at or after {@code sinceNanos} have ended, however they ended. */
        void awaitStartedAfter(long sinceNanos, int count, String what) {
            Await.until(count + " " + what + " ended", Duration.ofSeconds(90),
                    () -> outcomes.stream().filter(o -> o.startNanos() >= sinceNanos).count(), n -> n >= count);
        }

        List<Outcome> stop() throws Exception {
            running.set(false);
            for (Future<?> f : futures) {
                f.get(60, TimeUnit.SECONDS);
            }
            return new ArrayList<>(outcomes);
        }

        @Override
        public void close() {
            running.set(false);
            clients.shutdownNow();
        }
    }
}
