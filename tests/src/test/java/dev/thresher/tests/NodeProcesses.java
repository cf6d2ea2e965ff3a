package dev.thresher.tests;

import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.dev.DevProcesses;
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
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * A cluster of separate node processes ({@code thresher node -c FILE}, one JVM each) over the databases of a
 * {@link DevCluster} started without nodes: what an operator runs, so a test can kill or freeze one node with
 * signals and watch the others.
 */
final class NodeProcesses implements AutoCloseable {
    private final DevCluster databases;
    private final Path dir;
    private final Map<Integer, Process> processes = new java.util.concurrent.ConcurrentSkipListMap<>();
    /** Each running node's pgwire address as it registered itself, read once it was ready. */
    private final Map<Integer, String> pgwireAddresses = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<String, String> extra;
    /** Environment variables of particular nodes' processes (a log format, a log level). */
    private final Map<Integer, Map<String, String>> environments = new java.util.concurrent.ConcurrentHashMap<>();

    NodeProcesses(DevCluster databases, Path dir, Map<String, String> extra) {
        this.databases = databases;
        this.dir = dir;
        this.extra = extra;
    }

    /** Node {@code i}'s process gets these environment variables from its next start on. */
    void environment(int i, Map<String, String> variables) {
        environments.put(i, Map.copyOf(variables));
    }

    /** Starts node {@code i} (home shard {@code i}, standing by for the next) and waits until it reads ready. */
    void start(int i) throws Exception {
        start(i, Map.of());
    }

