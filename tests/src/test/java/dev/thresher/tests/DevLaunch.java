package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/** {@code thresher dev} in a JVM of its own, as the dev-cluster tests start, watch and stop it. */
final class DevLaunch {
    static final ObjectMapper JSON = new ObjectMapper();

    private DevLaunch() {
    }

    /** Starts {@code thresher dev --dir DIR --pgwire-port PORT --rows ROWS ARGS}, its output to {@code log}. */
    static Process start(Path dir, int port, Path log, String... args) throws IOException {
        List<String> all = new ArrayList<>(List.of("dev", "--dir", dir.toString(), "--pgwire-port", Integer.toString(port),
                "--rows", "5000"));
        all.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(NodeProcesses.thresher(List.of(), all.toArray(String[]::new)))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
        pb.environment().keySet().removeIf(k -> k.startsWith("THRESHER_") && !k.equals("THRESHER_LOG_LEVEL") && !k.equals("THRESHER_LOG_FORMAT"));
        return pb.start();
    }

    /** Waits (150 s at most) until the dev cluster printed its banner; fails with its log when it exits first. */
    static JsonNode awaitUp(Process p, Path dir, Path log) throws Exception {
        Path endpoints = dir.resolve("endpoints.json");
        Await.Polled<Boolean> up = Await.poll(java.time.Duration.ofSeconds(150), java.time.Duration.ofMillis(200), () -> {
            boolean banner = Files.exists(endpoints) && Files.readString(log).contains("Ctrl-C stops everything");
            assertThat(banner || p.isAlive()).as("thresher dev exited early:%n%s", Files.readString(log)).isTrue();
            return banner;
        }, banner -> banner);
        assertThat(up.reached()).as("thresher dev not up in 150 s:%n%s", Files.readString(log)).isTrue();
        return JSON.readTree(endpoints.toFile());
    }

    /** {@code CALL BINDING revenue_by_region('{}')} through pgwire at {@code address} (host:port). */
    static JsonNode call(String address) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", dev.thresher.server.dev.DevCluster.USER);
        p.setProperty("password", dev.thresher.server.dev.DevCluster.PASSWORD); // the dev cluster's login (SCRAM-SHA-256)
        p.setProperty("connectTimeout", "5");
        p.setProperty("socketTimeout", "30");
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + address + "/thresher", p);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
            assertThat(rs.next()).isTrue();
            return JSON.readTree(rs.getString(1));
        }
    }

    /** The total {@code count} over the regions of a result of the sample binding. */
    static long rows(JsonNode result) {
        long n = 0;
        for (JsonNode region : result) {
            n += region.get("count").asLong();
        }
        return n;
    }

    /** The pid of the PostgreSQL named in the dev cluster's {@code postmaster.pid}, if there is one. */
    static Optional<Long> postmasterPid(Path dir) throws IOException {
        Path pidFile = dir.resolve("postgres/postmaster.pid");
        return Files.exists(pidFile) ? Optional.of(Long.parseLong(Files.readAllLines(pidFile).get(0).trim()))
                : Optional.empty();
    }

    static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** Waits (up to {@code seconds}) until process {@code pid} is gone. */
    static boolean awaitGone(long pid, int seconds) {
        return Await.poll(java.time.Duration.ofSeconds(seconds), java.time.Duration.ofMillis(100), () -> alive(pid),
                alive -> !alive).reached();
    }

    /** Stops a dev process: SIGTERM, as Ctrl-C; SIGKILL after 90 s. */
    static void stop(Process p) throws InterruptedException {
        p.destroy();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
    }

    /**
     * A port p such that p, p+1 and p+2 are free right now, below the kernel's ephemeral range (as LauncherIT picks
     * one): the nodes' own ephemeral listeners must not take one of them before the third node binds its pgwire port.
     */
    static int freePortRun() throws IOException {
        int ephemeralLow = 32_768;
        try {
            ephemeralLow = Integer.parseInt(Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))
                    .trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            // not Linux: keep the common default
        }
        int low = Math.max(10_000, ephemeralLow - 12_000);
        java.util.Random random = new java.util.Random();
        for (int attempt = 0; attempt < 200; attempt++) {
            int p = low + random.nextInt(Math.max(1, ephemeralLow - 3 - low));
            if (free(p) && free(p + 1) && free(p + 2)) {
                return p;
            }
        }
        throw new IOException("no run of three free ports below " + ephemeralLow);
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
