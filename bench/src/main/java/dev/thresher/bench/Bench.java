package dev.thresher.bench;

import dev.thresher.limits.Limits;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * One run of the bench: sets up the rows and every peer, checks the peers' answers against each other,
 * measures each workload on each peer, and fills a {@link Report}.
 */
final class Bench {
    static final List<String> PEERS = List.of(ThresherPeer.NAME, ThresherPeer.SQL_NAME, "pg-fanout", "pg-rows", "pg-single",
            "hazelcast-agg", "hazelcast-sql", "java");

    /**
     * @param clients the throughput workload's client counts; the latency workloads use 1 client
     * @param primeSeconds once per peer and workload, after the answers are checked and before anything is
     *        measured: calls from one client, then as long from as many clients as any measurement of the workload
     *        uses, so that the JIT compilers (the JVM's, and GraalWasm's for the guests) are done before the first
     *        measurement rather than during it (code reached only under concurrency, and the Graal compiler's own
     *        code as it compiles more, are compiled when many clients first call)
     * @param openLoopRate arrivals per second of the open-loop measurements; 0 for none
     * @param openLoopWorkers clients taking the open-loop arrivals
     */
    record Options(int rows, int partitions, List<Integer> clients, double primeSeconds, double warmupSeconds,
                   double durationSeconds, double openLoopRate, int openLoopWorkers, List<Workload> workloads,
                   List<String> peers, Path workDir, String command) {
        /** The most clients an open-loop measurement uses: its workers, or 1 when there is none. */
        int openLoopClients() {
            return openLoopRate > 0 ? openLoopWorkers : 1;
        }
    }

    /** How long the bench waits for the leader replicas to hold every partition in memory before it measures anyway. */
    static final long REPLICA_WAIT_SECONDS = 120;

    private final Options o;
    private final Progress progress;
    private final Report report = new Report();
    private final Measure.Timing timing;

    Bench(Options o, Progress progress) {
        this.o = o;
        this.progress = progress;
        this.timing = new Measure.Timing(o.warmupSeconds(), o.durationSeconds());
    }

    Report run() throws Exception {
        long t0 = System.nanoTime();
        report.command = o.command();
        report.started = Instant.now();
        report.machine.putAll(Machine.facts());
        double loadAtStart = Machine.loadAverage();
        report.rows = o.rows();
        report.partitions = o.partitions();
        report.shards = 3;
        report.clients = o.clients();
        report.primeSeconds = o.primeSeconds();
        report.warmupSeconds = o.warmupSeconds();
        report.durationSeconds = o.durationSeconds();
        report.openLoopRate = o.openLoopRate();
        report.openLoopWorkers = o.openLoopWorkers();
        o.workloads().forEach(w -> report.workloads.add(w.id));
        int rowsPerBatch = Limits.DEFAULTS.rowsPerBatch();
        int fullest = Dataset.maxPartitionRows(o.rows(), o.partitions());
        if (fullest > rowsPerBatch) {
            throw new IllegalArgumentException(o.rows() + " rows in " + o.partitions() + " partitions put " + fullest
                    + " rows in the fullest partition, over limits.rowsPerBatch (" + rowsPerBatch + "): the caps component speaks"
                    + " guest ABI v1 and reads a partition as one batch (the million workload has a dataset of its own)");
        }
        if (o.partitions() > Limits.DEFAULTS.coordinationSlots()) {
            throw new IllegalArgumentException("a call covers at most " + Limits.DEFAULTS.coordinationSlots() + " partitions");
        }
        List<Workload> main = o.workloads().stream().filter(w -> w != Workload.MILLION && w != Workload.LOAD).toList();
        if (!main.isEmpty()) {
            try (Dataset d = Dataset.start(o.workDir().resolve("rows-" + o.rows()), o.rows(), o.partitions(), o.peers(), progress)) {
                describe(d);
                awaitReplicas(d, "the " + String.format(java.util.Locale.ROOT, "%,d", o.rows()) + "-row dataset", true);
                Set<String> shapes = new LinkedHashSet<>();
                for (Workload w : main) {
                    shapes.add(w == Workload.THROUGHPUT ? "groupby" : w.id);
                }
                Set<String> excluded = check(d, shapes, "");
                int most = o.openLoopClients();
                if (main.contains(Workload.THROUGHPUT)) {
                    most = Math.max(most, o.clients().stream().mapToInt(Integer::intValue).max().orElse(1));
                }
                prime(d, shapes, excluded, most);
                for (Workload w : main) {
                    switch (w) {
                        case NEAR_EMPTY, GROUPBY, CAPS -> latency(d, w.id, d.shapes.get(w.id), excluded);
                        case THROUGHPUT -> throughput(d, excluded);
                        default -> throw new IllegalStateException(w.toString());
                    }
                    String table = report.table(w.id);
                    if (!table.isEmpty()) {
                        System.out.print(table);
                        System.out.flush();
                    }
                }
            }
        }
        if (o.workloads().contains(Workload.MILLION)) {
            million();
        }
        if (o.workloads().contains(Workload.LOAD)) {
            load();
        }
        report.tookSeconds = (System.nanoTime() - t0) / 1e9;
        if (loadAtStart >= 0) {
            // other processes on the machine count: a load above the core count means the figures shared the cores
            report.machine.put("load average (1 min)", String.format(java.util.Locale.ROOT, "%.1f at the start, %.1f at the end"
                    + " (every process on the machine)", loadAtStart, Machine.loadAverage()));
        }
        return report;
    }

