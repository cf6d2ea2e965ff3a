package dev.thresher.server.dev;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.cli.Main;
import dev.thresher.server.node.Node;
import dev.thresher.server.node.NodeConfig;
import dev.thresher.server.node.TlsSettings;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The nodes of a dev cluster as separate OS processes ({@code thresher dev --processes}): one JVM per node running
 * {@code thresher node -c FILE}, as in production, over the databases of a {@link DevCluster} started without nodes,
 * so an operator can kill or freeze one node with signals and watch the others take over.
 *
 * <p>Node {@code i}'s configuration and log are {@code nodes/node-i.properties} and {@code nodes/node-i.log} under the
 * dev working directory. Each child is started with {@code --exit-with <dev pid>}: it stops (cleanly) within a second
 * or two of the dev process ending however it ended, {@code kill -9} included, and a frozen child a dead dev process
 * left behind is killed by the next {@code thresher dev} in the same directory ({@link DevRecovery}).
 */
public final class DevProcesses implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DevProcesses.class);

    /** How long a node process gets to read ready. */
    private static final long READY_SECONDS = 120;

    /** How long a node process gets to stop on {@code SIGTERM} before it is killed. */
    private static final long STOP_SECONDS = 40;

    /** One node process: its id, files, process and registered addresses. */
    public record NodeProcess(String id, Path config, Path log, Process process, String pgwire, String http) {
        public long pid() {
            return process.pid();
        }
    }

    private final DevCluster databases;
    private final List<NodeProcess> nodes = new ArrayList<>();
    /** Every process started, ready or not: what {@link #close} stops. */
    private final List<Process> started = new ArrayList<>();

    private DevProcesses(DevCluster databases) {
        this.databases = databases;
    }

    /**
     * Starts one node process per shard database of {@code databases} (started {@link DevCluster.Options#withoutNodes
     * without nodes}), waits until each reads ready and every partition is led by its home node, and writes
     * {@code endpoints.json} with each node's addresses and pid.
     */
    public static DevProcesses start(DevCluster databases) throws Exception {
        DevProcesses p = new DevProcesses(databases);
        try {
            p.startAll();
            return p;
        } catch (Exception | Error e) {
            p.close();
            throw e;
        }
    }

    private void startAll() throws Exception {
        long t0 = System.nanoTime();
        DevCluster.Options o = databases.options();
        Path dir = Files.createDirectories(o.workDir().resolve("nodes"));
        List<Path> configs = new ArrayList<>();
        for (int i = 1; i <= o.shards(); i++) {
            Path config = writeConfig(dir, i);
            configs.add(config);
            started.add(launch(config, dir.resolve(id(i) + ".log")));
        }
        for (int i = 1; i <= o.shards(); i++) {
            String[] addresses = awaitReady(i, started.get(i - 1), dir.resolve(id(i) + ".log"));
            nodes.add(new NodeProcess(id(i), configs.get(i - 1), dir.resolve(id(i) + ".log"), started.get(i - 1),
                    addresses[0], addresses[1]));
            log.info("{} up as process {}: pgwire {}, http {}, log {}", id(i), started.get(i - 1).pid(), addresses[0],
                    addresses[1], dir.resolve(id(i) + ".log"));
        }
        databases.awaitHomeLeadership();
        databases.writeEndpoints(endpoints());
        log.info("dev cluster of {} node processes ready in {} ms", nodes.size(), (System.nanoTime() - t0) / 1_000_000);
    }

    static String id(int i) {
        return "node-" + i;
    }

    /** Node {@code i}'s configuration: home shard {@code i}, standing by as the in-process dev cluster's nodes do. */
    private Path writeConfig(Path dir, int i) throws IOException {
        DevCluster.Options o = databases.options();
        Properties p = new Properties();
        p.setProperty("node.id", id(i));
        p.setProperty("node.shardId", Integer.toString(i));
        p.setProperty("node.standbyShards", String.join(",", databases.standbyShards(i).stream().map(String::valueOf)
                .toList()));
        p.setProperty("node.bindHost", "127.0.0.1");
        p.setProperty("node.wirePort", "0");
        p.setProperty("node.pgwirePort", Integer.toString(o.pgwirePort() == 0 ? 0 : o.pgwirePort() + i - 1));
        p.setProperty("node.httpPort", "0");
        p.setProperty("control.jdbcUrl", databases.controlUrl());
        p.setProperty("shard.jdbcUrl", databases.shardUrl(i));
        p.setProperty("db.user", DevCluster.USER);
        p.setProperty("db.password", DevCluster.PASSWORD);
        p.setProperty("pgwire.auth", "scram-sha-256");
        p.setProperty("pgwire.user", DevCluster.USER);
        p.setProperty("pgwire.password", DevCluster.PASSWORD);
        p.setProperty("tenant", DevCluster.TENANT);
        p.setProperty("http.adminToken", databases.adminToken());
        TlsSettings tls = databases.tls();
        p.setProperty("tls.certFile", tls.certFile().toAbsolutePath().toString());
        p.setProperty("tls.keyFile", tls.keyFile().toAbsolutePath().toString());
        p.setProperty("pgwire.tls", tls.pgwire().toString());
        p.setProperty("failpoints.enabled", Boolean.toString(o.failpoints()));
        o.limits().asMap().forEach((k, v) -> p.setProperty("limits." + k, Long.toString(v)));
        Path config = dir.resolve(id(i) + ".properties").toAbsolutePath();
        DevCluster.ownerOnly(config); // it names the admin token
        try (var out = Files.newOutputStream(config)) {
            p.store(out, "node " + i + " of the dev cluster in " + o.workDir() + " (written by thresher dev --processes)");
        }
        return config;
    }

    /** {@code thresher node -c CONFIG --exit-with <this pid>} in a JVM of its own, its output appended to {@code log}. */
    private static Process launch(Path config, Path log) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command("node", "-c", config.toString(), "--exit-with",
                Long.toString(ProcessHandle.current().pid())))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        // A node reads THRESHER_* variables as configuration: the file alone configures these.
        pb.environment().keySet().removeIf(k -> k.startsWith(NodeConfig.ENVIRONMENT_PREFIX)
                && !NodeConfig.RESERVED_VARIABLES.contains(k));
        return pb.start();
    }

    /**
     * The command line of {@code thresher ARGS} in a JVM like this one: the same executable, JVM flags (those of
     * GraalVM's optimizing runtime the launcher passed; no debugging agents) and class path.
     */
    static List<String> command(String... args) {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> !a.startsWith("-javaagent") && !a.startsWith("-agentlib") && !a.startsWith("-agentpath"))
                .toList());
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
        command.addAll(List.of(args));
        return command;
    }

    /**
     * Waits until node {@code i} registered itself and answers {@code /readyz} with 200.
     *
     * @return its pgwire and HTTP addresses
     */
    private String[] awaitReady(int i, Process p, Path logFile) throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(READY_SECONDS);
        while (System.nanoTime() - until < 0) {
            if (!p.isAlive()) {
                throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, id(i) + " (process " + p.pid()
                        + ") exited with " + p.exitValue() + " while starting; its log: " + logFile);
            }
            String[] addresses = registered(i);
            if (addresses != null && addresses[1] != null) {
                try {
                    HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create(addresses[1] + "/readyz"))
                            .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.discarding());
                    if (r.statusCode() == 200) {
                        return addresses;
                    }
                } catch (IOException e) {
                    // not listening yet
                }
            }
            Thread.sleep(200);
        }
        throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, id(i) + " (process " + p.pid() + ") not ready within "
                + READY_SECONDS + " s; its log: " + logFile);
    }

    private String[] registered(int i) {
        return databases.topology().addresses(id(i)).map(a -> new String[] {a.pgwire(), a.http()}).orElse(null);
    }

    /**
     * Calls the sample binding {@code rounds} times through each node's pgwire, so the guest and the call path of every
     * node process are compiled before a person's first call.
     *
     * @return the time taken, in milliseconds
     */
    public long warmUp(int rounds) {
        long t0 = System.nanoTime();
        Properties props = new Properties();
        props.setProperty("user", DevCluster.USER);
        for (NodeProcess n : nodes) {
            try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + n.pgwire() + "/thresher", props);
                 Statement s = c.createStatement()) {
                for (int round = 0; round < rounds; round++) {
                    s.execute("CALL BINDING " + DevCluster.SAMPLE_BINDING + "('{}')");
                }
            } catch (SQLException e) {
                log.warn("warm-up call through {} failed: {}", n.id(), e.getMessage());
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        log.info("warmed up the call path with {} calls in {} ms", rounds * nodes.size(), ms);
        return ms;
    }

    public List<NodeProcess> nodes() {
        return List.copyOf(nodes);
    }

    /** The facts of {@code endpoints.json}: the databases' as {@link DevCluster#endpoints}, the nodes' of the processes. */
    public Map<String, Object> endpoints() {
        Map<String, Object> m = new LinkedHashMap<>(databases.endpoints());
        m.put("pgwire", nodes.stream().map(NodeProcess::pgwire).toList());
        m.put("http", nodes.stream().map(NodeProcess::http).toList());
        m.put("nodes", nodes.stream().map(n -> {
            Map<String, Object> e = DevCluster.nodeEntry(n.id(), n.pgwire(), n.http(), n.pid());
            e.put("config", n.config().toString());
            e.put("log", n.log().toString());
            return e;
        }).toList());
        return m;
    }

    /**
     * Stops every node process: {@code SIGCONT} (one may be frozen), then {@code SIGTERM}, so each stops cleanly and
     * gives up its leases; {@code SIGKILL} for any still running after {@value #STOP_SECONDS} s.
     */
    @Override
    public void close() {
        stop(started);
        nodes.clear();
        started.clear();
    }

    /**
     * Stops node processes as {@link #close} does: {@code SIGCONT}, {@code SIGTERM}, and {@code SIGKILL} for any still
     * running {@value #STOP_SECONDS} s later.
     */
    public static void stop(java.util.Collection<Process> processes) {
        List<Process> all = List.copyOf(processes);
        for (Process p : all) {
            signal(p, "CONT");
            p.destroy();
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(STOP_SECONDS);
        for (Process p : all) {
            try {
                if (!p.waitFor(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    log.warn("node process {} still running {} s after SIGTERM: killing it", p.pid(), STOP_SECONDS);
                    p.destroyForcibly();
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private static void signal(Process p, String signal) {
        try {
            new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor(5, TimeUnit.SECONDS);
        } catch (IOException e) {
            // going anyway
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
