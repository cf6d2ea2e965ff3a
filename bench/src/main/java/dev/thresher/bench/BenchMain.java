package dev.thresher.bench;

import ch.qos.logback.classic.Level;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ./thresher bench}: the command line of the bench. */
@Command(name = "thresher bench", mixinStandardHelpOptions = true, version = "thresher bench 0.1.0", sortOptions = false,
        description = "Measures Thresher (with its leader replicas, and without: thresher-sql) against PostgreSQL's own GROUP BY"
                + " (fanned out over the shard databases, and on one database), an embedded 3-member Hazelcast cluster and a plain"
                + " Java loop, in one process on the same rows, and writes the report (default docs/benchmarks.md). Progress goes"
                + " to stderr, the tables to stdout.")
public final class BenchMain implements Callable<Integer> {
    @Option(names = "--rows", defaultValue = "50000", description = "Sample orders (default ${DEFAULT-VALUE}).")
    int rows;

    @Option(names = "--partitions", defaultValue = "16", description = "Partitions of the orders table (default ${DEFAULT-VALUE}).")
    int partitions;

    @Option(names = "--clients", split = ",", description = "Client counts of the throughput workload (default 1,4,8,16).")
    List<Integer> clients;

    @Option(names = "--duration", description = "Measured time of each measurement, e.g. 10s, 500ms (default 10s; 2s with --quick).")
    String duration;

    @Option(names = "--prime", description = "Once per peer and workload before any measurement, calls for this long from one"
            + " client, then as long from the most clients its measurements use, so that JIT compilation (the JVM's,"
            + " GraalWasm's) is done first; 0 for none (default 10s; 3s with --quick).")
    String prime;

    @Option(names = "--warmup", description = "Warm-up before each measurement (default 3s; 1s with --quick).")
    String warmup;

    @Option(names = "--open-loop-rate", description = "Arrivals per second of the open-loop measurements; 0 for none (default 50; 20 with --quick).")
    Double openLoopRate;

    @Option(names = "--open-loop-workers", description = "Clients that take the open-loop arrivals (default: the largest of --clients).")
    Integer openLoopWorkers;

    @Option(names = "--workloads", split = ",", description = "Among near-empty, groupby, caps, throughput, million, load (default all).")
    List<String> workloads;

    @Option(names = "--peers", split = ",",
            description = "Among thresher, thresher-sql (the same with limits.replicaMemoryBytes=0, on a dev cluster of its own),"
                    + " pg-fanout, pg-rows, pg-single, hazelcast-agg, hazelcast-sql, java (default all).")
    List<String> peers;

    @Option(names = "--out", defaultValue = "docs/benchmarks.md",
            description = "The report (default ${DEFAULT-VALUE}, relative to the repository under ./thresher bench); overwritten.")
    Path out;

    @Option(names = "--work-dir", description = "Where PostgreSQL's data goes (default bench/target/bench-work under ./thresher bench,"
            + " else a temporary directory, deleted at the end).")
    Path workDir;

    @Option(names = "--quick", description = "A short run: 2 s per measurement, 1 s warm-up, 3 s priming, open loop at 20/s (unless set otherwise).")
    boolean quick;

    private final String[] args;