    private void describe(Dataset d) {
        report.postgres.putAll(d.postgresSettings);
        report.wasmEngine = d.cluster.nodes().get(0).cells().engineName();
        report.wasmOptimizing = d.cluster.nodes().get(0).cells().optimizing();
        report.capsBuckets = d.capsBuckets;
        for (Peer p : d.peers) {
            report.peers.put(p.name(), p.description());
            if (p.name().startsWith("hazelcast")) {
                report.hazelcastVersion = HazelcastCluster.version() + " (com.hazelcast:hazelcast, com.hazelcast:hazelcast-sql from Maven Central)";
            }
        }
        if (d.hazelcastSqlProblem() != null) {
            report.hazelcastSqlProblem = "not measured: " + d.hazelcastSqlProblem();
        }
        report.referencePeer = reference(d).name();
    }

    private static Peer reference(Dataset d) {
        return d.peers.stream().filter(p -> p.name().equals("java")).findFirst().orElse(d.peers.get(0));
    }

    /**
     * Every peer answers every shape once; each answer is compared with the reference peer's.
     *
     * @return {@code "<shape>/<peer>"} of every answer that failed or disagreed
     */
    private Set<String> check(Dataset d, Set<String> shapes, String prefix) throws Exception {
        Set<String> excluded = new HashSet<>();
        Peer ref = reference(d);
        for (String name : shapes) {
            Shape shape = d.shapes.get(name);
            Answer expected = answerOnce(ref, shape);
            progress.say("checking " + prefix + name + ": " + ref.name() + " says " + expected.groups().size() + " groups, "
                    + expected.rows() + " rows");
            for (Peer p : d.peers) {
                String difference;
                Answer a = null;
                try {
                    a = p == ref ? expected : answerOnce(p, shape);
                    difference = a.differenceFrom(expected).orElse(null);
                } catch (Exception e) {
                    difference = "failed: " + e;
                }
                report.checks.add(new Report.Check(prefix + name, p.name(), a == null ? 0 : a.groups().size(),
                        a == null ? 0 : a.rows(), difference));
                if (difference != null) {
                    excluded.add(name + "/" + p.name());
                    progress.say("  " + p.name() + " DISAGREES on " + name + ": " + difference);
                }
            }
        }
        return excluded;
    }

    /** One call's answer; Thresher's first call of a binding may wait for its cell and binding, so it gets retries. */
    private static Answer answerOnce(Peer p, Shape shape) throws Exception {
        long until = System.nanoTime() + 30_000_000_000L;
        try (Peer.Client c = p.open(shape, 0)) {
            while (true) {
                try {
                    return c.answer(c.call());
                } catch (Exception e) {
                    if (!(p instanceof ThresherPeer) || System.nanoTime() > until) {
                        throw e;
                    }
                    Thread.sleep(200);
                }
            }
        }
    }

    /**
     * Calls of each shape from each peer for {@code --prime} seconds from one client, then as long again from
     * {@code clients} clients when that is more: the most any measurement of the dataset uses.
     */
    private void prime(Dataset d, Set<String> shapes, Set<String> excluded, int clients) throws Exception {
        if (o.primeSeconds() <= 0) {
            return;
        }
        Measure.Timing priming = new Measure.Timing(0, o.primeSeconds());
        for (String name : shapes) {
            for (Peer p : d.peers) {
                if (!excluded.contains(name + "/" + p.name())) {
                    Measure.closedLoop("priming " + name, p, d.shapes.get(name), 1, priming, progress, null);
                    if (clients > 1) {
                        Measure.closedLoop("priming " + name, p, d.shapes.get(name), clients, priming, progress, null);
                    }
                }
            }
        }
    }

