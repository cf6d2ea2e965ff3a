package dev.thresher.server.cli;

import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.dev.DevProcesses;
import dev.thresher.server.dev.DevRecovery;
import dev.thresher.server.node.Node;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

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
final class DevCommand implements Callable<Integer> {
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