    BenchMain(String[] args) {
        this.args = args.clone();
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the bench with these arguments; returns the exit code (0: done and every answer agreed). */
    static int run(String... args) {
        quietLogs();
        return new CommandLine(new BenchMain(args))
                .setExecutionExceptionHandler((e, cmd, parsed) -> {
                    if (e instanceof IllegalArgumentException) {
                        cmd.getErr().println("thresher bench: " + e.getMessage());
                        return 2;
                    }
                    throw e;
                })
                .execute(args);
    }

    /** Hazelcast's members, client and Jet log a great deal at INFO; the bench keeps their warnings only. */
    static void quietLogs() {
        setLevel("com.hazelcast", Level.WARN);
        // It asks for --add-opens flags; the bench runs Hazelcast with the nodes' JVM flags, as the report says.
        setLevel("com.hazelcast.instance.impl.HazelcastInstanceFactory", Level.ERROR);
    }

    static void setLevel(String logger, Level level) {
        if (LoggerFactory.getILoggerFactory() instanceof ch.qos.logback.classic.LoggerContext ctx) {
            ctx.getLogger(logger).setLevel(level);
        }
    }

    @Override
    public Integer call() throws Exception {
        Bench.Options o = options();
        Path report = resolve(out);
        boolean tempWork = workDir == null && System.getenv("THRESHER_REPO") == null;
        try (Progress progress = new Progress(System.err)) {
            progress.say("thresher bench: " + o.rows() + " rows, " + o.partitions() + " partitions, workloads "
                    + o.workloads().stream().map(w -> w.id).toList() + ", peers " + o.peers() + ", "
                    + Report.num(o.warmupSeconds()) + " s warm-up + " + Report.num(o.durationSeconds()) + " s per measurement");
            Report r;
            try {
                r = new Bench(o, progress).run();
            } finally {
                if (tempWork) {
                    deleteTree(o.workDir());
                }
            }
            String md = r.markdown();
            Files.createDirectories(report.toAbsolutePath().getParent());
            Files.writeString(report, md);
            System.out.println();
            System.out.print(md.substring(md.indexOf("## Answers checked")));
            progress.say("wrote " + report);
            return r.allAgree() ? 0 : 1;
        }
    }

    Bench.Options options() throws IOException {
        double d = seconds(duration, quick ? 2 : 10, "--duration");
        double w = seconds(warmup, quick ? 1 : 3, "--warmup");
        double pr = seconds(prime, quick ? 3 : 10, "--prime");
        double rate = openLoopRate != null ? openLoopRate : quick ? 20 : 50;
        List<Integer> cs = clients == null ? List.of(1, 4, 8, 16) : clients.stream().distinct().sorted().toList();
        if (cs.isEmpty() || cs.get(0) < 1) {
            throw new IllegalArgumentException("--clients are positive numbers");
        }
        int workers = openLoopWorkers != null ? openLoopWorkers : cs.get(cs.size() - 1);
        if (workers < 1 || rate < 0 || d <= 0 || w < 0 || pr < 0 || rows < 1 || partitions < 1) {
            throw new IllegalArgumentException("--rows, --partitions, --duration and --open-loop-workers are positive; "
                    + "--prime, --warmup and --open-loop-rate are not negative");
        }
        List<Workload> ws = workloads == null ? List.of(Workload.values())
                : Stream.of(Workload.values()).filter(x -> workloads.stream().map(Workload::of).toList().contains(x)).toList();
        List<String> ps = peers == null ? Bench.PEERS : Bench.PEERS.stream().filter(peers::contains).toList();
        for (String p : peers == null ? List.<String>of() : peers) {
            if (!Bench.PEERS.contains(p)) {
                throw new IllegalArgumentException("unknown peer '" + p + "'; the peers are " + String.join(", ", Bench.PEERS));
            }
        }
        if (ps.isEmpty() || ws.isEmpty()) {
            throw new IllegalArgumentException("name at least one peer and one workload");
        }
        Path work = workDir != null ? workDir.toAbsolutePath()
                : System.getenv("THRESHER_REPO") != null ? Path.of(System.getenv("THRESHER_REPO"), "bench", "target", "bench-work")
                : Files.createTempDirectory("thresher-bench-");
        return new Bench.Options(rows, partitions, cs, pr, w, d, rate, workers, ws, ps, work, command());
    }

    private String command() {
        List<String> parts = new ArrayList<>(List.of("./thresher", "bench"));
        for (String a : args) {
            parts.add(a.matches("[A-Za-z0-9_./,=:@%+-]+") ? a : "'" + a.replace("'", "'\\''") + "'");
        }
        return String.join(" ", parts);
    }

    private static Path resolve(Path p) {
        String repo = System.getenv("THRESHER_REPO");
        return p.isAbsolute() || repo == null ? p : Path.of(repo).resolve(p);
    }

    /** {@code 10s}, {@code 500ms}, {@code 2m}, or a number of seconds. */
    static double seconds(String text, double otherwise, String option) {
        if (text == null) {
            return otherwise;
        }
        String s = text.trim().toLowerCase(Locale.ROOT);
        try {
            if (s.endsWith("ms")) {
                return Double.parseDouble(s.substring(0, s.length() - 2)) / 1000;
            }
            if (s.endsWith("s")) {
                return Double.parseDouble(s.substring(0, s.length() - 1));
            }
            if (s.endsWith("m")) {
                return Double.parseDouble(s.substring(0, s.length() - 1)) * 60;
            }
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " '" + text + "' is not a duration such as 10s, 500ms or 2m");
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a temporary directory left behind
        }
    }
}