    private void latency(Dataset d, String workload, Shape shape, Set<String> excluded) throws Exception {
        for (Peer p : d.peers) {
            if (excluded.contains(shape.name() + "/" + p.name())) {
                continue;
            }
            ready(d, p, workload);
            Supplier<ThresherPeer.Counters> counters = counters(p);
            report.results.add(Measure.closedLoop(workload, p, shape, 1, timing, progress, counters));
            if (o.openLoopRate() > 0) {
                report.results.add(Measure.openLoop(workload, p, shape, o.openLoopWorkers(), o.openLoopRate(), timing, progress, counters));
            }
        }
    }

    private void throughput(Dataset d, Set<String> excluded) throws Exception {
        Shape shape = d.shapes.get("groupby");
        for (int clients : o.clients()) {
            for (Peer p : d.peers) {
                if (!excluded.contains(shape.name() + "/" + p.name())) {
                    ready(d, p, "throughput");
                    report.results.add(Measure.closedLoop("throughput", p, shape, clients, timing, progress, counters(p)));
                }
            }
        }
    }

    /** The nodes' counters (call phases, replica reads) of a Thresher peer, taken around each measurement; null for others. */
    private static Supplier<ThresherPeer.Counters> counters(Peer p) {
        return p instanceof ThresherPeer t ? t::counters : null;
    }

    /**
     * Waits until the leader replicas of every Thresher peer that keeps them hold every partition in memory, up to
     * {@value #REPLICA_WAIT_SECONDS} s; then measures anyway, and the report says what was not in memory (the
     * measurement's read counts show what it read through SQL).
     *
     * @param first the wait after the dataset's start: its time goes into the report
     */
    private void awaitReplicas(Dataset d, String what, boolean first) throws InterruptedException {
        for (ThresherPeer t : d.thresherPeers()) {
            if (!t.replicasOn()) {
                continue;
            }
            long t0 = System.nanoTime();
            long until = t0 + REPLICA_WAIT_SECONDS * 1_000_000_000L;
            List<String> missing = t.replicasNotInMemory(d.partitions);
            if (first && !missing.isEmpty()) {
                progress.say("waiting for " + t.name() + "'s leader replicas to hold every partition of " + what + " in memory");
            }
            while (!missing.isEmpty() && System.nanoTime() < until) {
                Thread.sleep(100);
                missing = t.replicasNotInMemory(d.partitions);
            }
            double waited = (System.nanoTime() - t0) / 1e9;
            if (!missing.isEmpty()) {
                String note = t.name() + ", " + what + ": after " + Report.num(Math.round(waited)) + " s, " + missing.size()
                        + " partitions not in memory (" + String.join("; ", missing.subList(0, Math.min(5, missing.size())))
                        + (missing.size() > 5 ? "; …" : "") + "); measured anyway";
                progress.say(note);
                report.replicaNotes.add(note);
            } else if (first) {
                String note = t.name() + ", " + what + ": every partition in memory on every node that keeps it " + (waited < 0.05
                        ? "by the time the peers were set up" : String.format(java.util.Locale.ROOT, "%.1f s after the peers were set up", waited));
                progress.say(note);
                report.replicaNotes.add(note);
            }
        }
    }

    /** Before a Thresher peer with replicas is measured: its replicas hold every partition (normally at once). */
    private void ready(Dataset d, Peer p, String workload) throws InterruptedException {
        if (p instanceof ThresherPeer t && t.replicasOn()) {
            awaitReplicas(d, "before " + workload, false);
        }
    }

    /**
     * The sample group-by over a million rows, on a dataset of its own: about 62,500 rows per partition over
     * 16 partitions, each read as a stream of batches (guest ABI v2's paged input).
     */
    private void million() throws Exception {
        try (Dataset d = Dataset.start(o.workDir().resolve("rows-" + Workload.MILLION_ROWS), Workload.MILLION_ROWS, o.partitions(),
                o.peers(), progress)) {
            awaitReplicas(d, "the million-row dataset", true);
            Set<String> excluded = check(d, Set.of("groupby"), "million/");
            prime(d, Set.of("groupby"), excluded, o.openLoopClients());
            latency(d, "million", d.shapes.get("groupby"), excluded);
        }
    }

