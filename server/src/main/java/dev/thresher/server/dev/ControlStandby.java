package dev.thresher.server.dev;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A synchronous streaming standby of the dev cluster's control PostgreSQL ({@link DevCluster.Options#controlStandby}),
 * as production runs the control database: the nodes reach both through one multi-host URL
 * ({@code targetServerType=primary}), every commit of the control database waits until the standby has it
 * ({@code synchronous_commit = on} for the control database, {@code synchronous_standby_names} naming the standby), and
 * {@link #failOver} stops the primary as a crash would and promotes the standby.
 *
 * <p>The standby is made from a base backup taken with PostgreSQL's low-level API ({@code pg_backup_start}, a copy of
 * the data directory, {@code pg_backup_stop}'s backup label), as {@code pg_basebackup} would take it, since the
 * embedded binaries have no {@code pg_basebackup}; it streams from a physical replication slot made before the copy, so
 * the primary keeps every WAL segment it needs. It runs the embedded binaries with the primary's options, through
 * {@code pg_ctl} (in a user namespace of its own when run as root, as the embedded server is).
 */
final class ControlStandby implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ControlStandby.class);
    static final String NAME = "thresher_standby";
    /** The contents the base backup leaves out (PostgreSQL's documentation, "Making a Base Backup Using the Low Level API"). */
    private static final Set<String> EMPTIED = Set.of("pg_wal", "pg_replslot", "pg_dynshmem", "pg_notify", "pg_serial",
            "pg_snapshots", "pg_stat_tmp", "pg_subtrans");
    private static final Set<String> LEFT_OUT = Set.of("postmaster.pid", "postmaster.opts", "epg-lock");

    private final Path data;
    private final Path bin;
    private final int port;
    private final Path primaryData;
    private volatile boolean promoted;

    private ControlStandby(Path data, Path bin, int port, Path primaryData) {
        this.data = data;
        this.bin = bin;
        this.port = port;
        this.primaryData = primaryData;
    }

    /**
     * Makes {@code primary}'s control database synchronous and a standby of it in {@code dir} (created), started on a
     * free port and streaming, in sync, before it returns.
     */
    static ControlStandby start(EmbeddedPostgres primary, String database, Path dir) throws Exception {
        long t0 = System.nanoTime();
        deleteRecursively(dir); // a standby is made afresh with its primary (whose data directory is too)
        Path primaryData;
        try (Connection c = primary.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            s.execute("ALTER DATABASE " + database + " SET synchronous_commit = on");
            try (ResultSet rs = s.executeQuery("SHOW data_directory")) {
                rs.next();
                primaryData = Path.of(rs.getString(1));
            }
            s.execute("SELECT pg_create_physical_replication_slot('" + NAME + "', true)");
            s.execute("SELECT pg_backup_start('" + NAME + "', true)");
            String label;
            String tablespaces;
            try {
                copy(primaryData, dir);
            } finally {
                try (ResultSet rs = s.executeQuery("SELECT labelfile, spcmapfile FROM pg_backup_stop(false)")) {
                    rs.next();
                    label = rs.getString(1);
                    tablespaces = rs.getString(2);
                }
            }
            Files.writeString(dir.resolve("backup_label"), label);
            if (tablespaces != null && !tablespaces.isEmpty()) {
                Files.writeString(dir.resolve("tablespace_map"), tablespaces);
            }
        }
        List<String> options = options(primaryData);
        Path bin = Path.of(options.get(0)).getParent();
        int port = freePort();
        Files.writeString(dir.resolve("standby.signal"), "");
        Files.writeString(dir.resolve("postgresql.auto.conf"), "primary_conninfo = 'host=127.0.0.1 port="
                + primary.getPort() + " user=postgres application_name=" + NAME + "'\nprimary_slot_name = '" + NAME
                + "'\n", StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
        ControlStandby standby = new ControlStandby(dir, bin, port, primaryData);
        standby.pgCtl(List.of("-D", dir.toString(), "-l", dir.resolveSibling(dir.getFileName() + ".log").toString(),
                "-w", "-t", "60", "-o", startOptions(options, port), "start"));
        try (Connection c = primary.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            s.execute("ALTER SYSTEM SET synchronous_standby_names = '" + NAME + "'");
            s.execute("SELECT pg_reload_conf()");
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_replication WHERE application_name = '"
                        + NAME + "' AND state = 'streaming' AND sync_state = 'sync'")) {
                    rs.next();
                    if (rs.getInt(1) == 1) {
                        break;
                    }
                }
                if (System.nanoTime() - until > 0) {
                    standby.close();
                    throw new IllegalStateException("the control database's standby was not streaming in sync within"
                            + " 60 s; see " + dir.resolveSibling(dir.getFileName() + ".log"));
                }
                Thread.sleep(100);
            }
        }
        log.info("the control database's synchronous standby up on port {} in {} ms", port,
                (System.nanoTime() - t0) / 1_000_000);
        return standby;
    }

    int port() {
        return port;
    }

    boolean promoted() {
        return promoted;
    }

    /**
     * The primary stopped as a crash would stop it ({@code SIGQUIT} to its postmaster: an immediate shutdown, no
     * checkpoint, every session cut), then the standby promoted ({@code pg_promote}); returns once the standby takes
     * writes.
     */
    void failOver() throws Exception {
        long pid = pid(primaryData);
        signal("QUIT", pid);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            if (System.nanoTime() - until > 0) {
                throw new IllegalStateException("the control database's primary (pid " + pid + ") did not stop");
            }
            Thread.sleep(20);
        }
        try (Connection c = connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_promote(true, 60)")) {
            rs.next();
            if (!rs.getBoolean(1)) {
                throw new IllegalStateException("the control database's standby was not promoted within 60 s");
            }
        }
        promoted = true;
        log.info("the control database failed over: primary stopped, standby on port {} promoted", port);
    }

    private Connection connect() throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "postgres");
        p.setProperty("connectTimeout", "5");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", p);
    }

    /** Stops the standby (a fast shutdown), waits until it exited, and removes its data directory. */
    @Override
    public void close() {
        try {
            if (Files.exists(data.resolve("postmaster.pid"))) {
                long pid = pid(data);
                signal("INT", pid);
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() - until < 0) {
                    Thread.sleep(20);
                }
            }
            deleteRecursively(data);
        } catch (Exception e) {
            log.warn("could not stop the control database's standby: {}", e.toString());
        }
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (var paths = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) paths.sorted(java.util.Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Copies a running server's data directory, as a base backup does: torn pages are mended by the WAL replayed. */
    private static void copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rwx------"));
        Files.walkFileTree(from, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                Path target = to.resolve(from.relativize(dir).toString());
                Files.createDirectories(target);
                Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwx------"));
                Path parent = from.relativize(dir);
                if (parent.getNameCount() == 1 && EMPTIED.contains(parent.toString())) {
                    if (parent.toString().equals("pg_wal")) {
                        Files.createDirectories(target.resolve("archive_status"));
                    }
                    return FileVisitResult.SKIP_SUBTREE;
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Path rel = from.relativize(file);
                if (rel.getNameCount() == 1 && LEFT_OUT.contains(rel.toString())) {
                    return FileVisitResult.CONTINUE;
                }
                try {
                    Files.copy(file, to.resolve(rel.toString()), StandardCopyOption.COPY_ATTRIBUTES);
                } catch (NoSuchFileException gone) {
                    // dropped while copied: the WAL replayed drops it too
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                if (e instanceof NoSuchFileException) {
                    return FileVisitResult.CONTINUE;
                }
                throw e;
            }
        });
    }

    /** The command line the embedded server was started with: its binary, then each argument. */
    private static List<String> options(Path data) throws IOException {
        String opts = Files.readString(data.resolve("postmaster.opts"), StandardCharsets.UTF_8).trim();
        List<String> out = new ArrayList<>();
        int firstQuote = opts.indexOf('"');
        out.add((firstQuote < 0 ? opts : opts.substring(0, firstQuote)).trim());
        Matcher m = Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(opts);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    /** The primary's arguments for the standby: its data directory and port left out, the standby's port in. */
    private static String startOptions(List<String> options, int port) {
        StringBuilder b = new StringBuilder("-p ").append(port);
        for (int i = 1; i < options.size(); i++) {
            String a = options.get(i);
            if (a.equals("-D") || a.equals("-p")) {
                i++;
                continue;
            }
            b.append(" '").append(a.replace("'", "'\\''")).append('\'');
        }
        return b.toString();
    }

    private void pgCtl(List<String> args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        if ("root".equals(System.getProperty("user.name"))) {
            command.addAll(List.of("unshare", "-U")); // pg_ctl and postgres refuse to run as root
        }
        command.add(bin.resolve("pg_ctl").toString());
        command.addAll(args);
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(90, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed: " + out);
        }
    }

    private static long pid(Path data) throws IOException {
        return Long.parseLong(Files.readAllLines(data.resolve("postmaster.pid"), StandardCharsets.US_ASCII).get(0).trim());
    }

    private static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!kill.waitFor(10, TimeUnit.SECONDS)) {
            kill.destroyForcibly();
        }
    }

    private static int freePort() throws IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
