package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.limits.Limits;
import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.dev.DevCluster;
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
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Hostile and greedy guests on the real cluster, next to a well-behaved binding: a guest spinning to its
 * deadline on one node slows itself, not the calls of another binding through the same node.
 */
class HostileGuestsIT {
    private static final int SPINNER_CALLERS = Integer.getInteger("spinners", 8);
    /** How long past its run budget a hostile guest may take to be stopped and answered: 250 ms, on 2 shared cores. */
    private static final long STOP_MS = 250;
    private static DevCluster cluster;
    private static BindingAdmin bindings;

    @BeforeAll
    static void open() throws Exception {
        cluster = Cluster.get();
        bindings = Cluster.bindings();
    }

    private static void deploy(String binding, int abi, String selector, byte[] wasm) {
        deploy(binding, abi, selector, "{}", wasm);
    }

    private static void deploy(String binding, int abi, String selector, String budgets, byte[] wasm) {
        String manifest = """
                {"manifestVersion": 1, "binding": "%s", "module": "m.wasm", "abiVersion": %d, "selector": "%s",
                 "budgets": %s}""".formatted(binding, abi, selector, budgets);
        bindings.deploy(DevCluster.TENANT, "test", manifest.getBytes(StandardCharsets.UTF_8), wasm);
    }

    /**
     * The sample's answer through node {@code node} equals the SQL reference (revenue and count by region, computed
     * with SQL over the same rows of the shard databases): the node serves the next call correctly.
     */
    private static void sampleIsRight(int node) throws Exception {
        var reference = Cluster.sqlReference();
        try (Connection c = Cluster.connect(node); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
            assertThat(rs.next()).isTrue();
            String answer = rs.getString(1);
            assertThat(Cluster.differs(new com.fasterxml.jackson.databind.ObjectMapper().readTree(answer), reference))
                    .as("node %d's answer %s against the SQL reference", node, answer).isNull();
        }
    }

    private record Ended(String sqlState, String message, long millis) {
    }

