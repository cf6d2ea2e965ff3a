package dev.thresher.tests;

import dev.thresher.server.dev.DevCluster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * The faults of the fault suite ({@code FaultSuiteIT}, docs/reliability.md): each is injected, held for a while and
 * healed; {@link Fault#heal} returns once the fault is gone (a killed node restarted and ready, PostgreSQL accepting
 * connections again). Every fault can be healed twice: the suite heals again in its cleanup, whatever failed.
 */
final class Faults {
    private Faults() {}

    /** One fault. */
    interface Fault {
        String name();

        /** What it does, for the report. */
        String what();

        void inject() throws Exception;

        /** Called every quarter second while the fault is held (a fault that repeats itself). */
        default void during() throws Exception {}

        void heal() throws Exception;

        /**
         * Whether the fault freezes or kills the node the clients call: a call in flight on it cannot be answered
         * until it resumes (checker 5 names such calls instead of counting them against the deadline).
         */
        default boolean hitsCoordinator() {
            return false;
        }

        /** What the fault did, measured (for the report), or empty. */
        default String note() {
            return "";
        }

        /**
         * Whether no node fails under the fault, so no partition should change hands: PostgreSQL away from every node
         * at once ends every lease, and the home nodes renew their own when it is back (checker 8).
         */
        default boolean keepsLeaders() {
            return false;
        }
    }

