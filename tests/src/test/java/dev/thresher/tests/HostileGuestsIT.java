package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.limits.Limits;
import dev.thresher.server.BindingAdmin;
import dev.thresher.server.DevCluster;
import dev.thresher.server.TableAdmin;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Hostile and greedy guests on the real cluster, next to a well-behaved binding: a guest spinning to its
 * deadline on one node slows itself, not the calls of another binding through the same node.
 */
class HostileGuestsIT {
    private static final int SPINNER_CALLERS = Integer.getInteger("spinners", 8);
    private static DevCluster cluster;
    private static TableAdmin tables;
    private static BindingAdmin bindings;

    @BeforeAll
    static void open() throws Exception {
        cluster = Cluster.get();
        tables = new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                new PrintStream(PrintStream.nullOutputStream()));
        bindings = new BindingAdmin(tables, Limits.DEFAULTS);
    }

    @AfterAll
    static void close() {
        tables.close();
    }

    private static void deploy(String binding, int abi, String selector, byte[] wasm) {
        String manifest = """
                {"manifestVersion": 1, "binding": "%s", "module": "m.wasm", "abiVersion": %d, "selector": "%s"}"""
                .formatted(binding, abi, selector);
        bindings.deploy(DevCluster.TENANT, "test", manifest.getBytes(StandardCharsets.UTF_8), wasm);
    }

    /** An order id stored on shard {@code shard}: a selector matching it alone reads rows on that shard's node only. */
    private static long anOrderOnShard(int shard) throws SQLException {
        try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT min(order_id) FROM orders")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Latencies in microseconds of {@code perThread} calls of the sample from each of 8 threads through node 0. */
    private static long[] sampleLatencies(int perThread) throws Exception {
        ExecutorService callers = Executors.newFixedThreadPool(8);
        List<Long> micros = new CopyOnWriteArrayList<>();
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                running.add(callers.submit(() -> {
                    try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
                        for (int i = 0; i < perThread; i++) {
                            long t0 = System.nanoTime();
                            try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                                assertThat(rs.next()).isTrue();
                            }
                            micros.add((System.nanoTime() - t0) / 1_000);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) {
                f.get(5, TimeUnit.MINUTES);
            }
        } finally {
            callers.shutdownNow();
        }
        return micros.stream().mapToLong(Long::longValue).sorted().toArray();
    }

    private static long p99(long[] sorted) {
        return sorted[(int) Math.ceil(sorted.length * 0.99) - 1];
    }

    @Test
    void aGuestSpinningToItsDeadlineSlowsItselfNotAnotherBindingThroughTheSameNode() throws Exception {
        deploy("spinner", 1, "SELECT region, amount FROM orders WHERE order_id = " + anOrderOnShard(1),
                ContractGuests.wasm("spin_rows"));
        sampleLatencies(20); // warm: the sample's cells on every node, its code compiled
        long[] alone = sampleLatencies(60);

        AtomicBoolean stop = new AtomicBoolean();
        List<String> spinnerOutcomes = new CopyOnWriteArrayList<>();
        List<Long> spinnerMillis = new CopyOnWriteArrayList<>();
        List<Thread> spinners = new ArrayList<>();
        for (int t = 0; t < SPINNER_CALLERS; t++) spinners.add(Thread.ofPlatform().name("spinner-caller").start(() -> {
            try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
                s.execute("SET thresher.call_deadline_ms = 2000");
                while (!stop.get()) {
                    long t0 = System.nanoTime();
                    try {
                        s.executeQuery("CALL BINDING spinner()").close();
                        spinnerOutcomes.add("answered");
                    } catch (SQLException e) {
                        spinnerOutcomes.add(e.getSQLState() + " " + e.getMessage().lines().findFirst().orElse(""));
                    }
                    spinnerMillis.add((System.nanoTime() - t0) / 1_000_000);
                }
            } catch (Exception e) {
                spinnerOutcomes.add("connection: " + e.getMessage());
            }
        }));
        long[] beside;
        try {
            // Measured once every spinner caller has had an answer: a binding is known to be slow only after one
            // of its runs held a place limits.slowRunMs; until then it may hold its share (half the places).
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (spinnerOutcomes.size() < SPINNER_CALLERS && System.nanoTime() - until < 0) {
                Thread.sleep(10);
            }
            beside = sampleLatencies(60);
        } finally {
            stop.set(true);
            for (Thread spinner : spinners) {
                spinner.join(TimeUnit.SECONDS.toMillis(10));
            }
        }
        String summary = "p50/p99 alone %d/%d µs, beside the spinner %d/%d µs; spinner calls %s in %s ms".formatted(
                alone[alone.length / 2], p99(alone), beside[beside.length / 2], p99(beside), spinnerOutcomes, spinnerMillis);
        System.out.println(summary);
        assertThat(spinnerOutcomes).as(summary).isNotEmpty()
                .allSatisfy(o -> assertThat(o).matches("57014 .*|57P03 .* busy: .*"));
        assertThat(p99(beside)).as(summary).isLessThanOrEqualTo(2 * p99(alone));
        assertThat(Arrays.stream(beside).count()).isEqualTo(480);
    }
}
