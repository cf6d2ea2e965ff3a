package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.server.dev.DevCluster;
import dev.thresher.tests.FaultCheckers.Check;
import dev.thresher.tests.FaultCheckers.FaultRun;
import dev.thresher.tests.Faults.Fault;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The fault suite (docs/reliability.md): real faults on a cluster of separate node processes over the embedded
 * PostgreSQL of a {@link DevCluster}, under clients calling the sample binding through node-1 with a short deadline.
 * Each fault runs as: calls flowing, the fault injected and held, healed, then the checkers of {@link FaultCheckers}
 * over every call and over the control database.
 *
 * <p>Node-1 coordinates every call (the clients call it) and leads shard 1's partitions, standing by for shard 2;
 * node-2 leads shard 2's, node-3 shard 3's. Each node binds its wire server on a free port and advertises the port of
 * a {@link TcpProxy} in front of it ({@code node.wireAdvertisedPort}), so all node-to-node traffic crosses a proxy.
 *
 * <p>System properties: {@code faults.secondsPerFault} (default 4: the short variant in the normal test run; 180 for
 * the long one), {@code faults.deadlineMs} (4000), {@code faults.clients} (4), {@code faults.only} (comma-separated
 * fault names), {@code faults.afterHealSeconds} (calls kept flowing after the heal: 0 in the short variant, 30 when a
 * fault lasts a minute or more), {@code faults.writeDoc} (write the results into docs/reliability.md; default true when
 * a fault lasts a minute or more). The results always go to {@code tests/target/fault-suite-results.md}.
 *
 * <p>The campaign ({@code faults.campaignMinutes} above 0, {@code scripts/fault-campaign}): every fault, and combined
 * faults (a leader killed while the control database is slow, a node frozen during deploys, a partition moved during
 * a network cut), one after another until the time is up. Each run is checked as in the suite; a summary by fault
 * goes to {@code tests/target/fault-campaign-results.md}.
 */
class FaultSuiteIT {
    private static final long SECONDS_PER_FAULT = Long.getLong("faults.secondsPerFault", 4);
    private static final long DEADLINE_MS = Long.getLong("faults.deadlineMs", 4_000);
    /** The nodes' partition lease (their default). */
    private static final long LEASE_MS = dev.thresher.limits.Limits.DEFAULTS.partitionLeaseMs();
    private static final int CLIENTS = Integer.getInteger("faults.clients", 4);
    private static final long AFTER_HEAL_SECONDS = Long.getLong("faults.afterHealSeconds", SECONDS_PER_FAULT >= 60 ? 30 : 0);
    private static final boolean WRITE_DOC = Boolean.parseBoolean(
            System.getProperty("faults.writeDoc", Boolean.toString(SECONDS_PER_FAULT >= 60)));
    /** How long the campaign runs; 0: the suite (each fault once). */
    private static final long CAMPAIGN_MINUTES = Long.getLong("faults.campaignMinutes", 0);
    private static dev.thresher.server.admin.TableAdmin admin;
    private static final Set<String> ONLY = Arrays.stream(System.getProperty("faults.only", "").split(","))
            .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
    /** The wire-delay fault's latency, each way. */
    private static final long WIRE_DELAY_MS = Long.getLong("faults.wireDelayMs", 1_500);

    private static DevCluster databases;
    private static NodeProcesses nodes;
    private static final Map<Integer, TcpProxy> proxies = new TreeMap<>();
    /** What every node reaches the control database through. */
    private static TcpProxy controlProxy;
    private static Faults.Postgres postgres;
    private static Faults.Cluster cluster;
    private static Map<String, double[]> reference;
    private static final List<Result> results = Collections.synchronizedList(new ArrayList<>());
    private static long suiteStarted;

    /** One fault's run and its checks, or why it could not run. */
    record Result(FaultRun run, List<Check> checks, String error, String faultNote) {}