    /**
     * The node processes, the proxies in front of their wire servers, and the proxy every node reaches the control
     * database through ({@code control}, null for none).
     */
    record Cluster(NodeProcesses nodes, Map<Integer, TcpProxy> proxies, Postgres postgres, TcpProxy control,
                   String controlUrl) {
        /**
         * Starts node {@code i} behind its proxy: it binds a free port and advertises the proxy's, and reaches the
         * control database through the control proxy.
         */
        void startNode(int i) throws Exception {
            int wirePort = TcpProxy.freePort();
            TcpProxy proxy = proxies.get(i);
            proxy.target(wirePort);
            Map<String, String> more = new java.util.HashMap<>(Map.of("node.wirePort", Integer.toString(wirePort),
                    "node.wireAdvertisedHost", "127.0.0.1",
                    "node.wireAdvertisedPort", Integer.toString(proxy.port())));
            if (control != null) {
                more.put("control.jdbcUrl", controlUrl.replaceFirst("//[^/:]+:\\d+/", "//127.0.0.1:" + control.port() + "/"));
            }
            nodes.start(i, more);
        }

        /**
         * Waits, up to {@code maxMillis}, for the steady state: every node leads every partition of its home shard
         * under a live lease (after a failover, the home node takes its partitions back once live for two leases).
         *
         * @return null once reached, else which shards were led elsewhere
         */
        /** Each partition's leader and epoch now ({@code partition -> host@epoch}), from the control database. */
        java.util.SortedMap<Integer, String> leaders() throws Exception {
            java.util.SortedMap<Integer, String> out = new java.util.TreeMap<>();
            try (Connection c = postgres.admin(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                    "SELECT p.partition_id, coalesce(l.host_id, '(none)') || '@' || p.epoch FROM partitions p"
                    + " LEFT JOIN partition_leases l ON l.partition_id = p.partition_id")) {
                while (rs.next()) {
                    out.put(rs.getInt(1), rs.getString(2));
                }
            }
            return out;
        }

        String awaitHomeLeaders(long maxMillis) throws Exception {
            Await.Polled<String> steady = Await.poll(Duration.ofMillis(maxMillis), Duration.ofMillis(250), () -> {
                try (Connection c = postgres.admin(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("""
                        SELECT coalesce(string_agg(DISTINCT 'shard ' || p.shard_id, ', '), '') FROM partitions p
                        LEFT JOIN partition_leases l ON l.partition_id = p.partition_id AND l.epoch = p.epoch
                          AND l.lease_until > now()
                        WHERE l.host_id IS DISTINCT FROM 'node-' || p.shard_id""")) {
                    rs.next();
                    return rs.getString(1);
                }
            }, String::isEmpty);
            if (steady.reached()) {
                return null;
            }
            String off = steady.failure() != null ? steady.failure().getMessage() : steady.value();
            return "partitions of " + off + " not led by their home node after " + maxMillis + " ms";
        }
    }

    /** {@code kill -9} of node {@code i}; healed by starting it again (and waiting until it reads ready). */
    static Fault kill(Cluster c, int i, String role) {
        return new Fault() {
            public String name() {
                return role + "-kill9";
            }

            public String what() {
                return "`kill -9` of node-" + i + " (" + role + "); healed by starting it again, until `/readyz`";
            }

            public void inject() throws Exception {
                c.nodes().kill(i);
            }

            public void heal() throws Exception {
                if (!c.nodes().running(i)) {
                    c.startNode(i);
                }
            }

            public boolean hitsCoordinator() {
                return role.equals("coordinator");
            }
        };
    }

    /** {@code kill -STOP} of node {@code i}, healed by {@code kill -CONT}. */
    static Fault freeze(Cluster c, int i, String role) {
        return new Fault() {
            private boolean frozen;

            public String name() {
                return role + "-sigstop";
            }

            public String what() {
                return "`kill -STOP` of node-" + i + " (" + role + "), healed by `kill -CONT`";
            }

            public void inject() throws Exception {
                frozen = true;
                c.nodes().signal(i, "STOP");
            }

            public void heal() throws Exception {
                if (frozen && c.nodes().running(i)) {
                    c.nodes().signal(i, "CONT");
                }
                frozen = false;
            }

            public boolean hitsCoordinator() {
                return role.equals("coordinator");
            }
        };
    }

    /** PostgreSQL (control and shard databases) stopped ({@code pg_ctl stop -m fast}), then started again. */
    static Fault postgresStopped(Cluster c) {
        return new Fault() {
            public String name() {
                return "postgres-restart";
            }

            public String what() {
                return "PostgreSQL (control and all shard databases) stopped: a fast shutdown (`SIGINT` to the postmaster,"
                        + " as `pg_ctl stop -m fast`: sessions terminated, connections refused), then started again with"
                        + " `pg_ctl restart` (the options it was started with)";
            }

            public void inject() throws Exception {
                c.postgres().stop();
            }

            public void heal() throws Exception {
                c.postgres().startIfStopped();
            }

            public boolean keepsLeaders() {
                return true;
            }
        };
    }

    /** PostgreSQL frozen: SIGSTOP of the postmaster and every backend, then SIGCONT. */
    static Fault postgresFrozen(Cluster c) {
        return new Fault() {
            public String name() {
                return "postgres-sigstop";
            }

            public String what() {
                return "PostgreSQL frozen: `kill -STOP` of the postmaster and every one of its processes (backends,"
                        + " checkpointer, …; connections stay open, nothing answers), healed by `kill -CONT`";
            }

            private String measured = "";

            public void inject() throws Exception {
                c.postgres().freeze();
                measured = c.postgres().frozenCount() + " once frozen";
            }

            public void during() {
                measured = c.postgres().frozenCount() + " while held";
            }

            public String note() {
                return measured;
            }

            public void heal() throws Exception {
                c.postgres().thaw();
            }
        };
    }

    /** {@code pg_terminate_backend} of every Thresher session, again every quarter second while held. */
    static Fault sessionsTerminated(Cluster c) {
        return new Fault() {
            private long terminated;

            public String name() {
                return "postgres-terminate";
            }

            public String what() {
                return "`pg_terminate_backend` of every Thresher session (control and shard databases) from a"
                        + " separate admin connection, repeated every 250 ms while the fault is held";
            }

            public void inject() throws Exception {
                terminated += c.postgres().terminateThresherSessions();
            }

            public void during() throws Exception {
                terminated += c.postgres().terminateThresherSessions();
            }

            public void heal() {
                // the sessions come back by themselves
            }

            public String note() {
                return terminated + " sessions terminated";
            }
        };
    }

    /**
     * The control database cut off from every node without a reset (its proxy reads and discards both ways, as a
     * firewall dropping packets), then reachable again. No node fails, so no partition should change hands.
     */
    static Fault controlCut(Cluster c) {
        return new Fault() {
            public String name() {
                return "control-cut";
            }

            public String what() {
                return "the control database cut off from every node, silently: the TCP proxy the nodes reach it through"
                        + " reads and discards both ways (connections stay open, nothing answers); healed by forwarding"
                        + " again and closing the connections that lost bytes";
            }

            public void inject() {
                c.control().blackhole(TcpProxy.Direction.TO_NODE, true);
                c.control().blackhole(TcpProxy.Direction.FROM_NODE, true);
            }

            public void heal() {
                c.control().heal();
            }

            public boolean keepsLeaders() {
                return true;
            }
        };
    }

    /** Latency added, both ways, to the wire traffic of the leader nodes {@code leaders}. */
    static Fault wireDelay(Cluster c, List<Integer> leaders, long ms) {
        return new Fault() {
            public String name() {
                return "wire-delay";
            }

            public String what() {
                return ms + " ms added each way (requests and replies) to the node-to-node traffic of "
                        + leaders.stream().map(i -> "node-" + i).toList() + " by the TCP proxies in front of their wire ports";
            }

            public void inject() {
                for (int i : leaders) {
                    c.proxies().get(i).delay(TcpProxy.Direction.TO_NODE, ms);
                    c.proxies().get(i).delay(TcpProxy.Direction.FROM_NODE, ms);
                }
            }

            public void heal() {
                leaders.forEach(i -> c.proxies().get(i).heal());
            }
        };
    }

    /** Node {@code i}'s wire traffic blackholed in {@code directions}. */
    static Fault wireBlackhole(Cluster c, int i, List<TcpProxy.Direction> directions) {
        return new Fault() {
            public String name() {
                return directions.size() == 2 ? "wire-blackhole" : "wire-blackhole-" + directions.get(0).name()
                        .toLowerCase(java.util.Locale.ROOT).replace('_', '-');
            }

            public String what() {
                return "node-" + i + "'s node-to-node traffic (" + (directions.size() == 2 ? "both directions"
                        : directions.get(0) == TcpProxy.Direction.TO_NODE ? "requests to it" : "its replies")
                        + ") read and discarded by its proxy; healed by forwarding again and closing the connections"
                        + " that lost bytes";
            }

            public void inject() {
                directions.forEach(d -> c.proxies().get(i).blackhole(d, true));
            }

            public void heal() {
                c.proxies().get(i).heal();
            }
        };
    }

    /** Latency added, both ways, to every node's traffic with the control database (a slow control server). */
    static Fault controlSlow(Cluster c, long ms) {
        return new Fault() {
            public String name() {
                return "control-slow";
            }

            public String what() {
                return ms + " ms added each way to every node's traffic with the control database (its proxy holds each"
                        + " chunk that long)";
            }

            public void inject() {
                c.control().delay(TcpProxy.Direction.TO_NODE, ms);
                c.control().delay(TcpProxy.Direction.FROM_NODE, ms);
            }

            public void heal() {
                c.control().heal();
            }

            public boolean keepsLeaders() {
                return true;
            }
        };
    }

    /**
     * Deploys, one after another while the fault is held, new versions of a binding of its own (the sample's module,
     * its budgets alternating so each deploy is a new version), through the admin path (the control and shard
     * databases); the note says how many succeeded and how the others failed. A deploy may fail typed under another
     * fault; none may hang (each has its deadline) or break the calls.
     */
    static Fault deploying(Cluster c, dev.thresher.server.admin.BindingAdmin admin) {
        return new Fault() {
            private final java.util.concurrent.atomic.AtomicInteger done = new java.util.concurrent.atomic.AtomicInteger();
            private final Map<String, Integer> failed = new java.util.concurrent.ConcurrentHashMap<>();
            private volatile Thread deployer;
            private volatile boolean running;

            public String name() {
                return "deploying";
            }

            public String what() {
                return "new versions of the binding `campaign_deploy` deployed one after another while the fault is held";
            }

            public void inject() {
                running = true;
                byte[] wasm = dev.thresher.examples.ExampleComponents.revenueByRegionWasm();
                deployer = Thread.ofPlatform().name("campaign-deployer").start(() -> {
                    int n = 0;
                    while (running) {
                        String manifest = """
                                {"manifestVersion": 1, "binding": "campaign_deploy", "module": "m.wasm", "abiVersion": 2,
                                 "selector": "SELECT region, amount FROM orders", "budgets": {"runMs": %d}}"""
                                .formatted(10_000 + (n++ % 2));
                        try {
                            admin.deploy(DevCluster.TENANT, "campaign", manifest.getBytes(StandardCharsets.UTF_8), wasm);
                            done.incrementAndGet();
                        } catch (RuntimeException e) {
                            failed.merge(e instanceof dev.thresher.errors.ThresherException te ? te.code().name()
                                    : e.getClass().getSimpleName(), 1, Integer::sum);
                        }
                    }
                });
            }

            public void heal() throws Exception {
                running = false;
                Thread t = deployer;
                if (t != null) {
                    t.join(TimeUnit.SECONDS.toMillis(60));
                }
            }

            public String note() {
                return done.get() + " deploys, failed: " + failed;
            }
        };
    }

    /**
     * Moves a partition of the sample to the next shard while the fault is held (the move's copy, fence and switch over
     * run against the databases, as {@code thresher partition move} runs them); healed once the move has ended. The
     * note says how it ended.
     */
    static Fault moving(Cluster c, dev.thresher.server.admin.TopologyAdmin topology) {
        return new Fault() {
            private volatile java.util.concurrent.CompletableFuture<String> move;

            public String name() {
                return "partition-move";
            }

            public String what() {
                return "a partition of the sample moved to the next shard database (copy, fence, switch over)";
            }

            public void inject() throws Exception {
                int partition;
                int shard;
                try (Connection conn = c.postgres().admin(); Statement s = conn.createStatement();
                     ResultSet rs = s.executeQuery("SELECT partition_id, shard_id FROM partitions ORDER BY random() LIMIT 1")) {
                    rs.next();
                    partition = rs.getInt(1);
                    shard = rs.getInt(2);
                }
                String to = Integer.toString(shard % 3 + 1);
                move = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try {
                        topology.movePartition("campaign", partition, to, false);
                        return "partition " + partition + " moved from shard " + shard + " to " + to;
                    } catch (RuntimeException e) {
                        return "the move of partition " + partition + " to shard " + to + " failed: " + e.getMessage();
                    }
                });
            }

            public void heal() throws Exception {
                if (move != null) {
                    try {
                        move.get(90, TimeUnit.SECONDS); // its waits are bounded (three leases and 5 s each)
                    } catch (java.util.concurrent.TimeoutException e) {
                        // noted: "the move had not ended"
                    }
                }
            }

            public String note() {
                return move == null ? "" : move.getNow("the move had not ended");
            }
        };
    }

    /**
     * Two faults at once: {@code first} injected, then {@code second}; healed in the same order, the surroundings
     * first (a node is started again once PostgreSQL or the network it needs is back, as an operator would). Named
     * {@code first+second}.
     */
    static Fault both(Fault first, Fault second) {
        return new Fault() {
            public String name() {
                return first.name() + "+" + second.name();
            }

            public String what() {
                return first.what() + "; meanwhile " + second.what();
            }

            public void inject() throws Exception {
                first.inject();
                second.inject();
            }

            public void during() throws Exception {
                first.during();
                second.during();
            }

            public void heal() throws Exception {
                try {
                    first.heal();
                } finally {
                    second.heal();
                }
            }

            public boolean hitsCoordinator() {
                return first.hitsCoordinator() || second.hitsCoordinator();
            }

            public String note() {
                return java.util.stream.Stream.of(first.note(), second.note()).filter(n -> !n.isEmpty())
                        .collect(java.util.stream.Collectors.joining("; "));
            }

            public boolean keepsLeaders() {
                return first.keepsLeaders() && second.keepsLeaders();
            }
        };
    }

    /**
     * The embedded PostgreSQL of a {@link DevCluster}: its data directory, its binaries (those of the running
     * postmaster) and its processes, for faults. The cluster's own {@code close} stops it by its data directory,
     * so a server started again here is stopped there too.
     */
    static final class Postgres {
        private final DevCluster databases;
        private final Path data;
        private final Path bin;
        private final List<Long> frozen = Collections.synchronizedList(new ArrayList<>());
        private volatile boolean stopped;

        Postgres(DevCluster databases) throws Exception {
            this.databases = databases;
            try (Connection c = admin(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SHOW data_directory")) {
                rs.next();
                data = Path.of(rs.getString(1));
            }
            bin = Path.of(Files.readSymbolicLink(Path.of("/proc/" + postmasterPid() + "/exe")).toString()).getParent();
            // If the test JVM ends abruptly, no PostgreSQL process stays frozen.
            Runtime.getRuntime().addShutdownHook(new Thread(this::thawQuietly, "fault-suite-postgres-thaw"));
        }

        Connection admin() throws Exception {
            Properties p = new Properties();
            p.setProperty("user", DevCluster.USER);
            p.setProperty("password", DevCluster.PASSWORD);
            p.setProperty("ApplicationName", FaultCheckers.APPLICATION_NAME);
            p.setProperty("connectTimeout", "5");
            p.setProperty("socketTimeout", "30");
            return DriverManager.getConnection(databases.controlUrl(), p);
        }

        long postmasterPid() throws IOException {
            return Long.parseLong(Files.readAllLines(data.resolve("postmaster.pid"), StandardCharsets.US_ASCII).get(0)
                    .trim());
        }

        /** The postmaster's children (backends, background workers), from {@code /proc}. */
        List<Long> children(long parent) throws IOException {
            List<Long> pids = new ArrayList<>();
            try (var dirs = Files.list(Path.of("/proc"))) {
                for (Path d : (Iterable<Path>) dirs::iterator) {
                    String n = d.getFileName().toString();
                    if (!n.chars().allMatch(Character::isDigit)) {
                        continue;
                    }
                    try {
                        String stat = Files.readString(d.resolve("stat"));
                        // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis
                        String[] rest = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                        if (Long.parseLong(rest[1]) == parent) {
                            pids.add(Long.parseLong(n));
                        }
                    } catch (IOException | RuntimeException e) {
                        // the process ended meanwhile
                    }
                }
            }
            return pids;
        }

        /**
         * A fast shutdown: {@code SIGINT} to the postmaster, what {@code pg_ctl stop -m fast} sends (pg_ctl refuses to
         * run as root, where zonky runs the server in a user namespace of its own), then waits until it exited.
         */
        void stop() throws Exception {
            long pid = postmasterPid();
            stopped = true;
            signal("INT", pid);
            Await.until("PostgreSQL (pid " + pid + ") stopped and its postmaster.pid gone", Duration.ofSeconds(60),
                    () -> !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)
                            && !Files.exists(data.resolve("postmaster.pid")));
        }

        /**
         * Starts the server again as zonky started it: {@code pg_ctl restart} (which reads the options it was started
         * with from {@code postmaster.opts}: port, settings) in a user namespace of its own ({@code unshare -U}) when
         * run as root; waits until it accepts connections.
         */
        void startIfStopped() throws Exception {
            if (!stopped) {
                return;
            }
            List<String> command = new ArrayList<>();
            if ("root".equals(System.getProperty("user.name"))) {
                command.addAll(List.of("unshare", "-U"));
            }
            command.addAll(List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-w", "-t", "60",
                    "-l", data.resolveSibling("postgres-restarted.log").toString(), "restart"));
            run(command);
            Await.until("PostgreSQL accepting connections again", Duration.ofSeconds(60), Duration.ofMillis(100), () -> {
                try (Connection c = admin()) {
                    return c.isValid(5);
                }
            }, valid -> valid);
            stopped = false;
        }

        boolean stopped() {
            return stopped;
        }

        /** SIGSTOP of the postmaster first (it forks nothing more), then of each of its processes. */
        void freeze() throws Exception {
            long postmaster = postmasterPid();
            frozen.add(postmaster);
            signal("STOP", postmaster);
            List<Long> children = children(postmaster);
            frozen.addAll(children);
            signal("STOP", children);
        }

        /** How many of the processes {@link #freeze} stopped are stopped ({@code T} in {@code /proc/PID/stat}), of how many. */
        String frozenCount() {
            List<Long> pids;
            synchronized (frozen) {
                pids = new ArrayList<>(frozen);
            }
            long stoppedNow = pids.stream().filter(pid -> {
                try {
                    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
                    return stat.substring(stat.lastIndexOf(')') + 2).startsWith("T");
                } catch (IOException | RuntimeException e) {
                    return false;
                }
            }).count();
            return stoppedNow + " of " + pids.size() + " PostgreSQL processes stopped";
        }

        /** SIGCONT of every process {@link #freeze} stopped, the postmaster last. */
        void thaw() throws Exception {
            List<Long> pids;
            synchronized (frozen) {
                pids = new ArrayList<>(frozen);
                frozen.clear();
            }
            Collections.reverse(pids);
            signal("CONT", pids);
        }

        private void thawQuietly() {
            try {
                thaw();
            } catch (Exception e) {
                // going anyway
            }
        }

        /** {@code pg_terminate_backend} of every client session but the suite's own; returns how many. */
        long terminateThresherSessions() throws Exception {
            try (Connection c = admin(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("""
                    SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                      AND datname LIKE 'thresher%' AND application_name <> '""" + FaultCheckers.APPLICATION_NAME + "'")) {
                rs.next();
                return rs.getLong(1);
            }
        }

        private static void signal(String signal, long pid) throws IOException, InterruptedException {
            signal(signal, List.of(pid));
        }

        /** One {@code kill -SIGNAL PID…}, in the order given. */
        private static void signal(String signal, List<Long> pids) throws IOException, InterruptedException {
            if (pids.isEmpty()) {
                return;
            }
            List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
            pids.forEach(p -> command.add(Long.toString(p)));
            Process kill = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!kill.waitFor(10, TimeUnit.SECONDS)) {
                kill.destroyForcibly();
            }
            // a process that ended meanwhile (a backend whose client left) is no error
        }

        private static void run(List<String> command) throws IOException, InterruptedException {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(90, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " failed: " + out);
            }
        }
    }
}