    /**
     * One million rows of {@code (bigint, text, double precision)} as CSV, loaded three ways on a dev cluster of
     * its own, each into an empty table of 16 partitions (the last into one plain table): the loader of
     * {@code thresher load}, in-process; {@code COPY ... FROM STDIN} through a node's pgwire with pgjdbc's
     * CopyManager; and PostgreSQL's own {@code COPY} into one table of one shard database, the floor.
     */
    private void load() throws Exception {
        int rows = Workload.MILLION_ROWS;
        StringBuilder csv = new StringBuilder(rows * 24);
        String[] regions = {"north", "south", "east", "west", "centre", "überall"};
        java.util.Random random = new java.util.Random(42);
        for (int i = 1; i <= rows; i++) {
            csv.append(i).append(',').append(regions[random.nextInt(regions.length)]).append(',')
                    .append(random.nextInt(1_000_000) / 100.0).append('\n');
        }
        String data = csv.toString();
        String columns = "id bigint, region text not null, amount double precision not null";
        try (dev.thresher.server.dev.DevCluster cluster = dev.thresher.server.dev.DevCluster.start(new dev.thresher.server.dev.DevCluster.Options(
                o.workDir().resolve("load"), 0, 1_000, 16, 3, 42, Limits.DEFAULTS, false));
             dev.thresher.server.admin.TableAdmin admin = new dev.thresher.server.admin.TableAdmin(cluster.controlUrl(),
                     dev.thresher.server.dev.DevCluster.USER, dev.thresher.server.dev.DevCluster.PASSWORD,
                     new java.io.PrintStream(java.io.PrintStream.nullOutputStream()))) {
            String tenant = dev.thresher.server.dev.DevCluster.TENANT;
            admin.create(tenant, "load_cli", "id", columns, 16, List.of());
            admin.create(tenant, "load_pgwire", "id", columns, 16, List.of());
            progress.say("load: thresher load's loader, 1,000,000 rows");
            long t = System.nanoTime();
            long loaded = new dev.thresher.server.admin.CsvLoader(admin, dev.thresher.server.admin.CsvLoader.Progress.NONE)
                    .load(tenant, "load_cli", new java.io.StringReader(data), false).rows();
            report.loads.add(new Report.Load("`thresher load` (its loader in-process: route by slot, one COPY per shard)",
                    loaded, System.nanoTime() - t));

            progress.say("load: COPY FROM STDIN through pgwire, 1,000,000 rows");
            java.util.Properties props = new java.util.Properties();
            props.setProperty("user", dev.thresher.server.dev.DevCluster.USER);
            props.setProperty("password", dev.thresher.server.dev.DevCluster.PASSWORD);
            props.setProperty("sslmode", "disable"); // as the PostgreSQL loads' connections: no TLS
            try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:postgresql://"
                    + cluster.nodes().get(0).pgwireAddress() + "/thresher", props)) {
                t = System.nanoTime();
                loaded = c.unwrap(org.postgresql.PGConnection.class).getCopyAPI()
                        .copyIn("COPY load_pgwire FROM STDIN (FORMAT csv)", new java.io.StringReader(data));
                report.loads.add(new Report.Load("`COPY load_pgwire FROM STDIN (FORMAT csv)` through a node's pgwire (pgjdbc CopyManager)",
                        loaded, System.nanoTime() - t));
            }

            progress.say("load: PostgreSQL's own COPY into one table, 1,000,000 rows");
            try (java.sql.Connection c = java.sql.DriverManager.getConnection(cluster.shardUrl(1),
                    dev.thresher.server.dev.DevCluster.USER, dev.thresher.server.dev.DevCluster.PASSWORD);
                 java.sql.Statement s = c.createStatement()) {
                s.execute("CREATE TABLE load_plain (" + columns + ", PRIMARY KEY (id))");
                t = System.nanoTime();
                loaded = c.unwrap(org.postgresql.PGConnection.class).getCopyAPI()
                        .copyIn("COPY load_plain FROM STDIN (FORMAT csv)", new java.io.StringReader(data));
                report.loads.add(new Report.Load("PostgreSQL's `COPY ... FROM STDIN` into one plain table (primary key) of one"
                        + " shard database, straight from pgjdbc: the floor", loaded, System.nanoTime() - t));
            }
        }
    }
}