    /** {@link #start(int)} with {@code more} configuration keys for this start of this node (over the others). */
    void start(int i, Map<String, String> more) throws Exception {
        Properties p = new Properties();
        p.setProperty("node.id", id(i));
        p.setProperty("node.shardId", Integer.toString(i));
        p.setProperty("node.standbyShards", databases.standbyShards(i).stream().map(String::valueOf)
                .reduce((a, b) -> a + "," + b).orElse(""));
        p.setProperty("node.bindHost", "127.0.0.1");
        p.setProperty("node.wirePort", "0");
        p.setProperty("node.pgwirePort", "0");
        p.setProperty("node.httpPort", "0");
        p.setProperty("control.jdbcUrl", databases.controlUrl());
        p.setProperty("shard.jdbcUrl", databases.shardUrl(i));
        p.setProperty("db.user", DevCluster.USER);
        p.setProperty("db.password", DevCluster.PASSWORD);
        p.setProperty("pgwire.auth", "trust");
        p.setProperty("tenant", DevCluster.TENANT);
        extra.forEach(p::setProperty);
        more.forEach(p::setProperty);
        Path config = dir.resolve(id(i) + ".properties");
        try (var out = Files.newOutputStream(config)) {
            p.store(out, null);
        }
        ProcessBuilder pb = new ProcessBuilder(thresher(List.of(), "node", "-c", config.toString())).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log(i).toFile()));
        pb.environment().keySet().removeIf(k -> k.startsWith("THRESHER_") && !k.equals("THRESHER_LOG_LEVEL") && !k.equals("THRESHER_LOG_FORMAT"));
        pb.environment().putAll(environments.getOrDefault(i, Map.of()));
        long since = System.currentTimeMillis();
        pgwireAddresses.remove(i);
        processes.put(i, pb.start());
        awaitReady(i, since);
        pgwireAddresses.put(i, hostColumn(i, "pgwire_address"));
    }

    /** The command line of {@code thresher ARGS} in a JVM of its own, like this one, with {@code jvmOptions} added. */
    static List<String> thresher(List<String> jvmOptions, String... args) {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> !a.startsWith("-javaagent") && !a.startsWith("-agentlib")).toList());
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), "dev.thresher.server.cli.Main"));
        command.addAll(List.of(args));
        return command;
    }

    static String id(int i) {
        return "node-" + i;
    }

    Path log(int i) {
        return dir.resolve(id(i) + ".log");
    }

    long pid(int i) {
        return processes.get(i).pid();
    }

    /** Whether node {@code i}'s process was started here and has not been killed. */
    boolean running(int i) {
        Process p = processes.get(i);
        return p != null && p.isAlive();
    }

    /** The pgwire address node {@code i} registered at its last start, from memory (no database read), or null. */
    String knownPgwireAddress(int i) {
        return pgwireAddresses.get(i);
    }

    /** {@code kill -9}. */
    void kill(int i) throws InterruptedException {
        pgwireAddresses.remove(i);
        Process p = processes.remove(i);
        p.destroyForcibly();
        p.waitFor(30, TimeUnit.SECONDS);
    }

    /** {@code kill -STOP} or {@code kill -CONT}. */
    void signal(int i, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid(i))).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + signal + " " + pid(i) + " failed");
        }
    }

    /** The node's pgwire address as it registered itself. */
    String pgwireAddress(int i) throws Exception {
        return hostColumn(i, "pgwire_address");
    }

    Connection connect(int i) throws Exception {
        return connect(i, new Properties());
    }

    /** A pgjdbc connection to node {@code i}'s pgwire with {@code more} driver properties. */
    Connection connect(int i, Properties more) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        p.putAll(more);
        String address = pgwireAddresses.get(i);
        return DriverManager.getConnection("jdbc:postgresql://" + (address != null ? address : pgwireAddress(i))
                + "/thresher", p);
    }

    private String hostColumn(int i, String column) throws Exception {
        try (Connection c = control(); PreparedStatement ps = c.prepareStatement(
                "SELECT " + column + " FROM hosts WHERE host_id = ?")) {
            ps.setString(1, id(i));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    Connection control() throws Exception {
        return DriverManager.getConnection(databases.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
    }

    /** The control database's clock. */
    java.sql.Timestamp controlNow() throws Exception {
        try (Connection c = control(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT now()")) {
            rs.next();
            return rs.getTimestamp(1);
        }
    }

    /** What {@code /readyz} is asked with: by default an HTTP client of the JDK's defaults. */
    private volatile HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    /** Asks {@code /readyz} with {@code client} from now on (one trusting a node's HTTPS certificate, say). */
    void httpClient(HttpClient client) {
        http = client;
    }

    private void awaitReady(int i, long sinceMillis) {
        Await.Polled<String> ready = Await.poll(Duration.ofSeconds(120), Duration.ofMillis(200), () -> {
            Process p = processes.get(i);
            if (!p.isAlive()) {
                throw new AssertionError(id(i) + " exited with " + p.exitValue() + ":\n" + tail(i));
            }
            String httpAddress;
            try {
                httpAddress = registeredSince(i, sinceMillis);
            } catch (java.sql.SQLException e) {
                throw new AssertionError("the control database, asked whether " + id(i) + " registered", e);
            }
            if (httpAddress == null) {
                return "not registered since its start";
            }
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(httpAddress + "/readyz"))
                    .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
            return "/readyz " + r.statusCode() + " " + r.body();
        }, seen -> seen.startsWith("/readyz 200 "));
        if (!ready.reached()) {
            throw new AssertionError(id(i) + " not ready within 120 s (last seen: " + ready.seen() + "):\n" + tail(i));
        }
    }

    /**
     * The sum of a series' samples on node {@code i}'s {@code GET /metrics} (Prometheus text), as a node started last
     * registered its HTTP address.
     */
    double metric(int i, String series) throws Exception {
        String httpAddress = registeredSince(i, 0);
        if (httpAddress == null) {
            throw new AssertionError(id(i) + " has no HTTP address registered");
        }
        String text = http.send(HttpRequest.newBuilder(URI.create(httpAddress + "/metrics")).timeout(Duration.ofSeconds(2))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
        double sum = 0;
        boolean found = false;
        for (String line : text.split("\n")) {
            if (line.startsWith(series + " ") || line.startsWith(series + "{")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                found = true;
            }
        }
        if (!found) {
            throw new AssertionError(id(i) + "'s /metrics has no series " + series);
        }
        return sum;
    }

    private String registeredSince(int i, long sinceMillis) throws Exception {
        try (Connection c = control(); PreparedStatement ps = c.prepareStatement(
                "SELECT http_address FROM hosts WHERE host_id = ? AND started_at >= to_timestamp(? / 1000.0)")) {
            ps.setString(1, id(i));
            ps.setLong(2, sinceMillis - 1_000);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    String tail(int i) {
        try {
            List<String> lines = Files.readAllLines(log(i));
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public void close() {
        DevProcesses.stop(processes.values());
        processes.clear();
        pgwireAddresses.clear();
    }
}
