package dev.thresher.server.cli;

import dev.thresher.bindings.TopologyService;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.admin.CsvLoader;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.dev.DevProcesses;
import dev.thresher.server.dev.DevRecovery;
import dev.thresher.server.dev.ParentWatch;
import dev.thresher.server.node.Node;
import dev.thresher.server.node.NodeConfig;
import dev.thresher.server.node.TopologyView;
import dev.thresher.topology.Slots;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/** The {@code thresher} command line. */
@Command(name = "thresher", mixinStandardHelpOptions = true, version = "thresher 0.1.0",
        description = "A distributed map-reduce call runtime over partitioned PostgreSQL data.",
        subcommands = {Main.Dev.class, Main.NodeCommand.class, Main.Slot.class, Main.Table.class, Main.Load.class,
                Main.Deploy.class, Main.BindingCommand.class, Main.ComponentCommand.class, Main.TopologyCommand.class,
                Main.PartitionCommand.class, Main.LeaderCommand.class, Main.ShardCommand.class, JournalCommand.class,
                UserCommand.class, UserCommand.GrantCommand.class, UserCommand.RevokeCommand.class})
public final class Main implements Runnable {
    public static void main(String[] args) {
        String format = System.getenv("THRESHER_LOG_FORMAT");
        if (format != null && !format.equals("text") && !format.equals("json")) {
            // logback would log nothing at all with an appender it does not know
            System.err.println("thresher: THRESHER_LOG_FORMAT is text or json, was '" + format + "'");
            System.exit(2);
        }
        System.exit(commandLine().execute(args));
    }

