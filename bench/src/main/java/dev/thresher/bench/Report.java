package dev.thresher.bench;

import dev.thresher.coordinator.CallPhases;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** Everything a run found, and {@code docs/benchmarks.md} made from it. */
final class Report {
    /** One peer's answer to one workload, compared with the reference before measuring. */
    record Check(String workload, String peer, int groups, long rows, String difference) {
        boolean agrees() {
            return difference == null;
        }
    }

    /** One target the project sets, and what this run measured for it. */
    record Target(String text, String measured, Boolean met) {
        String status() {
            return met == null ? "not measured" : met ? "**met**" : "**not met**";
        }
    }

    String command;
    Instant started;
    double tookSeconds;
    Map<String, String> machine = new LinkedHashMap<>();
    Map<String, String> postgres = new LinkedHashMap<>();
    String wasmEngine;
    boolean wasmOptimizing;
    String hazelcastVersion;
    String hazelcastSqlProblem;
    int rows;
    int partitions;
    int shards;
    int capsBuckets;
    List<Integer> clients = List.of();
    double primeSeconds;
    double warmupSeconds;
    double durationSeconds;
    double openLoopRate;
    int openLoopWorkers;
    String referencePeer;
    final Map<String, String> peers = new LinkedHashMap<>();
    final List<String> workloads = new ArrayList<>();
    final List<Check> checks = new ArrayList<>();
    final List<Result> results = new ArrayList<>();
    /** The load workload's three loads, in the order they ran. */
    final List<Load> loads = new ArrayList<>();

    /** One load of the load workload: what loaded, how many rows, how long it took. */
    record Load(String what, long rows, long nanos) {
    }
    final List<String> notRun = new ArrayList<>();
    /** What the waits for the leader replicas found: how long until every partition was in memory, or what was not. */
    final List<String> replicaNotes = new ArrayList<>();

    boolean allAgree() {
        return checks.stream().allMatch(Check::agrees);
    }

    Optional<Result> find(String workload, String peer, Result.Mode mode, int clients) {
        return results.stream().filter(r -> r.workload().equals(workload) && r.peer().equals(peer) && r.mode() == mode
                && r.clients() == clients).findFirst();
    }

    List<Target> targets() {
        List<Target> t = new ArrayList<>();
        Optional<Result> empty = find("near-empty", "thresher", Result.Mode.CLOSED, 1);
        t.add(new Target("Thresher near-empty call, p50 ≤ 3 ms (closed loop, 1 client)",
                empty.map(r -> ms(r.ms(50)) + " ms").orElse("—"), empty.map(r -> r.errors() == 0 && r.ms(50) <= 3).orElse(null)));
        t.add(new Target("Thresher near-empty call, p99 ≤ 15 ms (closed loop, 1 client)",
                empty.map(r -> ms(r.ms(99)) + " ms").orElse("—"), empty.map(r -> r.errors() == 0 && r.ms(99) <= 15).orElse(null)));
        Optional<Result> gt = find("groupby", "thresher", Result.Mode.CLOSED, 1);
        Optional<Result> gf = find("groupby", "pg-fanout", Result.Mode.CLOSED, 1);
        t.add(new Target("Thresher sample group-by p50 ≤ 2 × native fan-out p50 (closed loop, 1 client)",
                gt.isPresent() && gf.isPresent() ? ms(gt.get().ms(50)) + " ms vs " + ms(gf.get().ms(50)) + " ms = "
                        + ratio(gt.get().ms(50) / gf.get().ms(50)) + " ×" : "—",
                gt.isPresent() && gf.isPresent() ? gt.get().errors() == 0 && gt.get().ms(50) <= 2 * gf.get().ms(50) : null));
        Optional<Result> tt = find("throughput", "thresher", Result.Mode.CLOSED, 8);
        Optional<Result> tf = find("throughput", "pg-fanout", Result.Mode.CLOSED, 8);
        Optional<Result> th = find("throughput", "hazelcast-agg", Result.Mode.CLOSED, 8);
        t.add(new Target("Thresher throughput at 8 clients ≥ 40 % of native fan-out's queries/s",
                tt.isPresent() && tf.isPresent() ? rate(tt.get().callsPerSecond()) + " vs " + rate(tf.get().callsPerSecond())
                        + " calls/s = " + percent(tt.get().callsPerSecond() / tf.get().callsPerSecond()) : "—",
                tt.isPresent() && tf.isPresent() ? tt.get().errors() == 0 && tt.get().callsPerSecond() >= 0.4 * tf.get().callsPerSecond() : null));
        t.add(new Target("Thresher throughput at 8 clients ≥ 2 × the Hazelcast cluster's aggregation throughput",
                tt.isPresent() && th.isPresent() ? rate(tt.get().callsPerSecond()) + " vs " + rate(th.get().callsPerSecond())
                        + " calls/s = " + ratio(tt.get().callsPerSecond() / th.get().callsPerSecond()) + " ×" : "—",
                tt.isPresent() && th.isPresent() ? tt.get().errors() == 0 && tt.get().callsPerSecond() >= 2 * th.get().callsPerSecond() : null));
        t.addAll(replicaTargets());
        return t;
    }