    /** Calls {@code binding} through node 0 once (it must fail) and says how and how fast. */
    private static Ended fails(String binding, String deadlineMs) throws Exception {
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            s.execute("SET thresher.call_deadline_ms = " + deadlineMs);
            long t0 = System.nanoTime();
            try {
                s.executeQuery("CALL BINDING " + binding + "()").close();
            } catch (SQLException e) {
                return new Ended(e.getSQLState(), e.getMessage(), (System.nanoTime() - t0) / 1_000_000);
            }
            throw new AssertionError(binding + " answered");
        }
    }

    @Test
    void aKeyHoldingANulFailsTypedAndItsInvocationIsRecordedAsFailed() throws Exception {
        // kills: ControlSql.storable (the validator's failure quotes the key, and no PostgreSQL text holds a NUL:
        // the failure could not be recorded and the invocation stayed running)
        deploy("nul_key", 1, ContractGuests.SELECTOR, ContractGuests.wasm("nul_key"));
        Ended e = fails("nul_key", "10000");
        assertThat(e.sqlState()).as(e.message()).isEqualTo("39000");
        try (Connection c = java.sql.DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT state, error_code, error_message FROM invocations"
                     + " WHERE binding_name = 'nul_key' ORDER BY created_at DESC LIMIT 1")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("failed");
            assertThat(rs.getInt(2)).isEqualTo(dev.thresher.errors.ErrorCode.PARTIAL_KEY_DUPLICATED.code());
            assertThat(rs.getString(3)).contains("to\uFFFDtal");
        }
        sampleIsRight(0);
    }

    @Test
    void everyHostileGuestEndsTypedWithinItsBudgetAndTheNodeServesTheNextCall() throws Exception {
        String orders = "SELECT region, amount FROM orders";
        // each declares its run budget: every failure, typed, must come within it plus STOP_MS
        deploy("h_spin", 1, orders, "{\"runMs\": 300}", ContractGuests.wasm("spin"));
        deploy("h_trap", 1, orders, "{\"runMs\": 2000}", ContractGuests.wasm("trap"));
        deploy("h_recurse", 1, orders, "{\"runMs\": 2000}", ContractGuests.wasm("recurse"));
        deploy("h_emits", 1, orders, "{\"runMs\": 2000, \"emits\": 10}", ContractGuests.wasm("emit_65"));
        deploy("h_input", 1, orders, "{\"runMs\": 2000, \"inputBytes\": 64}", ContractGuests.wasm("row_count"));
        deploy("h_output", 1, orders, "{\"runMs\": 2000, \"outputBytes\": 20}", ContractGuests.wasm("emit_65"));
        record Case(String binding, String sqlState, String says, long budgetMs) {
        }
        List<Case> cases = List.of(
                new Case("h_spin", "57014", "budgets.runMs", 300),
                new Case("h_trap", "38000", "thresher_code=4001", 2000),
                new Case("h_recurse", "38000", "call stack exhausted", 2000),
                new Case("h_emits", "53400", "budgets.emits", 2000),
                new Case("h_input", "53400", "budgets.inputBytes", 2000),
                new Case("h_output", "53400", "budgets.outputBytes", 2000));
        for (int round = 0; round < 2; round++) { // the second round with every cell warm
            for (Case c : cases) {
                Ended e = fails(c.binding(), "5000");
                String summary = c + " ended " + e;
                assertThat(e.message()).as(summary).contains(c.says());
                assertThat(e.sqlState()).as(summary).isEqualTo(c.sqlState());
                if (round == 1) {
                    // the budget, and a small bound for stopping the guest and answering (a loaded machine's too)
                    assertThat(e.millis()).as(summary).isLessThanOrEqualTo(c.budgetMs() + STOP_MS);
                }
                sampleIsRight(0);
            }
        }
    }

    /** A guest that grows its memory to {@code pages} pages and writes its last word; distinct by {@code n}. */
    private static byte[] hog(int n, int pages) {
        return ("""
                (module
                  (import "thresher" "json_begin_object" (func $jb))
                  (import "thresher" "json_end_object" (func $je))
                  (memory (export "memory") 1 %d)
                  (data (i32.const 16) "hog %d")
                  (func (export "thresher_abi_version") (result i32) (i32.const 1))
                  (func (export "run") (param i32 i32) (result i32)
                    (drop (memory.grow (i32.sub (i32.const %d) (memory.size))))
                    (i32.store (i32.const %d) (i32.const 7))
                    (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (call $jb) (call $je) (i32.const 0)))
                """.formatted(pages, n, pages, pages * 65_536 - 4)).getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void twentyComponentsEachUsingTheirWholeMemoryBudgetNeverExhaustTheNode() throws Exception {
        int pages = 1_024; // 64 MiB each: twenty would take 1.25 GiB on a node, past its 1 GiB guest memory budget
        for (int i = 0; i < 20; i++) {
            deploy("hog_" + i, 1, "SELECT region, amount FROM orders", "{\"memoryBytes\": " + pages * 65_536L + "}",
                    hog(i, pages));
        }
        long evictionsBefore = cluster.nodes().stream().mapToLong(n -> n.cells().evictions()).sum();
        List<String> outcomes = new ArrayList<>();
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 20; i++) {
                    try (ResultSet rs = s.executeQuery("CALL BINDING hog_" + i + "()")) {
                        rs.next();
                        outcomes.add(rs.getString(1));
                    } catch (SQLException e) {
                        outcomes.add(e.getSQLState() + " " + e.getMessage().lines().findFirst().orElse(""));
                    }
                }
            }
        }
        String summary = "outcomes " + outcomes + "; reserved " + cluster.nodes().stream().map(n -> n.cells().reservedBytes()).toList();
        // each answered, or refused before any guest code because the node's guest memory budget is full
        assertThat(outcomes).as(summary).allSatisfy(o -> assertThat(o).matches("\\{}|57P03 .*guest memory budget is full.*"));
        assertThat(outcomes).as(summary).contains("{}");
        assertThat(cluster.nodes().stream().mapToLong(n -> n.cells().evictions()).sum() - evictionsBefore)
                .as("idle cells were evicted to admit others; " + summary).isPositive();
        for (var n : cluster.nodes()) {
            assertThat(n.cells().reservedBytes()).as(summary).isLessThanOrEqualTo(Limits.DEFAULTS.guestMemoryBudgetBytes());
        }
        sampleIsRight(0);
        sampleIsRight(2);
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
        sampleBesideASpinner("spinner", "SELECT region, amount FROM orders WHERE order_id = " + anOrderOnShard(1));
    }

    @Test
    void aGuestSpinningOnEveryNodeAtOnceSlowsItselfNotAnotherBinding() throws Exception {
        // every partition: a run on every node at once, more spinning runs than the machine has cores
        sampleBesideASpinner("spinner_everywhere", "SELECT region, amount FROM orders");
    }

    private void sampleBesideASpinner(String spinner, String selector) throws Exception {
        deploy(spinner, 1, selector, ContractGuests.wasm("spin_rows"));
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
                        s.executeQuery("CALL BINDING " + spinner + "()").close();
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
            Await.until(SPINNER_CALLERS + " spinner calls answered", java.time.Duration.ofSeconds(60),
                    spinnerOutcomes::size, n -> n >= SPINNER_CALLERS);
            beside = sampleLatencies(60);
        } finally {
            stop.set(true);
            for (Thread caller : spinners) {
                caller.join(TimeUnit.SECONDS.toMillis(10));
            }
        }
        String summary = "p50/p99 alone %d/%d µs, beside the spinner %d/%d µs; spinner calls %s in %s ms".formatted(
                alone[alone.length / 2], p99(alone), beside[beside.length / 2], p99(beside), spinnerOutcomes, spinnerMillis);
        System.out.println(summary);
        // the spinner ran to its deadline (its first runs, before it is known to be slow, hold a place), and every
        // other call of it waited for a place or a core to its deadline, or was refused busy: nothing else
        assertThat(spinnerOutcomes).as(summary).isNotEmpty()
                .allSatisfy(o -> assertThat(o).matches("57014 .*|57P03 .* busy: .*"))
                .anySatisfy(o -> assertThat(o).startsWith("57014 "));
        // Twice the p99 alone, or 500 ms more than it, whichever is larger: a p99 of ~480 calls on 2 shared cores moves
        // by a few hundred ms between runs (alone: 210 to 560 ms), while what this guards against — calls of another
        // binding waiting behind the spinner, up to its 2 s deadline — still lands far past either bound.
        assertThat(p99(beside)).as(summary).isLessThanOrEqualTo(Math.max(2 * p99(alone), p99(alone) + 500_000));
        assertThat(Arrays.stream(beside).count()).isEqualTo(480);
    }
}