    @BeforeAll
    static void start() throws Exception {
        suiteStarted = System.nanoTime();
        Path dir = Files.createTempDirectory("thresher-faults-");
        databases = DevCluster.start(DevCluster.Options.defaults(dir).withPgwirePort(0).withRows(20_000).withoutNodes());
        postgres = new Faults.Postgres(databases);
        nodes = new NodeProcesses(databases, dir, Map.of());
        for (int i = 1; i <= 3; i++) {
            proxies.put(i, new TcpProxy("node-" + i));
        }
        controlProxy = new TcpProxy("control");
        java.util.regex.Matcher port = java.util.regex.Pattern.compile("//[^/:]+:(\\d+)/").matcher(databases.controlUrl());
        if (!port.find()) {
            throw new IllegalStateException("no port in " + databases.controlUrl());
        }
        controlProxy.target(Integer.parseInt(port.group(1)));
        cluster = new Faults.Cluster(nodes, proxies, postgres, controlProxy, databases.controlUrl());

        ExecutorService starting = Executors.newFixedThreadPool(3);
        try {
            List<Future<Object>> started = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                int n = i;
                started.add(starting.submit(() -> {
                    cluster.startNode(n);
                    return null;
                }));
            }
            for (Future<Object> f : started) {
                f.get(180, TimeUnit.SECONDS);
            }
        } finally {
            starting.shutdownNow();
        }
        reference = Cluster.sqlReference(databases);
        System.out.printf("fault suite: cluster up in %d s; %d s per fault, deadline %d ms, %d clients%n",
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - suiteStarted), SECONDS_PER_FAULT, DEADLINE_MS, CLIENTS);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (postgres != null) {
                try {
                    postgres.thaw();
                    postgres.startIfStopped();
                } catch (Exception e) {
                    System.out.println("fault suite: could not heal PostgreSQL: " + e);
                }
            }
            proxies.values().forEach(TcpProxy::heal);
            if (controlProxy != null) {
                controlProxy.heal();
            }
            writeReport();
        } finally {
            if (nodes != null) {
                nodes.close();
            }
            proxies.values().forEach(TcpProxy::close);
            proxies.clear();
            if (controlProxy != null) {
                controlProxy.close();
            }
            controlProxy = null;
            if (admin != null) {
                admin.close();
                admin = null;
            }
            if (databases != null) {
                databases.close();
            }
            databases = null;
            nodes = null;
        }
    }

    /** The campaign's faults: each of the suite's, then the combined ones. */
    static List<Fault> campaignFaults() {
        if (admin == null) {
            admin = new dev.thresher.server.admin.TableAdmin(databases.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                    new java.io.PrintStream(java.io.PrintStream.nullOutputStream()));
        }
        dev.thresher.server.admin.BindingAdmin bindings = new dev.thresher.server.admin.BindingAdmin(admin,
                dev.thresher.limits.Limits.DEFAULTS);
        dev.thresher.server.admin.TopologyAdmin topology = new dev.thresher.server.admin.TopologyAdmin(admin,
                dev.thresher.limits.Limits.DEFAULTS, new java.io.PrintStream(java.io.PrintStream.nullOutputStream()));
        List<Fault> all = new ArrayList<>(faults());
        all.add(Faults.both(Faults.controlSlow(cluster, 100), Faults.kill(cluster, 2, "leader")));
        all.add(Faults.both(Faults.deploying(cluster, bindings), Faults.freeze(cluster, 2, "leader")));
        all.add(Faults.both(Faults.wireBlackhole(cluster, 3, List.of(TcpProxy.Direction.TO_NODE,
                TcpProxy.Direction.FROM_NODE)), Faults.moving(cluster, topology)));
        all.add(Faults.both(Faults.postgresFrozen(cluster), Faults.kill(cluster, 3, "leader")));
        return all.stream().filter(f -> ONLY.isEmpty() || ONLY.contains(f.name())).toList();
    }

    static List<Fault> faults() {
        List<Fault> all = List.of(
                Faults.kill(cluster, 2, "leader"),
                Faults.freeze(cluster, 2, "leader"),
                Faults.kill(cluster, 1, "coordinator"),
                Faults.freeze(cluster, 1, "coordinator"),
                Faults.postgresStopped(cluster),
                Faults.postgresFrozen(cluster),
                Faults.controlCut(cluster),
                Faults.sessionsTerminated(cluster),
                Faults.wireDelay(cluster, List.of(2, 3), WIRE_DELAY_MS),
                Faults.wireBlackhole(cluster, 2, List.of(TcpProxy.Direction.TO_NODE, TcpProxy.Direction.FROM_NODE)));
        return all.stream().filter(f -> ONLY.isEmpty() || ONLY.contains(f.name())).toList();
    }

    @TestFactory
    Stream<DynamicTest> everyFaultHealsWithoutAWrongLateOrLostAnswer() {
        Stream<Fault> faults = faults().stream();
        if (CAMPAIGN_MINUTES > 0) {
            List<Fault> cycle = campaignFaults();
            long end = suiteStarted + TimeUnit.MINUTES.toNanos(CAMPAIGN_MINUTES);
            java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
            faults = Stream.generate(() -> cycle.get(next.getAndIncrement() % cycle.size()))
                    .takeWhile(f -> System.nanoTime() - end < 0);
        }
        return faults.map(f -> DynamicTest.dynamicTest(f.name(), () -> {
            Result r = run(f);
            results.add(r);
            if (CAMPAIGN_MINUTES > 0) {
                writeCampaign();
            }
            assertThat(r.error()).as("%s could not run", f.name()).isNull();
            List<String> failed = r.checks().stream().filter(c -> !c.passed())
                    .map(c -> c.number() + ". " + c.name() + ": " + c.detail()).toList();
            assertThat(failed).as("checkers that failed under %s", f.name()).isEmpty();
        }));
    }

    private static Result run(Fault f) throws Exception {
        long t0 = System.nanoTime();
        // The steady state first: a failover of the fault before hands partitions back within two leases.
        String unsteady = cluster.awaitHomeLeaders(30_000);
        if (unsteady != null) {
            System.out.println("fault " + f.name() + ": " + unsteady);
        }
        Timestamp windowStart = FaultCheckers.controlNow(databases, 30_000);
        FaultRun run;
        String error = null;
        java.util.SortedMap<Integer, String> leadersBefore = null;
        java.util.SortedMap<Integer, String> leadersAfter = null;
        try (FaultCalls calls = new FaultCalls(nodes, 1, CLIENTS, DEADLINE_MS, reference)) {
            boolean flowing = calls.awaitSuccesses(2 * CLIENTS, 60_000);
            if (f.keepsLeaders()) {
                leadersBefore = cluster.leaders();
            }
            long inject = System.nanoTime();
            long held;
            try {
                f.inject();
                long until = inject + TimeUnit.SECONDS.toNanos(SECONDS_PER_FAULT);
                while (System.nanoTime() - until < 0) {
                    f.during();
                    Thread.sleep(Math.max(1, Math.min(250, TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime()))));
                }
            } catch (Exception | AssertionError e) { // an Await's bound passed is an AssertionError
                error = "injecting: " + e;
            } finally {
                held = System.nanoTime();
                try {
                    f.heal();
                } catch (Exception | AssertionError e) {
                    error = (error == null ? "" : error + "; ") + "healing: " + e;
                }
            }
            long heal = System.nanoTime();
            // Calls go on until they succeed again (each client once), bounded by the recovery bound and a deadline.
            calls.awaitSuccessesSince(heal, CLIENTS, FaultCheckers.RECOVERY_BOUND_MS + DEADLINE_MS + 1_000);
            if (AFTER_HEAL_SECONDS > 0) {
                Thread.sleep(Math.max(0, TimeUnit.SECONDS.toMillis(AFTER_HEAL_SECONDS)
                        - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - heal)));
            }
            if (f.keepsLeaders()) {
                // A partition that changes hands after the heal does so within a lease, and a failback two leases
                // later moves its epoch again: either leaves the epoch moved, so the leaders are read two leases on.
                long observeUntil = heal + TimeUnit.MILLISECONDS.toNanos(2 * LEASE_MS + 1_000);
                Thread.sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(observeUntil - System.nanoTime())));
                leadersAfter = cluster.leaders();
            }
            List<FaultCalls.Call> done = calls.stop();
            run = new FaultRun(f.name(), f.what(), DEADLINE_MS, TimeUnit.NANOSECONDS.toMillis(held - inject),
                    TimeUnit.NANOSECONDS.toMillis(heal - held), done,
                    calls.connectFailures(), inject, heal, windowStart, flowing, f.hitsCoordinator(),
                    (unsteady == null ? "" : unsteady + "; ") + f.note());
        }
        List<Check> checks = new java.util.ArrayList<>(FaultCheckers.check(run, databases, reference));
        if (leadersBefore != null) {
            checks.add(FaultCheckers.leadersKept(leadersBefore, leadersAfter));
        }
        Result r = new Result(run, checks, error, f.note());
        System.out.println(summary(r) + " (" + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0) + " s)");
        return r;
    }

    private static String summary(Result r) {
        FaultRun run = r.run();
        StringBuilder b = new StringBuilder("fault " + run.fault() + ": " + run.calls().size() + " calls, "
                + run.successes() + " succeeded (" + run.successesDuringFault() + " during the fault), failures " + run.failures() + ", max answer " + run.maxLatencyMs()
                + " ms, recovery " + run.recoveryMs() + " ms after the heal" + (r.error() == null ? "" : "; ERROR " + r.error()));
        for (Check c : r.checks()) {
            b.append("\n  ").append(c.number()).append(' ').append(c.verdict()).append(' ').append(c.name()).append(": ")
                    .append(c.detail());
        }
        return b.toString();
    }

    static final String BEGIN = "<!-- fault-suite results: begin (written by FaultSuiteIT) -->";
    static final String END = "<!-- fault-suite results: end -->";

    /** The campaign's summary so far, by fault, to {@code tests/target/fault-campaign-results.md} (after every run). */
    private static void writeCampaign() throws Exception {
        List<Result> all;
        synchronized (results) {
            all = new ArrayList<>(results);
        }
        long calls = all.stream().mapToLong(r -> r.run().calls().size()).sum();
        long ok = all.stream().mapToLong(r -> r.run().successes()).sum();
        List<String> failed = new ArrayList<>();
        for (Result r : all) {
            if (r.error() != null) {
                failed.add("`" + r.run().fault() + "` could not run: " + r.error());
            }
            r.checks().stream().filter(c -> !c.passed()).forEach(c -> failed.add("`" + r.run().fault() + "` checker "
                    + c.number() + " (" + c.name() + "): " + c.detail()));
        }
        StringBuilder m = new StringBuilder("\n### Campaign of ").append(Instant.now().truncatedTo(ChronoUnit.MINUTES))
                .append("\n\n").append(TimeUnit.NANOSECONDS.toMinutes(System.nanoTime() - suiteStarted))
                .append(" minutes, ").append(all.size()).append(" fault runs of ").append(SECONDS_PER_FAULT)
                .append(" s each, ").append(calls).append(" calls (").append(ok).append(" succeeded), deadline ")
                .append(DEADLINE_MS).append(" ms, ").append(CLIENTS).append(" clients; checker failures: ")
                .append(failed.size()).append(".\n\n");
        m.append("| fault | runs | calls | ok | max answer | slowest first success after the heal | checkers failed |\n");
        m.append("|---|---|---|---|---|---|---|\n");
        Map<String, List<Result>> byFault = all.stream().collect(Collectors.groupingBy(r -> r.run().fault(),
                java.util.LinkedHashMap::new, Collectors.toList()));
        byFault.forEach((name, runs) -> m.append("| `").append(name).append("` | ").append(runs.size()).append(" | ")
                .append(runs.stream().mapToLong(r -> r.run().calls().size()).sum()).append(" | ")
                .append(runs.stream().mapToLong(r -> r.run().successes()).sum()).append(" | ")
                .append(runs.stream().mapToLong(r -> r.run().maxLatencyMs()).max().orElse(0)).append(" ms | ")
                .append(runs.stream().mapToLong(r -> r.run().recoveryMs()).anyMatch(x -> x < 0) ? "none in a run"
                        : runs.stream().mapToLong(r -> r.run().recoveryMs()).max().orElse(0) + " ms").append(" | ")
                .append(runs.stream().flatMap(r -> r.checks().stream()).filter(c -> !c.passed())
                        .map(c -> Integer.toString(c.number())).distinct().sorted().collect(Collectors.joining(", ",
                                "", ""))).append(" |\n"));
        if (!failed.isEmpty()) {
            m.append("\nWhat failed:\n\n");
            failed.forEach(f -> m.append("- ").append(f.replace("|", "\\|")).append('\n'));
        }
        Path target = Path.of(System.getProperty("thresher.repo", ".")).resolve("tests/target/fault-campaign-results.md");
        Files.createDirectories(target.getParent());
        Files.writeString(target, m.toString(), StandardCharsets.UTF_8);
    }

    private static void writeReport() throws Exception {
        if (results.isEmpty()) {
            return;
        }
        String md = markdown();
        Path repo = Path.of(System.getProperty("thresher.repo", "."));
        Path target = repo.resolve("tests/target/fault-suite-results.md");
        Files.createDirectories(target.getParent());
        Files.writeString(target, md, StandardCharsets.UTF_8);
        System.out.println("fault suite: results in " + target);
        if (WRITE_DOC) {
            Path doc = repo.resolve("docs/reliability.md");
            String text = Files.readString(doc, StandardCharsets.UTF_8);
            int b = text.indexOf(BEGIN);
            int e = text.indexOf(END);
            if (b < 0 || e < b) {
                System.out.println("fault suite: " + doc + " has no results markers; not written");
                return;
            }
            Files.writeString(doc, text.substring(0, b + BEGIN.length()) + "\n" + md + text.substring(e),
                    StandardCharsets.UTF_8);
            System.out.println("fault suite: results written into " + doc);
        }
    }

    private static String markdown() {
        StringBuilder m = new StringBuilder();
        m.append("\n### Run of ").append(Instant.now().truncatedTo(ChronoUnit.MINUTES)).append(": ")
                .append(SECONDS_PER_FAULT >= 60 ? "long" : "short").append(" variant\n\n")
                .append(SECONDS_PER_FAULT).append(" s per fault, call deadline ").append(DEADLINE_MS).append(" ms, ")
                .append(CLIENTS).append(" clients calling node-1, ").append(Runtime.getRuntime().availableProcessors())
                .append(" cores, suite ").append(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - suiteStarted))
                .append(" s").append(AFTER_HEAL_SECONDS > 0 ? ", calls kept flowing " + AFTER_HEAL_SECONDS
                        + " s after each heal" : "").append(".\n\n");
        m.append("| fault | held | heal took | calls | ok | ok during the fault | failures by code | connect failures | max answer / deadline | first success after heal | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 |\n");
        m.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Result r : results) {
            FaultRun run = r.run();
            m.append("| `").append(run.fault()).append("` | ").append(run.heldMs()).append(" ms | ")
                    .append(run.healMs()).append(" ms | ")
                    .append(run.calls().size()).append(" | ").append(run.successes()).append(" | ")
                    .append(run.successesDuringFault()).append(" | ")
                    .append(run.failures().entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                            .collect(Collectors.joining(", "))).append(" | ").append(run.connectFailures()).append(" | ")
                    .append(run.maxLatencyMs()).append(" / ").append(run.deadlineMs()).append(" ms | ")
                    .append(run.recoveryMs() < 0 ? "none" : run.recoveryMs() + " ms");
            for (Check c : r.checks()) {
                m.append(" | ").append(c.passed() ? "pass" : "**FAIL**");
            }
            m.append(r.checks().size() < 8 ? " | – |\n" : " |\n"); // checker 8 runs only where no node fails
        }
        m.append("\nWhat each check found:\n\n");
        for (Result r : results) {
            m.append("- `").append(r.run().fault()).append("`")
                    .append(r.error() == null ? "" : " (error: " + r.error() + ")")
                    .append(r.run().note().isEmpty() ? "" : " (" + r.run().note() + ")").append(":\n");
            for (Check c : r.checks()) {
                m.append("  ").append(c.number()).append(". ").append(c.passed() ? "pass" : "**FAIL**").append(" — ")
                        .append(c.detail().replace("|", "\\|")).append('\n');
            }
        }
        return m.toString();
    }
}