    /**
     * The targets of the leader replicas work, for {@code thresher} and for {@code thresher-sql} (the same without
     * replicas) side by side: group-by and million p50 at most the native fan-out's, throughput at 8 clients at least
     * its. Each measured figure carries where its partition reads were served.
     */
    List<Target> replicaTargets() {
        List<Target> t = new ArrayList<>();
        for (String peer : List.of(ThresherPeer.NAME, ThresherPeer.SQL_NAME)) {
            t.add(p50AgainstFanout(peer, "groupby", String.format(Locale.ROOT, "group-by (%,d rows, %d partitions)", rows, partitions)));
            t.add(p50AgainstFanout(peer, "million", String.format(Locale.ROOT, "million (%,d rows, %d partitions)",
                    Workload.MILLION_ROWS, partitions)));
            Optional<Result> tt = find("throughput", peer, Result.Mode.CLOSED, 8);
            Optional<Result> tf = find("throughput", "pg-fanout", Result.Mode.CLOSED, 8);
            t.add(new Target("`" + peer + "` throughput at 8 clients ≥ 1.0 × native fan-out's queries/s",
                    tt.isPresent() && tf.isPresent() ? rate(tt.get().callsPerSecond()) + " vs " + rate(tf.get().callsPerSecond())
                            + " calls/s = " + ratio(tt.get().callsPerSecond() / tf.get().callsPerSecond()) + " ×; reads "
                            + readsCell(tt.get()) : "—",
                    tt.isPresent() && tf.isPresent() ? tt.get().errors() == 0 && tt.get().callsPerSecond() >= tf.get().callsPerSecond() : null));
        }
        return t;
    }

    private Target p50AgainstFanout(String peer, String workload, String what) {
        Optional<Result> r = find(workload, peer, Result.Mode.CLOSED, 1);
        Optional<Result> f = find(workload, "pg-fanout", Result.Mode.CLOSED, 1);
        boolean both = r.isPresent() && f.isPresent();
        return new Target("`" + peer + "` " + what + " p50 ≤ 1.0 × native fan-out p50 (closed loop, 1 client)",
                both ? ms(r.get().ms(50)) + " ms vs " + ms(f.get().ms(50)) + " ms = " + ratio(r.get().ms(50) / f.get().ms(50))
                        + " ×; reads " + readsCell(r.get()) : "—",
                both ? r.get().errors() == 0 && r.get().ms(50) <= f.get().ms(50) : null);
    }

    /**
     * Where a Thresher measurement's partition reads were served, over the measured part: every call published reads
     * each of the {@link #partitions} partitions once; those the leader replicas served from memory are counted by
     * them, and the rest went through SQL — sent there by the replica for a reason it counts, or never offered to it
     * (replicas off), or not counted by them at all (shown as "uncounted").
     */
    String readsCell(Result r) {
        if (r.reads() == null || r.phases() == null) {
            return "—";
        }
        long total = r.phases().calls() * partitions;
        long memory = r.reads().memory();
        // the replicas' counters also count the reads of calls in flight at the measurement's edges, and of calls
        // that did not publish: what they sent through SQL is never shown as less than they counted
        long sql = Math.max(r.reads().sql(), total - memory);
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%,d from memory, %,d through SQL", memory, sql));
        List<String> why = new ArrayList<>();
        r.reads().sqlByReason().forEach((reason, n) -> why.add(String.format(Locale.ROOT, "%,d %s", n, reason)));
        long uncounted = Math.max(0, sql - r.reads().sql());
        if (uncounted > 0) {
            why.add(String.format(Locale.ROOT, "%,d %s", uncounted, r.reads().replicasOn() ? "uncounted" : "replicas off"));
        }
        if (sql > 0 && !why.isEmpty()) {
            b.append(" (").append(String.join(", ", why)).append(')');
        }
        return b.toString();
    }

