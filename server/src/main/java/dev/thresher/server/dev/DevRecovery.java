package dev.thresher.server.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Clears what a dev cluster that did not stop cleanly ({@code kill -9}, a crash, a power cut) left in its working
 * directory, so the next {@code thresher dev} there starts as if it were the first.
 *
 * <p>A clean stop removes the embedded PostgreSQL's data directory ({@code postgres/} under the working directory,
 * and {@code postgres-control/} when the control database has a PostgreSQL of its own), so a data directory found
 * at start is always a leftover. It holds nothing but the generated sample data, which the next start generates
 * again from the same seed, so it is recreated, never reused: reusing it would keep whatever the dead cluster's
 * nodes left half done (leases, calls in flight, a half-applied migration) and would hide a data
 * directory broken by the crash. Before it is removed:
 * <ul>
 *   <li>if a live dev cluster holds it (zonky's {@code epg-lock} is locked), nothing is touched and the start is
 *       refused;</li>
 *   <li>the node processes of an earlier {@code thresher dev --processes} still running (named with their pids in
 *       {@code endpoints.json} and recognised by their command line) are killed;</li>
 *   <li>the PostgreSQL its {@code postmaster.pid} names, when that process is alive and is a {@code postgres} of this
 *       data directory, is stopped: a fast shutdown ({@code SIGINT}, as {@code pg_ctl stop -m fast}), then
 *       {@code SIGKILL} if it has not exited within {@value #STOP_WAIT_SECONDS} s. A pid file whose process is gone,
 *       or whose pid now belongs to some other process, is stale and that process is left alone.</li>
 * </ul>
 * Each leftover is reported in one log line, without a stack trace.
 */
public final class DevRecovery {
    private static final Logger log = LoggerFactory.getLogger(DevRecovery.class);

    /** How long a leftover PostgreSQL gets for a fast shutdown before it is killed. */
    static final int STOP_WAIT_SECONDS = 10;

    private DevRecovery() {
    }

    /** The embedded PostgreSQL's data directory under a dev cluster's working directory. */
    public static Path dataDirectory(Path workDir) {
        return workDir.resolve("postgres");
    }

    /**
     * The data directory of the control database's own embedded PostgreSQL, when the dev cluster runs one
     * ({@link DevCluster.Options#controlApart}); recovered as {@link #dataDirectory} is.
     */
    public static Path controlDataDirectory(Path workDir) {
        return workDir.resolve("postgres-control");
    }

    /** The data directory of the control database's standby ({@link DevCluster.Options#controlStandby}). */
    public static Path controlStandbyDirectory(Path workDir) {
        return workDir.resolve("postgres-control-standby");
    }

    /**
     * Clears the leftovers of an unclean stop in {@code workDir}: see the type's description.
     *
     * @return what was found and done, one line each (also logged); empty when the last stop was clean
     * @throws ThresherException {@code INVALID_CONFIGURATION} when a running dev cluster uses {@code workDir}, or a
     *     leftover could not be stopped or removed
     */
    public static List<String> recover(Path workDir) {
        List<Path> data = List.of(dataDirectory(workDir), controlDataDirectory(workDir), controlStandbyDirectory(workDir));
        List<String> done = new ArrayList<>();
        for (Path d : data) {
            if (Files.isDirectory(d)) {
                refuseIfLocked(workDir, d);
            }
        }
        done.addAll(stopLeftoverNodes(workDir));
        for (Path d : data) {
            if (Files.isDirectory(d)) {
                done.add(clearDataDirectory(workDir, d, d.equals(dataDirectory(workDir)) ? "shard databases'"
                        : d.equals(controlDataDirectory(workDir)) ? "control database's" : "control database standby's"));
            }
        }
        done.forEach(log::warn);
        return done;
    }

    /** Refuses when the data directory is in use by a dev cluster that is still running (zonky holds its lock). */
    private static void refuseIfLocked(Path workDir, Path data) {
        Path lockFile = data.resolve("epg-lock");
        if (!Files.exists(lockFile)) {
            return;
        }
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
            FileLock lock = ch.tryLock();
            if (lock != null) {
                lock.release();
                return;
            }
        } catch (OverlappingFileLockException e) {
            // this very process holds it: a dev cluster of its own is running there
        } catch (IOException e) {
            return; // unreadable: not held by a running cluster of ours; removing the directory will say more
        }
        throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "a dev cluster is running in " + workDir
                + " (its PostgreSQL data directory is locked); stop it first, or pass another --dir");
    }

    /** Kills the node processes a dev cluster started with {@code --processes} left running. */
    private static List<String> stopLeftoverNodes(Path workDir) {
        Path endpoints = workDir.resolve("endpoints.json");
        List<String> done = new ArrayList<>();
        if (!Files.isRegularFile(endpoints)) {
            return done;
        }
        JsonNode nodes;
        try {
            nodes = new ObjectMapper().readTree(endpoints.toFile()).path("nodes");
        } catch (IOException e) {
            return done; // half written by a cluster killed while writing it; nothing to learn from it
        }
        for (JsonNode n : nodes) {
            long pid = n.path("pid").asLong(-1);
            String config = n.path("config").asText("");
            if (pid <= 0 || config.isEmpty() || pid == ProcessHandle.current().pid()) {
                continue;
            }
            Optional<ProcessHandle> h = ProcessHandle.of(pid).filter(p -> isNodeOf(p, config));
            if (h.isPresent()) {
                h.get().destroyForcibly();
                awaitExit(h.get(), 5);
                done.add("an earlier dev cluster in " + workDir + " did not stop cleanly: killed its node process "
                        + n.path("id").asText("?") + " (pid " + pid + ")");
            }
        }
        return done;
    }

    private static boolean isNodeOf(ProcessHandle p, String config) {
        List<String> args = arguments(p);
        return p.isAlive() && args.contains("node") && args.contains(config);
    }

    /**
     * A process's arguments: from {@code /proc/PID/cmdline} where there is one (the JDK gives up on command lines
     * longer than 4 KiB, as a node's class path makes it), else as the JDK reads them; empty when unreadable.
     */
    static List<String> arguments(ProcessHandle p) {
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline"));
            List<String> args = List.of(new String(raw, java.nio.charset.StandardCharsets.UTF_8).split("\0"));
            return args.isEmpty() ? args : args.subList(1, args.size());
        } catch (IOException | RuntimeException e) {
            return p.info().arguments().map(List::of).orElse(List.of());
        }
    }

    /**
     * Stops the PostgreSQL still running in {@code data}, if any, then removes the directory.
     *
     * @param serves whose PostgreSQL it is, as the line says it ("shard databases'", "control database's")
     */
    private static String clearDataDirectory(Path workDir, Path data, String serves) {
        Path pidFile = data.resolve("postmaster.pid");
        String what;
        if (Files.isRegularFile(pidFile)) {
            long pid = postmasterPid(pidFile);
            Optional<ProcessHandle> postgres = pid > 0 ? ProcessHandle.of(pid).filter(p -> isPostgresOf(p, data))
                    : Optional.empty();
            if (postgres.isPresent()) {
                what = "stopped its " + serves + " PostgreSQL still running (pid " + pid + ", " + stop(postgres.get(), data) + ")";
            } else {
                what = "its " + serves + " PostgreSQL (pid " + (pid > 0 ? pid : "?") + " in postmaster.pid) is gone";
            }
        } else {
            what = "it left a half-initialised PostgreSQL data directory (its " + serves + ")";
        }
        try {
            deleteRecursively(data);
        } catch (IOException e) {
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "an earlier dev cluster in " + workDir
                    + " did not stop cleanly and its data directory " + data + " cannot be removed (" + e.getMessage()
                    + "); remove it by hand");
        }
        return "an earlier dev cluster in " + workDir + " did not stop cleanly: " + what
                + "; recreating its sample databases from scratch";
    }

    /** The pid on the first line of a {@code postmaster.pid}, or -1. */
    static long postmasterPid(Path pidFile) {
        try (Stream<String> lines = Files.lines(pidFile)) {
            return lines.findFirst().map(String::trim).map(Long::parseLong).orElse(-1L);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * Whether {@code p} is a live {@code postgres} serving {@code data}: its executable is named {@code postgres} and
     * its command line names the data directory or (as a postmaster works in its data directory) its working
     * directory is it. A process of another user, whose facts cannot be read, is never ours.
     */
    static boolean isPostgresOf(ProcessHandle p, Path data) {
        if (!p.isAlive()) {
            return false;
        }
        boolean postgres = p.info().command().map(c -> Path.of(c).getFileName().toString().equals("postgres")).orElse(false);
        if (!postgres) {
            return false;
        }
        Path dir = real(data);
        boolean named = arguments(p).stream()
                .anyMatch(a -> !a.isEmpty() && a.startsWith("/") && real(Path.of(a)).equals(dir));
        return named || real(Path.of("/proc", Long.toString(p.pid()), "cwd")).equals(dir);
    }

    private static Path real(Path p) {
        try {
            return p.toRealPath();
        } catch (IOException | RuntimeException e) {
            return p.toAbsolutePath().normalize();
        }
    }

    /**
     * A fast shutdown: {@code SIGINT}, which is what {@code pg_ctl stop -m fast} sends (pg_ctl itself refuses to run as
     * root, where zonky runs the server in a user namespace), waiting up to {@value #STOP_WAIT_SECONDS} s for the
     * postmaster to exit; then {@code SIGKILL}.
     *
     * @return how it stopped
     */
    private static String stop(ProcessHandle postgres, Path data) {
        boolean signalled = false;
        try {
            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(postgres.pid())).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            signalled = kill.waitFor(5, TimeUnit.SECONDS) && kill.exitValue() == 0;
        } catch (IOException e) {
            // no kill(1): SIGTERM below
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!signalled) {
            postgres.destroy(); // SIGTERM: a smart shutdown, which the dead cluster's closed connections do not delay
        }
        if (awaitExit(postgres, STOP_WAIT_SECONDS)) {
            return signalled ? "fast shutdown" : "SIGTERM";
        }
        postgres.destroyForcibly();
        if (!awaitExit(postgres, 10)) {
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "an earlier dev cluster's PostgreSQL (pid "
                    + postgres.pid() + ", data directory " + data + ") does not stop, even on SIGKILL; stop it by hand");
        }
        return "SIGKILL after " + STOP_WAIT_SECONDS + " s";
    }

    private static boolean awaitExit(ProcessHandle p, int seconds) {
        try {
            p.onExit().get(seconds, TimeUnit.SECONDS);
            return true;
        } catch (TimeoutException | ExecutionException e) {
            return !p.isAlive();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !p.isAlive();
        }
    }

    /** Deletes {@code dir} and all in it; retried, as the backends of a PostgreSQL just killed may still be exiting. */
    private static void deleteRecursively(Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try (Stream<Path> all = Files.walk(dir)) {
                for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
                return;
            } catch (IOException | java.io.UncheckedIOException e) {
                if (!Files.exists(dir)) {
                    return;
                }
                if (attempt == 3) {
                    throw e instanceof IOException io ? io : ((java.io.UncheckedIOException) e).getCause();
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted", ie);
                }
            }
        }
    }
}