    /** The command line, every subcommand answering {@code --help} (and {@code --version}). */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        withHelp(cl);
        return cl
                .setExecutionExceptionHandler((e, cmd, parsed) -> {
                    if (e instanceof ThresherException || e instanceof IllegalArgumentException) {
                        // Expected refusals (a taken port, a bad setting) read as one line, not a stack trace.
                        cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
                        return 1;
                    }
                    throw e;
                });
    }

    private static void withHelp(CommandLine cl) {
        for (CommandLine sub : cl.getSubcommands().values()) {
            sub.getCommandSpec().mixinStandardHelpOptions(true);
            withHelp(sub);
        }
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    @Command(name = "dev", description = {
            "Start a local cluster on embedded PostgreSQL with sample data and the sample binding.",
            "",
            "Data lives under --dir and is generated again at every start. A dev cluster killed there before"
                    + " (kill -9, a crash) is cleaned up first: a PostgreSQL of it still running is stopped (a fast"
                    + " shutdown, SIGINT, then SIGKILL after 10 s), node processes of it still running are killed,"
                    + " and its data directory is removed, each said in one log line.",
            "",
            "With --processes every node runs as its own OS process (thresher node -c FILE), its configuration and"
                    + " log in DIR/nodes/; endpoints.json names each node's pid, so one can be killed (kill -9) or"
                    + " frozen (kill -STOP) as in production. The node processes stop with the dev process, however"
                    + " it ends (one frozen at that moment is killed by the next thresher dev in the same --dir)."})
    static final class Dev implements Callable<Integer> {
        @Option(names = "--pgwire-port", defaultValue = "5433", description = "First node's pgwire port (default ${DEFAULT-VALUE}); the others follow it.")
        int pgwirePort;

        @Option(names = "--dir", defaultValue = ".thresher/dev", description = "Working directory (default ${DEFAULT-VALUE}).")
        Path dir;

        @Option(names = "--rows", defaultValue = "50000", description = "Sample orders to generate (default ${DEFAULT-VALUE};"
                + " at most 5,000,000).")
        int rows;

        @Option(names = "--partitions", defaultValue = "16", description = "Partitions of orders (default ${DEFAULT-VALUE};"
                + " at most 64, the slots one call may cover).")
        int partitions;

        @Option(names = "--processes", description = "Run each node as its own OS process (a JVM of its own, logging to"
                + " DIR/nodes/node-N.log) instead of inside this one; the databases stay in this process.")
        boolean processes;

        @Option(names = "--replica-memory", defaultValue = "268435456", description = "limits.replicaMemoryBytes of every"
                + " node: the heap for leader replicas, which keep each partition in memory, current through logical"
                + " replication (default ${DEFAULT-VALUE}, 256 MiB; a node's own default is 0). With replicas on, the"
                + " control database runs in a PostgreSQL of its own, as docs/deployment.md advises; 0 turns replicas"
                + " off and keeps one PostgreSQL.")
        long replicaMemory;

        @Override
        public Integer call() throws Exception {
            Path workDir = dir.toAbsolutePath();
            if (replicaMemory < 0) {
                System.err.println("thresher dev: --replica-memory must be 0 or more bytes, was " + replicaMemory);
                return 2;
            }
            // Before the port check: node processes a killed dev cluster left behind may hold the ports.
            DevRecovery.recover(workDir);
            if (pgwirePort != 0) {
                for (int port = pgwirePort; port < pgwirePort + 3; port++) {
                    if (!free(port)) {
                        System.err.println("thresher dev: port " + port + " on 127.0.0.1 is in use (a dev cluster may be"
                                + " running already); stop it, or pass --pgwire-port with three free ports");
                        return 2;
                    }
                }
            }
            int n = partitions;
            if (rows < 1 || rows > DevCluster.Options.ROWS_MAX || n < 1
                    || n > dev.thresher.limits.Limits.DEFAULTS.coordinationSlots()) {
                System.err.printf("thresher dev: --rows must be 1..%,d and --partitions 1..%d%n", DevCluster.Options.ROWS_MAX,
                        dev.thresher.limits.Limits.DEFAULTS.coordinationSlots());
                return 2;
            }
            DevCluster.Options options = DevCluster.Options.defaults(workDir).withPgwirePort(pgwirePort)
                    .withRows(rows).withPartitions(n);
            if (replicaMemory > 0) {
                options = options.withLimits(dev.thresher.limits.Limits.fromProperties(Map.of(
                        "limits.replicaMemoryBytes", Long.toString(replicaMemory)))).withControlApart();
            }
            DevCluster cluster = DevCluster.start(processes ? options.withoutNodes() : options);
            DevProcesses nodeProcesses;
            try {
                nodeProcesses = processes ? DevProcesses.start(cluster) : null;
            } catch (Exception | Error e) {
                cluster.close();
                throw e;
            }
            CountDownLatch stopped = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                System.out.println("\nstopping the dev cluster...");
                if (nodeProcesses != null) {
                    nodeProcesses.close();
                }
                cluster.close();
                stopped.countDown();
            }, "dev-cluster-shutdown"));
            if (nodeProcesses != null) {
                nodeProcesses.warmUp(2);
                printSnippets(cluster, nodeProcesses.nodes().stream().map(DevProcesses.NodeProcess::pgwire).toList(),
                        nodeProcesses.nodes().get(0).http(), "Node processes (kill -9 or kill -STOP one to watch failover):\n"
                        + String.join("\n", nodeProcesses.nodes().stream().map(p -> "  %s  pid %d  log %s".formatted(
                                p.id(), p.pid(), p.log())).toList()) + "\n");
            } else {
                cluster.warmUp(2);
                printSnippets(cluster, cluster.nodes().stream().map(Node::pgwireAddress).toList(),
                        cluster.nodes().get(0).httpAddress(), "");
            }
            stopped.await();
            return 0;
        }

        private static boolean free(int port) {
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress("127.0.0.1", port));
                return true;
            } catch (IOException e) {
                return false;
            }
        }

        /** What the banner says of the leader replicas. */
        private String replicas() {
            if (replicaMemory == 0) {
                return "leader replicas off (every partition read through SQL)";
            }
            String budget = replicaMemory % (1 << 20) == 0 ? (replicaMemory >> 20) + " MiB" : replicaMemory + " bytes";
            return "leader replicas on (" + budget + " per node; --replica-memory 0 turns them off)";
        }

        private void printSnippets(DevCluster c, java.util.List<String> pgwire, String http, String extra) {
            String pg = pgwire.get(0);
            String host = pg.substring(0, pg.lastIndexOf(':'));
            int port = Integer.parseInt(pg.substring(pg.lastIndexOf(':') + 1));
            System.out.printf("""

                    Thresher dev cluster is up: %d nodes%s, table orders in %d partitions over %d shard databases, %d rows,
                    binding %s; %s.

                      psql:  psql "postgresql://%s:%s@%s:%d/thresher" -c "CALL BINDING %s('{}')"
                      TLS:   psql "host=localhost port=%d user=%s password=%s sslmode=verify-full sslrootcert=%s channel_binding=require" -c "CALL BINDING %s('{}')"
                      JDBC:  jdbc:postgresql://%s:%d/thresher?user=%s&password=%s   then  CALL BINDING %s(?)  with '{}'
                      HTTP:  curl -s -X POST %s/v1/bindings/%s/call -H "Authorization: Bearer %s" -d '{}'
                      Web:   %s/ui/#token=%s   (recent invocations, a call's timeline)
                      SQL reference (each shard database):
                             psql "postgresql://%s:%s@127.0.0.1:%d/thresher_shard_1" -c "SELECT region, sum(amount), count(*) FROM orders GROUP BY region"

                    %sEndpoints of every part: %s
                    Ctrl-C stops everything.
                    """, pgwire.size(), processes ? " (one process each)" : "", c.options().partitions(), c.options().shards(),
                    rows, DevCluster.SAMPLE_BINDING, replicas(), DevCluster.USER, DevCluster.PASSWORD, host, port, DevCluster.SAMPLE_BINDING,
                    port, DevCluster.USER, DevCluster.PASSWORD, c.caCertFile(), DevCluster.SAMPLE_BINDING,
                    host, port, DevCluster.USER, DevCluster.PASSWORD, DevCluster.SAMPLE_BINDING, http,
                    DevCluster.SAMPLE_BINDING, c.adminToken(), http, c.adminToken(), DevCluster.USER,
                    DevCluster.PASSWORD,
                    c.postgresPort(), extra, c.endpointsFile());
        }
    }

    @Command(name = "node", description = "Run one node against external PostgreSQL databases (-c FILE), or drain one.",
            subcommands = {NodeCommand.Drain.class, NodeCommand.Undrain.class})
    static final class NodeCommand implements Callable<Integer> {
        @Option(names = {"-c", "--config"}, description = "A properties file (see docs/operations.md).")
        Path config;

        /** Set by {@code thresher dev --processes}: a node process does not outlive the dev process that started it. */
        @Option(names = "--exit-with", hidden = true, description = "Stop (cleanly) when the process with this pid ends.")
        Long exitWith;

        @Command(name = "drain", description = "Stop a node leading partitions: its leases pass to the other candidates of"
                + " their shards (refused when a partition would have none); waits until they did.")
        static final class Drain extends TopologyChangeCommand {
            @Parameters(index = "0", description = "The node's id.")
            String node;

            @Override
            TopologyService.Change change(TopologyAdmin t, String by) {
                return t.drainNode(by, node, dryRun);
            }
        }

        @Command(name = "undrain", description = "Let a drained node lead again; its home shard's partitions return to it"
                + " once it has been live for two leases.")
        static final class Undrain extends TopologyChangeCommand {
            @Parameters(index = "0", description = "The node's id.")
            String node;

            @Override
            TopologyService.Change change(TopologyAdmin t, String by) {
                return t.undrainNode(by, node, dryRun);
            }
        }

        @Override
        public Integer call() throws Exception {
            if (config == null) {
                System.err.println("thresher node: run one with -c FILE, or: thresher node drain|undrain ID");
                return 2;
            }
            Properties props = new Properties();
            try (InputStream in = Files.newInputStream(config)) {
                props.load(in);
            } catch (IOException e) {
                System.err.println("cannot read " + config + ": " + e.getMessage());
                return 2;
            }
            Map<String, String> map = new HashMap<>();
            props.stringPropertyNames().forEach(k -> map.put(k, props.getProperty(k)));
            NodeConfig nodeConfig;
            try {
                nodeConfig = NodeConfig.fromPropertiesAndEnvironment(map, System.getenv());
            } catch (IllegalArgumentException e) {
                System.err.println(e.getMessage());
                return 2;
            }
            if (exitWith != null) {
                ParentWatch.exitWith(exitWith);
            }
            Node node = Node.start(nodeConfig);
            CountDownLatch stopped = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                node.close();
                stopped.countDown();
            }, "node-shutdown"));
            stopped.await();
            return 0;
        }
    }

    /** Where the cluster's control database is: a dev cluster's directory, or a JDBC URL and credentials. */
    static final class ClusterOptions {
        @Option(names = "--dev", defaultValue = ".thresher/dev",
                description = "A running dev cluster's directory (default ${DEFAULT-VALUE}); its endpoints.json names the databases.")
        Path dev;

        @Option(names = "--control-url", defaultValue = "${env:THRESHER_CONTROL_URL}",
                description = "The control database (JDBC URL; default $THRESHER_CONTROL_URL); overrides --dev.")
        String controlUrl;

        @Option(names = "--db-user", defaultValue = "${env:THRESHER_DB_USER}", description = "Database user (default $THRESHER_DB_USER).")
        String user;

        @Option(names = "--db-password", defaultValue = "${env:THRESHER_DB_PASSWORD}",
                description = "Database password (default $THRESHER_DB_PASSWORD).")
        String password;

        @Option(names = "--tenant", defaultValue = DevCluster.TENANT, description = "Tenant (default ${DEFAULT-VALUE}).")
        String tenant;

        /**
         * The dev cluster's endpoints file: under {@code --dev}; when that is the default and holds none, under the
         * nearest directory above the working one that has a running dev cluster's, so the commands work from a
         * project directory inside the repository too.
         */
        Path devEndpoints() {
            Path endpoints = dev.resolve("endpoints.json");
            if (Files.exists(endpoints) || dev.isAbsolute() || !dev.equals(Path.of(".thresher/dev"))) {
                return endpoints;
            }
            for (Path d = Path.of("").toAbsolutePath().getParent(); d != null; d = d.getParent()) {
                Path up = d.resolve(dev).resolve("endpoints.json");
                if (Files.exists(up)) {
                    return up;
                }
            }
            return endpoints;
        }

        TableAdmin admin() throws IOException {
            String url = controlUrl;
            String u = user;
            String pw = password;
            if (url == null || url.isBlank()) {
                Path endpoints = devEndpoints();
                if (!Files.exists(endpoints)) {
                    throw new IllegalArgumentException("no control database: pass --control-url, or start ./thresher dev"
                            + " (no " + endpoints + ")");
                }
                var tree = new com.fasterxml.jackson.databind.ObjectMapper().readTree(endpoints.toFile());
                url = tree.path("postgres").path("control").asText();
                u = u != null ? u : tree.path("user").asText(null);
                pw = pw != null ? pw : tree.path("password").asText(null);
            }
            return new TableAdmin(url, u, pw, System.out);
        }
    }

    /** A command run against the cluster's control database: opens the admin, runs, closes it. */
    abstract static class AdminCommand implements Callable<Integer> {
        @CommandLine.Mixin
        ClusterOptions cluster;

        abstract void run(TableAdmin admin) throws Exception;

        @Override
        public final Integer call() throws Exception {
            try (TableAdmin admin = cluster.admin()) {
                run(admin);
                return 0;
            }
        }
    }

    @Command(name = "table", description = "Create, list, show and drop tables.",
            subcommands = {Table.Create.class, Table.ListTables.class, Table.Show.class, Table.Alter.class, Table.Migrate.class,
                    Table.Drop.class})
    static final class Table implements Runnable {
        @Override
        public void run() {
            new CommandLine(this).usage(System.out);
        }

        @Command(name = "create", description = "Create a table on the shard databases, partitioned by its key's slot.")
        static final class Create extends AdminCommand {
            @Parameters(index = "0", description = "Table name (lower case).")
            String name;

            @Option(names = "--key", required = true, description = "The partition key column (smallint, integer, bigint, text, uuid or bytea).")
            String key;

            @Option(names = "--columns", required = true, description = "Columns, as in 'order_id bigint, region text not null, amount double precision not null'.")
            String columns;

            @Option(names = "--partitions", defaultValue = "16", description = "Partitions, tiling the 16384 slots (default ${DEFAULT-VALUE}).")
            int partitions;

            @Option(names = "--shards", split = ",", description = "Shard databases (ids or names) to spread the partitions"
                    + " over, and to keep them on: the table is resident there, a move elsewhere is refused (default: all,"
                    + " not pinned).")
            java.util.List<String> shards = new java.util.ArrayList<>();

            @Override
            void run(TableAdmin admin) {
                var created = admin.create(cluster.tenant, name, key, columns, partitions, admin.shardIds(shards));
                System.out.printf("created table %s: %d partitions over shards %s%n", name, created.size(),
                        created.stream().map(dev.thresher.topology.Partition::shardId).distinct().sorted().toList());
            }
        }

        @Command(name = "list", description = "List the tables.")
        static final class ListTables extends AdminCommand {
            @Override
            void run(TableAdmin admin) {
                admin.list(cluster.tenant).forEach(System.out::println);
            }
        }

        @Command(name = "show", description = "Show a table's key and partitions with their leaders.")
        static final class Show extends AdminCommand {
            @Parameters(index = "0", description = "Table name.")
            String name;

            @Override
            void run(TableAdmin admin) {
                admin.show(cluster.tenant, name).forEach(System.out::println);
            }
        }

        @Command(name = "alter", description = "Change a table's schema on every shard database holding it, as its next"
                + " migration (per-shard status in table show).")
        static final class Alter extends AdminCommand {
            @Parameters(index = "0", description = "Table name.")
            String name;

            @CommandLine.ArgGroup(exclusive = true, multiplicity = "1")
            Change change;

            static final class Change {
                @Option(names = "--add-column", description = "A column to add, as in 'discount double precision'.")
                String add;

                @Option(names = "--drop-column", description = "A column to drop (not the key).")
                String drop;
            }

            @Override
            void run(TableAdmin admin) {
                var info = admin.alter(cluster.tenant, name, change.add != null
                        ? new dev.thresher.bindings.TableService.Change.AddColumn(change.add)
                        : new dev.thresher.bindings.TableService.Change.DropColumn(change.drop));
                exitIfFailed(info);
            }
        }

        @Command(name = "migrate", description = "Apply a table's pending and failed migrations again, in order, on each shard.")
        static final class Migrate extends AdminCommand {
            @Parameters(index = "0", description = "Table name.")
            String name;

            @Override
            void run(TableAdmin admin) {
                exitIfFailed(admin.migrate(cluster.tenant, name));
            }
        }

        /** A migration still failed on some shard: say so, and end the command with a failure. */
        static void exitIfFailed(dev.thresher.bindings.TableService.TableInfo info) {
            var failed = info.migrations().stream().filter(m -> m.states().containsValue("failed")).toList();
            if (!failed.isEmpty()) {
                throw new ThresherException(dev.thresher.errors.ErrorCode.STORE_UNAVAILABLE, "migration(s) "
                        + failed.stream().map(m -> m.version() + " (" + m.description() + ") failed on " + m.errors()).toList()
                        + "; fix the cause and run thresher table migrate " + info.name());
            }
        }

        @Command(name = "drop", description = "Drop a table (refused while a binding reads it).")
        static final class Drop extends AdminCommand {
            @Parameters(index = "0", description = "Table name.")
            String name;

            @Override
            void run(TableAdmin admin) {
                admin.drop(cluster.tenant, name);
                System.out.println("dropped table " + name);
            }
        }
    }

    /** Who an admin command acts as, for the record of who deployed what: the operating system's user. */
    static String operator() {
        return "cli:" + System.getProperty("user.name", "unknown");
    }

    @Command(name = "deploy", description = "Deploy a component package: DIR holds thresher.json (the manifest) and the"
            + " module it names; everything is checked before anything is stored.")
    static final class Deploy extends AdminCommand {
        @Parameters(index = "0", description = "The package directory.")
        Path dir;

        @Override
        void run(TableAdmin admin) throws IOException {
            BindingAdmin.Deployed d = new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS)
                    .deployDir(cluster.tenant, operator(), dir);
            System.out.printf("%s %s version %d%n  package  %s%n  manifest %s%n", d.unchanged() ? "unchanged:" : "deployed",
                    d.binding(), d.version(), d.packageDigest(), d.manifestDigest());
        }
    }

    @Command(name = "binding", description = "Binding versions: list, show, history, rollback.",
            subcommands = {BindingCommand.ListBindings.class, BindingCommand.Show.class, BindingCommand.History.class,
                    BindingCommand.Rollback.class})
    static final class BindingCommand implements Runnable {
        @Override
        public void run() {
            new CommandLine(this).usage(System.out);
        }

        static String line(BindingAdmin.Version v) {
            return String.format("%-24s v%-4d %s  abi %s  by %-16s %s%s", v.binding(), v.version(),
                    v.packageDigest().substring(0, 19), v.abiVersion() == null ? "?" : v.abiVersion(), v.deployedBy(),
                    v.deployedAt().truncatedTo(java.time.temporal.ChronoUnit.SECONDS), v.note() == null ? "" : "  (" + v.note() + ")");
        }

        @Command(name = "list", description = "Each binding's current version.")
        static final class ListBindings extends AdminCommand {
            @Override
            void run(TableAdmin admin) {
                new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS).list(cluster.tenant)
                        .forEach(v -> System.out.println(line(v)));
            }
        }

        @Command(name = "show", description = "A binding's current version: package, manifest, selector, who deployed it.")
        static final class Show extends AdminCommand {
            @Parameters(index = "0", description = "Binding name.")
            String name;

            @Override
            void run(TableAdmin admin) {
                BindingAdmin b = new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS);
                BindingAdmin.Version v = b.show(cluster.tenant, name);
                System.out.printf("binding %s version %d%n  package   %s%n  manifest  %s%n  abi       %s%n  selector  %s%n"
                                + "  deployed  by %s at %s%s%n", v.binding(), v.version(), v.packageDigest(),
                        v.manifestDigest() == null ? "(none)" : v.manifestDigest(), v.abiVersion() == null ? "?" : v.abiVersion(),
                        v.selector() == null ? "(none: an HTTP handler)" : v.selector(), v.deployedBy(),
                        v.deployedAt().truncatedTo(java.time.temporal.ChronoUnit.SECONDS),
                        v.note() == null ? "" : " (" + v.note() + ")");
                b.manifest(v.manifestDigest()).ifPresent(m -> System.out.println("  manifest:\n" + m.strip().indent(4).stripTrailing()));
            }
        }

        @Command(name = "history", description = "Every version of a binding, oldest first.")
        static final class History extends AdminCommand {
            @Parameters(index = "0", description = "Binding name.")
            String name;

            @Override
            void run(TableAdmin admin) {
                new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS).history(cluster.tenant, name)
                        .forEach(v -> System.out.println(line(v)));
            }
        }

        @Command(name = "rollback", description = "A new version of a binding pinning what an older version pinned.")
        static final class Rollback extends AdminCommand {
            @Parameters(index = "0", description = "Binding name.")
            String name;

            @Option(names = "--to", required = true, description = "The version to go back to.")
            int to;

            @Override
            void run(TableAdmin admin) {
                BindingAdmin.Deployed d = new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS)
                        .rollback(cluster.tenant, name, to, operator());
                System.out.printf("rolled back %s: version %d pins version %d's package %s%n", name, d.version(), to,
                        d.packageDigest());
            }
        }
    }

    @Command(name = "load", description = "Load a CSV file into a table, each row to the shard its key's slot names.")
    static final class Load extends AdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String table;

        @Parameters(index = "1", description = "The CSV file (RFC 4180; UTF-8).")
        Path file;

        @Option(names = "--header", description = "The first line names the columns.")
        boolean header;

        @Override
        void run(TableAdmin admin) throws IOException {
            try (var in = Files.newBufferedReader(file, java.nio.charset.StandardCharsets.UTF_8)) {
                CsvLoader.Loaded loaded = new CsvLoader(admin, System.err).load(cluster.tenant, table, in, header);
                System.out.printf("loaded %,d rows into %s in %,d ms (%s)%n", loaded.rows(), table, loaded.millis(),
                        loaded.rowsByShard().entrySet().stream().map(e -> "shard " + e.getKey() + ": " + e.getValue())
                                .collect(java.util.stream.Collectors.joining(", ")));
            } catch (ThresherException e) {
                if (e.code() == dev.thresher.errors.ErrorCode.STORE_UNAVAILABLE) {
                    throw e; // says itself what was committed
                }
                throw new ThresherException(e.code(), e.getMessage() + "; nothing was loaded", e);
            }
        }
    }

    /** A topology change: checked, planned only with {@code --dry-run}, audited; prints each step, then the outcome. */
    abstract static class TopologyChangeCommand extends AdminCommand {
        @Option(names = "--dry-run", description = "Check and plan the change; change nothing.")
        boolean dryRun;

        abstract TopologyService.Change change(TopologyAdmin t, String requestedBy);

        @Override
        final void run(TableAdmin admin) {
            TopologyService.Change c = change(new TopologyAdmin(admin, dev.thresher.limits.Limits.DEFAULTS, System.out),
                    System.getProperty("user.name", "unknown") + "@cli");
            System.out.println((c.dryRun() ? "planned (dry run, nothing changed)" : c.outcome()) + ": change "
                    + c.changeId() + ", " + c.command());
        }
    }

    @Command(name = "partition", description = "Move or split a partition.",
            subcommands = {PartitionCommand.Split.class, PartitionCommand.Move.class})
    static final class PartitionCommand implements Runnable {
        @Override
        public void run() {
            new CommandLine(this).usage(System.out);
        }

        @Command(name = "split", description = "Split a partition in two on its shard (no row moves): the new partition"
                + " starts at --at (default: the middle slot); both move to a new epoch, led by the same node.")
        static final class Split extends TopologyChangeCommand {
            @Parameters(index = "0", description = "The partition's id.")
            int partition;

            @Option(names = "--at", description = "The first slot of the new partition.")
            Integer at;

            @Override
            TopologyService.Change change(TopologyAdmin t, String by) {
                return t.splitPartition(by, partition, at == null ? java.util.OptionalInt.empty()
                        : java.util.OptionalInt.of(at), dryRun);
            }
        }

        @Command(name = "move", description = "Move a partition to another shard database: copy, verify (count and"
                + " checksum), cut over to a new epoch, remove the source rows. Asked again, an interrupted move resumes.")
        static final class Move extends TopologyChangeCommand {
            @Parameters(index = "0", description = "The partition's id.")
            int partition;

            @Option(names = "--to", required = true, description = "The target shard's id or name.")
            String to;

            @Override
            TopologyService.Change change(TopologyAdmin t, String by) {
                return t.movePartition(by, partition, to, dryRun);
            }
        }
    }

    @Command(name = "leader", description = "Partition leadership: transfer.", subcommands = {LeaderCommand.Transfer.class})
    static final class LeaderCommand implements Runnable {
        @Override
        public void run() {
            new CommandLine(this).usage(System.out);
        }

        @Command(name = "transfer", description = "Hand a partition's leadership to another live candidate of its shard;"
                + " waits until it leads.")
        static final class Transfer extends TopologyChangeCommand {
            @Parameters(index = "0", description = "The partition's id.")
            int partition;

            @Option(names = "--to", required = true, description = "The node to lead it.")
            String to;

            @Override
            TopologyService.Change change(TopologyAdmin t, String by) {
                return t.transferLeader(by, partition, to, dryRun);
            }
        }
    }

    @Command(name = "shard", description = "Shard databases: list, add, remove.",
            subcommands = {ShardCommand.List.class, ShardCommand.Add.class, ShardCommand.Remove.class})
    static final class ShardCommand implements Runnable {
        @Override
        public void run() {
            new CommandLine(this).usage(System.out);
        }

        @Command(name = "list", description = "Each shard database: id, name, partitions, candidate nodes.")
        static final class List extends AdminCommand {
            @Override
            void run(TableAdmin admin) {
                var t = admin.control().readTopology();
                for (var e : admin.shardNames().entrySet()) {
                    int id = e.getKey();
                    long partitions = t.partitions().stream().filter(p -> p.shardId() == id).count();
                    System.out.printf("%-4d %-20s %4d partitions  candidates %s%n", id, e.getValue(), partitions,
                            t.candidatesOf(id).stream().map(c -> c.hostId() + (c.home() ? " (home)" : ""))
                                    .collect(java.util.stream.Collectors.joining(", ", "[", "]")));
                }
            }
        }

        @Command(name = "add", description = "Register a shard database (checked reachable and writable first).")
        static final class Add extends TopologyChangeCommand {
            @Parameters(index = "0", description = "Its JDBC URL (jdbc:postgresql://host:port/db).")
            String url;

            @Option(names = "--name", description = "Its name (default shard-<id>).")
            String name;

            @Override
            TopologyService.Change change(TopologyAdmin t, String by) {
                return t.addShard(by, url, java.util.Optional.ofNullable(name), dryRun);
            }
        }

        @Command(name = "remove", description = "Remove a shard database (refused while it holds partitions or is a"
                + " node's home shard).")
        static final class Remove extends TopologyChangeCommand {
            @Parameters(index = "0", description = "The shard's id or name.")
            String shard;

            @Override
            TopologyService.Change change(TopologyAdmin t, String by) {
                return t.removeShard(by, shard, dryRun);
            }
        }
    }

    @Command(name = "topology", description = "The topology: show, and the audit of changes.",
            subcommands = {TopologyCommand.Show.class, TopologyCommand.Changes.class})
    static final class TopologyCommand implements Runnable {
        @Override
        public void run() {
            new CommandLine(this).usage(System.out);
        }

        @Command(name = "show", description = "The topology as the control database holds it: byte-stable JSON (sorted"
                + " keys), the same document a node serves at GET /admin/topology, so the two can be compared with diff.")
        static final class Show extends AdminCommand {
            @Override
            void run(TableAdmin admin) {
                var control = admin.control();
                long version = control.readTopologyVersion();
                System.out.print(TopologyView.render(version, control.readTopology()));
            }
        }

        @Command(name = "changes", description = "The audit of topology changes, newest first: who, when, what, outcome.")
        static final class Changes extends AdminCommand {
            @Option(names = "--limit", defaultValue = "20", description = "How many (default ${DEFAULT-VALUE}).")
            int limit;

            @Option(names = "--steps", description = "Each change's steps too.")
            boolean steps;

            @Override
            void run(TableAdmin admin) {
                for (TopologyService.Change c : new TopologyAdmin(admin, dev.thresher.limits.Limits.DEFAULTS, System.out).changes(limit)) {
                    System.out.printf("%6d  %s  %-10s %-20s %s%n", c.changeId(), c.requestedAt(), c.outcome(),
                            c.requestedBy(), c.command());
                    if (steps) {
                        c.steps().forEach(s -> System.out.println("        " + s));
                    }
                }
            }
        }
    }

    @Command(name = "component", description = "Work on a component package without a cluster: test.",
            subcommands = {ComponentCommand.Test.class})
    static final class ComponentCommand implements Runnable {
        @Override
        public void run() {
            new CommandLine(this).usage(System.out);
        }

        @Command(name = "test", description = "Run a package's run on every simulated partition of a CSV file's rows and"
                + " its reduce on the merged partials, on the real host code, without a cluster or PostgreSQL; print the"
                + " partials per partition and the result.")
        static final class Test implements Callable<Integer> {
            @Parameters(index = "0", description = "The package directory (thresher.json and its module).")
            Path dir;

            @Option(names = "--table", description = "Read the rows of this table of a running cluster instead, partition by"
                    + " partition, with the selector's columns and filter (reach the cluster as the admin commands do).")
            String table;

            @CommandLine.Mixin
            ClusterOptions cluster;

            @Option(names = "--csv", description = "The rows the selector selects: a header naming its"
                    + " columns (name or name:type, type one of int8, float8, text, bool, bytea; a trailing ? makes a column"
                    + " nullable), then one record per row; an unquoted empty field is NULL.")
            Path csv;

            @Option(names = "--partitions", defaultValue = "1", description = "Partitions to deal the rows to, in order"
                    + " (default ${DEFAULT-VALUE}).")
            int partitions;

            @Option(names = "--args", defaultValue = "{}", description = "The call's JSON arguments (default ${DEFAULT-VALUE}).")
            String args;

            @Override
            public Integer call() throws IOException {
                if (partitions < 1 || partitions > dev.thresher.limits.Limits.DEFAULTS.coordinationSlots()) {
                    throw new IllegalArgumentException("--partitions: 1 to " + dev.thresher.limits.Limits.DEFAULTS.coordinationSlots()
                            + " (limits.coordinationSlots), was " + partitions);
                }
                var limits = dev.thresher.limits.Limits.DEFAULTS;
                dev.thresher.coordinator.Coordinator.checkArguments(args, limits); // as a cluster checks a call's
                BindingAdmin.Package pkg = BindingAdmin.read(dir, limits);
                BindingAdmin.Checked checked = BindingAdmin.check(pkg.manifest(), pkg.module(), limits);
                if (checked.manifest().handler()) {
                    throw new IllegalArgumentException(dir + " is an HTTP handler: deploy it and send it requests"
                            + " (docs/components.md, \"HTTP handlers\"); component test runs run and reduce");
                }
                dev.thresher.bindings.Selector selector = dev.thresher.bindings.Selector.parse(checked.manifest().selector());
                if ((csv == null) == (table == null)) {
                    throw new IllegalArgumentException("pass --csv FILE, or --table NAME to read a running cluster's table");
                }
                ComponentHarness harness = new ComponentHarness(limits);
                java.util.Map<String, String> heading = new java.util.LinkedHashMap<>();
                heading.put("component", checked.manifest().binding() + " (guest ABI " + checked.manifest().abiVersion()
                        + ", " + BindingAdmin.sha256(checked.wasm()) + ")");
                java.util.List<ComponentHarness.PartitionInput> inputs;
                if (csv != null) {
                    ComponentHarness.Rows rows;
                    try (var reader = java.nio.file.Files.newBufferedReader(csv)) {
                        rows = ComponentHarness.readCsv(reader, selector);
                    }
                    heading.put("rows", rows.rows().size() + " from " + csv + " as " + rows.columns().stream()
                            .map(c -> c.name() + " " + c.type().name().toLowerCase(java.util.Locale.ROOT) + (c.nullable() ? "" : " not null"))
                            .toList() + (selector.where().isPresent() ? "; the selector's WHERE is not applied" : ""));
                    inputs = harness.deal(rows, partitions, checked.manifest().abiVersion());
                } else {
                    try (TableAdmin admin = cluster.admin()) {
                        inputs = harness.fromTable(admin, cluster.tenant, table, selector, checked.manifest().abiVersion());
                    }
                    heading.put("rows", inputs.stream().mapToLong(ComponentHarness.PartitionInput::rows).sum() + " from table "
                            + table + " in " + inputs.size() + " partitions, with the selector's filter");
                }
                ComponentHarness.Outcome outcome = harness.run(checked, inputs, args);
                System.out.print(ComponentHarness.describe(outcome, heading));
                return outcome.succeeded() ? 0 : 1;
            }
        }
    }

    @Command(name = "slot", description = "Print the slot of a bigint key, or of a text key with --text.")
    static final class Slot implements Callable<Integer> {
        @Parameters(index = "0", description = "The key.")
        String key;

        @Option(names = "--text", description = "Hash the key as text (UTF-8) instead of bigint.")
        boolean text;

        @Override
        public Integer call() {
            if (text) {
                System.out.println(Slots.ofText(key));
                return 0;
            }
            try {
                System.out.println(Slots.ofLong(Long.parseLong(key)));
                return 0;
            } catch (NumberFormatException e) {
                System.err.println("'" + key + "' is not a bigint; pass --text to hash it as text");
                return 2;
            }
        }
    }
}