    /**
     * {@code thresher} against {@code thresher-sql} against {@code pg-fanout}: latency of near-empty, groupby and
     * million, throughput at each client count, where each Thresher measurement's reads were served, and the
     * replicas targets. Empty when neither Thresher peer was measured.
     */
    String replicaSection() {
        List<String> peers = List.of(ThresherPeer.NAME, ThresherPeer.SQL_NAME, "pg-fanout");
        if (results.stream().noneMatch(r -> r.peer().equals(ThresherPeer.NAME) || r.peer().equals(ThresherPeer.SQL_NAME))) {
            return "";
        }
        StringBuilder b = new StringBuilder("## Leader replicas: in memory against read-through-SQL\n\n");
        b.append("`thresher` keeps every partition of the shard databases a node is a candidate for in memory (leader replicas,"
                + " docs/architecture.md) and serves a partition read from memory once the replica has applied the shard database's"
                + " WAL position taken at the shard run's start; `thresher-sql` is the same cluster with `limits.replicaMemoryBytes=0`:"
                + " every partition read through SQL, the path before replicas. Both run in this JVM on dev clusters of their own"
                + " (each its own embedded PostgreSQL servers, same settings, same rows, the control database in a server apart from"
                + " the shard databases'); `pg-fanout` runs on `thresher`'s shard databases."
                + " Closed loop; latency in ms; ratios are each peer's figure ÷ `pg-fanout`'s.\n\n");
        for (String n : replicaNotes) {
            b.append("- Replicas: ").append(n).append('\n');
        }
        if (!replicaNotes.isEmpty()) {
            b.append('\n');
        }
        b.append("| workload | figure | `thresher` | `thresher-sql` | `pg-fanout` | `thresher` ÷ `pg-fanout` | `thresher-sql` ÷ `pg-fanout` |\n");
        b.append("|---|---|---:|---:|---:|---:|---:|\n");
        for (String w : List.of("near-empty", "groupby", "million")) {
            for (double pct : new double[] {50, 99}) {
                List<Double> v = peers.stream().map(p -> find(w, p, Result.Mode.CLOSED, 1).map(r -> r.ms(pct)).orElse(Double.NaN)).toList();
                if (v.stream().allMatch(x -> x.isNaN())) {
                    continue;
                }
                b.append("| ").append(w).append(" | p").append(num(pct)).append(" ms, 1 client |");
                v.forEach(x -> b.append(' ').append(ms(x)).append(" |"));
                b.append(' ').append(ratio(v.get(0) / v.get(2))).append(" | ").append(ratio(v.get(1) / v.get(2))).append(" |\n");
            }
        }
        for (int c : clients) {
            List<Double> v = peers.stream().map(p -> find("throughput", p, Result.Mode.CLOSED, c).map(Result::callsPerSecond)
                    .orElse(Double.NaN)).toList();
            if (v.stream().allMatch(x -> x.isNaN())) {
                continue;
            }
            b.append("| throughput | calls/s, ").append(c).append(c == 1 ? " client |" : " clients |");
            v.forEach(x -> b.append(' ').append(x.isNaN() ? "—" : rate(x)).append(" |"));
            b.append(' ').append(ratio(v.get(0) / v.get(2))).append(" | ").append(ratio(v.get(1) / v.get(2))).append(" |\n");
        }
        b.append("\nPartition reads over each measurement (warm-up excluded), summed over the nodes: served from memory as the"
                + " replicas count them (`thresher_replica_reads_total{served=\"memory\"}`), and through SQL: by the replica's reason,"
                + " *uncounted* (not offered to the replica), or *replicas off*. A call reads each of its ").append(partitions)
                .append(" partitions once, so reads = calls × ").append(partitions).append(".\n\n");
        b.append("| workload | peer | mode | clients | calls timed | partition reads | where served |\n|---|---|---|---:|---:|---:|---|\n");
        for (Result r : results) {
            if (r.reads() == null || r.phases() == null) {
                continue;
            }
            String mode = r.mode() == Result.Mode.OPEN ? "open " + Measure.fmtRate(r.targetRate()) + "/s" : "closed";
            b.append(String.format(Locale.ROOT, "| %s | `%s` | %s | %d | %,d | %,d | %s |%n", r.workload(), r.peer(), mode, r.clients(),
                    r.phases().calls(), r.phases().calls() * partitions, readsCell(r)));
        }
        b.append("\n| target (leader replicas) | measured | |\n|---|---|---|\n");
        for (Target t : replicaTargets()) {
            b.append("| ").append(t.text()).append(" | ").append(t.measured()).append(" | ").append(t.status()).append(" |\n");
        }
        return b.append('\n').toString();
    }

    /**
     * The same targets held against {@code pg-rows}, which only reads the selected rows out of PostgreSQL: a target
     * that {@code pg-rows} itself misses cannot be met by any design that reads a call's rows from the database.
     */
    String floorTable() {
        Optional<Result> gf = find("groupby", "pg-fanout", Result.Mode.CLOSED, 1);
        Optional<Result> gr = find("groupby", "pg-rows", Result.Mode.CLOSED, 1);
        Optional<Result> tf = find("throughput", "pg-fanout", Result.Mode.CLOSED, 8);
        Optional<Result> tr = find("throughput", "pg-rows", Result.Mode.CLOSED, 8);
        Optional<Result> th = find("throughput", "hazelcast-agg", Result.Mode.CLOSED, 8);
        if (gr.isEmpty() && tr.isEmpty()) {
            return "";
        }
        StringBuilder b = new StringBuilder("### The row-read floor\n\n`pg-rows` does nothing but read the selected rows out of the"
                + " shard databases and group them in Java. A target `pg-rows` misses is out of reach of any design that reads a call's"
                + " rows from PostgreSQL; Thresher's share of the gap is the rest.\n\n| held against `pg-rows` | measured |\n|---|---|\n");
        if (gr.isPresent() && gf.isPresent()) {
            b.append("| group-by p50, `pg-rows` ÷ native fan-out (target for Thresher ≤ 2) | ").append(ms(gr.get().ms(50))).append(" ms vs ")
                    .append(ms(gf.get().ms(50))).append(" ms = ").append(ratio(gr.get().ms(50) / gf.get().ms(50))).append(" × |\n");
        }
        if (tr.isPresent() && tf.isPresent()) {
            b.append("| throughput at 8 clients, `pg-rows` as a share of native fan-out (target for Thresher ≥ 40 %) | ")
                    .append(rate(tr.get().callsPerSecond())).append(" vs ").append(rate(tf.get().callsPerSecond())).append(" calls/s = ")
                    .append(percent(tr.get().callsPerSecond() / tf.get().callsPerSecond())).append(" |\n");
        }
        if (tr.isPresent() && th.isPresent()) {
            b.append("| throughput at 8 clients, `pg-rows` ÷ Hazelcast aggregation (target for Thresher ≥ 2) | ")
                    .append(rate(tr.get().callsPerSecond())).append(" vs ").append(rate(th.get().callsPerSecond())).append(" calls/s = ")
                    .append(ratio(tr.get().callsPerSecond() / th.get().callsPerSecond())).append(" × |\n");
        }
        return b.append('\n').toString();
    }

    /**
     * The report as docs/benchmarks.md holds it: how it was run, the machine, what runs, the guarantees each figure
     * carries, the answers checked, the targets, then the measurements, the loads and what did not run.
     */
    String markdown() {
        return header() + machineSection() + whatRuns() + guarantees() + answersChecked() + targetsSection() + floorTable()
                + replicaSection() + tables() + phaseTable() + loadSection() + notRunSection();
    }

    /** The title, and how this run was made: the command, when, the priming and each measurement's timing. */
    private String header() {
        StringBuilder b = new StringBuilder();
        b.append("# Benchmarks\n\n");
        b.append("Written by `./thresher bench` (module [`bench`](../bench/README.md)); every run overwrites this file, so do not edit it\n"
                + "by hand. Rerun it on your machine to compare: the figures below are this one run's, on the machine described.\n\n");
        b.append("- **Command:** `").append(command).append("`\n");
        b.append("- **Run:** ").append(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'").format(started.atOffset(ZoneOffset.UTC)))
                .append(String.format(Locale.ROOT, ", %.1f minutes in all, in one JVM%n", tookSeconds / 60));
        b.append(String.format(Locale.ROOT, "- **Priming:** %s%n",
                primeSeconds > 0 ? "before anything is measured, each peer makes calls of each workload for " + num(primeSeconds)
                        + " s from one client, then as long from as many clients as any of its measurements uses, so that JIT"
                        + " compilation (the JVM's, and GraalWasm's for the guests) is done first"
                        : "none (`--prime 0`): early measurements include JIT compilation"));
        b.append(String.format(Locale.ROOT, "- **Each measurement:** %s s of warm-up (and at least %d calls per client), then %s s measured."
                        + " The latency workloads run closed loop with 1 client%s; the throughput workload closed loop with %s clients%n%n",
                num(warmupSeconds), Measure.MIN_WARMUP_CALLS, num(durationSeconds),
                openLoopRate > 0 ? ", then open loop at " + Measure.fmtRate(openLoopRate) + " calls/s over " + openLoopWorkers + " workers" : "",
                String.join(", ", clients.stream().map(String::valueOf).toList())));
        return b.toString();
    }

    /** The machine the run was on, PostgreSQL's and the WebAssembly engine's versions among it. */
    private String machineSection() {
        StringBuilder b = new StringBuilder();
        b.append("## Machine\n\n| | |\n|---|---|\n");
        machine.forEach((k, v) -> b.append("| ").append(k).append(" | ").append(v.replace("|", "\\|")).append(" |\n"));
        boolean sqlPeer = peers.containsKey(ThresherPeer.SQL_NAME);
        b.append("| PostgreSQL | ").append(postgres.getOrDefault("server_version", "?"))
                .append(" (embedded: one server for the shard and single databases, one for the control database, apart as"
                        + " docs/deployment.md advises for production")
                .append(sqlPeer ? "; `thresher-sql`'s dev cluster has two more, started the same way" : "").append(") |\n");
        b.append("| WebAssembly | GraalWasm, engine \"").append(wasmEngine).append("\"")
                .append(wasmOptimizing ? " (optimizing runtime)" : " (**interpreter only**: figures are not representative)").append(" |\n");
        if (hazelcastVersion != null) {
            b.append("| Hazelcast | ").append(hazelcastVersion).append(" |\n");
        }
        b.append('\n');
        return b.toString();
    }

    /** The rows, the peers and the workloads, and what closed and open loop mean. */
    private String whatRuns() {
        StringBuilder b = new StringBuilder();
        boolean sqlPeer = peers.containsKey(ThresherPeer.SQL_NAME);
        b.append("## What runs\n\n");
        b.append(String.format(Locale.ROOT, "%,d `orders` rows (`order_id bigint`, `region text`, one of 8, `amount float8`), generated by"
                + " `DevCluster` (seed 42) into %d partitions over %d shard databases. The rows are read back from the shard databases"
                + " to fill every other peer, so all peers hold the same rows. Everything — PostgreSQL aside, which runs as its own"
                + " processes — shares one JVM and the machine's cores; while one peer is measured the others are idle.%s%n%n",
                rows, partitions, shards, sqlPeer ? " `thresher-sql` runs on a second dev cluster generated the same way (same seed,"
                        + " so the same rows in the same partitions) whose nodes keep no leader replicas; its PostgreSQL idles while"
                        + " the others are measured." : ""));
        b.append("| peer | one call |\n|---|---|\n");
        peers.forEach((k, v) -> b.append("| `").append(k).append("` | ").append(v).append(" |\n"));
        b.append("\n| workload | what one call computes |\n|---|---|\n");
        b.append("| near-empty | the sample component under binding `").append(Shape.NEAR_EMPTY_BINDING).append("`, selector `")
                .append(Shape.NEAR_EMPTY_SELECTOR).append("`: every partition runs, no row matches; natively `... WHERE amount < 0 GROUP BY region` |\n");
        b.append("| groupby | the sample binding `revenue_by_region`: sum and count per region; natively `SELECT region, sum(amount), count(*) FROM orders GROUP BY region` |\n");
        b.append(String.format(Locale.ROOT, "| caps | guest `caps_by_bucket` (bench module), selector `%s`: sum and count per `order_id %% %d`; each shard run"
                        + " emits %d partials (cap 64), the call merges %d (cap 1,024); natively `... GROUP BY order_id %% %d` |%n",
                Shape.CAPS_SELECTOR, capsBuckets, 2 * capsBuckets, 2 * capsBuckets * partitions, capsBuckets));
        b.append("| throughput | the groupby call from 1..n closed-loop clients at once |\n");
        b.append("| million | the groupby call over 1,000,000 rows in 16 partitions (about 62,500 rows each, read as a stream of"
                + " batches of at most 4,096), a dataset of its own |\n");
        b.append("| load | one million rows loaded three ways (see [load](#load)) |\n\n");
        b.append("**Closed loop**: each client calls again as soon as it has its answer; latency from each call's start. **Open loop**:"
                + " calls arrive at a fixed rate whatever the answers do; a free worker takes the next arrival at its time and latency"
                + " runs from the arrival's *intended* start, so waiting behind a slow call counts (coordinated omission corrected)."
                + " Latencies are client-side, in milliseconds, from HdrHistogram (3 significant digits).\n\n");
        return b.toString();
    }

    /** What each peer guarantees of the answers it is measured giving. */
    private String guarantees() {
        StringBuilder b = new StringBuilder();
        boolean sqlPeer = peers.containsKey(ThresherPeer.SQL_NAME);
        b.append("## Guarantees each figure carries\n\n");
        b.append(String.format(Locale.ROOT, "- **PostgreSQL** (read with `SHOW` from the shard databases' embedded server; the control database's has the same): `fsync = %s`, `synchronous_commit = %s`,"
                        + " `full_page_writes = %s` (as `DevCluster` configures it). Commits return before any flush; nothing written"
                        + " survives an OS crash. This holds for Thresher's coordination writes below.%n",
                postgres.get("fsync"), postgres.get("synchronous_commit"), postgres.get("full_page_writes")));
        b.append("- **thresher**: the coordination journal is on, as always: every call inserts its invocation, every partition's leader"
                + " journals its outcome and publishes its slot under its lease, the coordinator takes the reduce lease, validates every"
                + " slot, journals the reduce and publishes the result once, all in the control database. The result is published"
                + " exactly once and a redelivered shard run replays its journal entry. Each partition is read at its leader, from"
                + " its leader replica once that has applied the shard database's WAL position taken at the shard run's start (every"
                + " transaction committed before the run started is in it), else through SQL in its own snapshot.\n");
        if (sqlPeer) {
            b.append("- **thresher-sql**: as thresher, every partition read through SQL in its own snapshot at its leader.\n");
        }
        b.append("- **pg-fanout**: read-only; one snapshot per shard database (three independent snapshots), nothing recorded.\n");
        b.append("- **pg-rows**: read-only; one snapshot per shard database, nothing recorded; every selected row leaves the database.\n");
        b.append("- **pg-single**: read-only; one snapshot of all rows, nothing recorded.\n");
        b.append("- **hazelcast-agg / hazelcast-sql**: in memory only, one synchronous backup per partition (the default), no persistence;"
                + " a query reads the partitions as they are, with no snapshot across them. Nothing recorded.\n");
        b.append("- **java**: nothing; one thread's loop over arrays.\n\n");
        return b.toString();
    }

    /** Every peer's answer to every workload, compared with the reference peer's before anything is measured. */
    private String answersChecked() {
        StringBuilder b = new StringBuilder();
        b.append("## Answers checked\n\n");
        b.append("Before any measurement every peer answered every workload once and was compared with `").append(referencePeer)
                .append("`: the same groups, the same counts, sums equal to 1e-9 relative. A peer that disagrees is not measured on that workload.\n\n");
        b.append("| workload | peer | groups | rows counted | agrees |\n|---|---|---:|---:|---|\n");
        for (Check c : checks) {
            b.append(String.format(Locale.ROOT, "| %s | `%s` | %d | %,d | %s |%n", c.workload(), c.peer(), c.groups(), c.rows(),
                    c.agrees() ? "yes" : "**no**: " + c.difference()));
        }
        b.append('\n');
        return b.toString();
    }

    /** The targets and whether this run met them. */
    private String targetsSection() {
        StringBuilder b = new StringBuilder();
        b.append("## Targets\n\n| target | measured | |\n|---|---|---|\n");
        for (Target t : targets()) {
            b.append("| ").append(t.text()).append(" | ").append(t.measured()).append(" | ").append(t.status()).append(" |\n");
        }
        b.append("\nWhat bounds the targets not met, with the profiles that show it, and the partition read measured "
                + "by itself: [performance.md](performance.md) (written by hand, not by this command).\n\n");
        return b.toString();
    }

    /** The loads, when any ran; empty otherwise. */
    private String loadSection() {
        StringBuilder b = new StringBuilder();
        if (!loads.isEmpty()) {
            b.append("## load\n\n");
            b.append("One million CSV rows (`id bigint, region text not null, amount double precision not null`, 24 bytes a row)"
                    + " loaded into an empty table of 16 partitions over the 3 shard databases of a dev cluster of its own, each row"
                    + " routed by its key's slot; the last row is the floor, PostgreSQL loading the same data into one table. Each"
                    + " load runs once, cold.\n\n| load | rows | seconds | rows/s |\n|---|---:|---:|---:|\n");
            for (Load l : loads) {
                b.append(String.format(Locale.ROOT, "| %s | %,d | %.2f | %,.0f |%n", l.what(), l.rows(), l.nanos() / 1e9,
                        l.rows() / (l.nanos() / 1e9)));
            }
            b.append('\n');
        }
        return b.toString();
    }

    /** What was asked for and did not run. */
    private String notRunSection() {
        StringBuilder b = new StringBuilder();
        b.append("## Not run\n\n");
        if (notRun.isEmpty()) {
            b.append("Nothing: every workload asked for ran.\n");
        }
        for (String n : notRun) {
            b.append("- ").append(n).append('\n');
        }
        if (hazelcastSqlProblem != null) {
            b.append("- hazelcast-sql: ").append(hazelcastSqlProblem).append('\n');
        }
        return b.toString();
    }
    /** The workload tables, as printed to stdout and written to the report. */
    String tables() {
        StringBuilder b = new StringBuilder();
        for (String w : workloads) {
            b.append(table(w));
        }
        return b.toString();
    }

    /** One workload's table; empty when nothing was measured for it. */
    String table(String w) {
        StringBuilder b = new StringBuilder();
        List<Result> rs = results.stream().filter(r -> r.workload().equals(w)).toList();
        if (!rs.isEmpty()) {
            b.append("## ").append(w).append("\n\n");
            if (w.equals("throughput")) {
                b.append("Calls per second, closed loop:\n\n| peer |");
                List<Integer> cs = rs.stream().map(Result::clients).distinct().sorted().toList();
                for (int c : cs) {
                    b.append(' ').append(c).append(c == 1 ? " client |" : " clients |");
                }
                b.append("\n|---|");
                b.append("---:|".repeat(cs.size()));
                b.append('\n');
                for (String p : rs.stream().map(Result::peer).distinct().toList()) {
                    b.append("| `").append(p).append("` |");
                    for (int c : cs) {
                        b.append(' ').append(find(w, p, Result.Mode.CLOSED, c).map(r -> rate(r.callsPerSecond())
                                + (r.errors() > 0 ? " (" + r.errors() + " errors)" : "")).orElse("—")).append(" |");
                    }
                    b.append('\n');
                }
                b.append('\n');
            }
            b.append("| peer | mode | clients | calls | calls/s | p50 ms | p99 ms | p99.9 ms | max ms | p50 ÷ thresher's | errors"
                    + " | partition reads |\n");
            b.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
            for (Result r : rs) {
                Optional<Result> t = find(w, "thresher", r.mode(), r.clients());
                String vs = t.isPresent() && t.get().latency().getTotalCount() > 0 ? ratio(r.ms(50) / t.get().ms(50)) : "—";
                String mode = r.mode() == Result.Mode.OPEN ? "open " + Measure.fmtRate(r.targetRate()) + "/s" : "closed";
                String errors = (r.errors() == 0 ? "0" : r.errors() + ": " + abbreviate(r.firstError()))
                        + (r.saturated() ? "; saturated: " + r.unserved() + " arrivals never started (latency a lower bound)"
                        : r.mode() == Result.Mode.OPEN && r.maxLagNanos() > 1e9 / r.targetRate()
                        ? "; arrivals queued up to " + ms(r.maxLagNanos() / 1e6) + " ms for a free worker" : "");
                b.append(String.format(Locale.ROOT, "| `%s` | %s | %d | %,d | %s | %s | %s | %s | %s | %s | %s | %s |%n", r.peer(), mode,
                        r.clients(), r.calls(), rate(r.callsPerSecond()), ms(r.ms(50)), ms(r.ms(99)), ms(r.ms(99.9)), ms(r.maxMs()), vs,
                        errors, readsCell(r)));
            }
            b.append('\n');
        }
        return b.toString();
    }

    String phaseTable() {
        List<Result> rs = results.stream().filter(r -> r.phases() != null).toList();
        if (rs.isEmpty()) {
            return "";
        }
        StringBuilder b = new StringBuilder("## Thresher: where a call's time goes\n\n");
        b.append("From the nodes' own timers (`Coordinator.phases()`, class `CallPhases`): a snapshot on every node before and after"
                + " each measurement, the difference summed over the nodes, divided by the calls that published a result. Mean"
                + " microseconds per call. DISPATCH runs from the first shard request sent to the last reply, so it contains the"
                + " leaders' READ, GUEST and PUBLISH, which are summed over the call's partitions (they overlap in time). A phase"
                + " whose timer is not wired in yet reads 0.\n\n");
        b.append("| workload | peer | mode | clients | calls timed |");
        for (CallPhases.Phase p : CallPhases.Phase.values()) {
            b.append(' ').append(p).append(" |");
        }
        b.append(" PLAN+DISPATCH+VALIDATE+REDUCE+RESULT | client-side mean |\n|---|---|---|---:|---:|");
        b.append("---:|".repeat(CallPhases.Phase.values().length + 2));
        b.append('\n');
        for (Result r : rs) {
            CallPhases.Snapshot s = r.phases();
            b.append(String.format(Locale.ROOT, "| %s | `%s` | %s | %d | %,d |", r.workload(), r.peer(),
                    r.mode() == Result.Mode.OPEN ? "open " + Measure.fmtRate(r.targetRate()) + "/s" : "closed", r.clients(), s.calls()));
            for (CallPhases.Phase p : CallPhases.Phase.values()) {
                b.append(' ').append(us(s.meanMicros(p))).append(" |");
            }
            double path = s.meanMicros(CallPhases.Phase.PLAN) + s.meanMicros(CallPhases.Phase.DISPATCH)
                    + s.meanMicros(CallPhases.Phase.VALIDATE) + s.meanMicros(CallPhases.Phase.REDUCE) + s.meanMicros(CallPhases.Phase.RESULT);
            b.append(' ').append(us(path)).append(" | ").append(us(r.meanMs() * 1000)).append(" |\n");
        }
        b.append('\n');
        return b.toString();
    }

    static String ms(double v) {
        if (Double.isNaN(v)) {
            return "—";
        }
        return v < 10 ? String.format(Locale.ROOT, "%.2f", v) : v < 100 ? String.format(Locale.ROOT, "%.1f", v)
                : String.format(Locale.ROOT, "%.0f", v);
    }

    static String us(double v) {
        return Double.isNaN(v) ? "—" : String.format(Locale.ROOT, "%,.0f", v);
    }

    static String rate(double v) {
        return v >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.1f", v);
    }

    static String ratio(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "—" : v >= 10 ? String.format(Locale.ROOT, "%.0f", v)
                : String.format(Locale.ROOT, "%.2f", v);
    }

    static String percent(double v) {
        return String.format(Locale.ROOT, "%.0f %%", v * 100);
    }

    static String num(double v) {
        return v == Math.rint(v) ? String.valueOf((long) v) : String.valueOf(v);
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "";
        }
        String one = s.replace('\n', ' ').replace("|", "\\|");
        return one.length() > 160 ? one.substring(0, 160) + "…" : one;
    }
}
