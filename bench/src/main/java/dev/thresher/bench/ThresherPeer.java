package dev.thresher.bench;

import dev.thresher.coordinator.CallPhases;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import dev.thresher.store.replica.ShardReplica;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Thresher over pgwire with pgjdbc: each client holds one connection to one node (clients are spread over
 * the nodes) and one {@link PreparedStatement} {@code CALL BINDING <name>('{}')}, executed past pgjdbc's
 * {@code prepareThreshold} (5) in the warm-up, so measured calls run a server-side named statement.
 *
 * <p>Two peers are of this class: {@value #NAME}, whose nodes keep leader replicas (partitions in memory, the
 * default {@code limits.replicaMemoryBytes}), and {@value #SQL_NAME}, a dev cluster of its own whose nodes run
 * with {@code limits.replicaMemoryBytes=0}, so every partition is read through SQL.
 */
final class ThresherPeer implements Peer {
    static final String NAME = "thresher";
    static final String SQL_NAME = "thresher-sql";

    private final String name;
    private final DevCluster cluster;

    ThresherPeer(String name, DevCluster cluster) {
        this.name = name;
        this.cluster = cluster;
    }

    @Override
    public String name() {
        return name;
    }

    /** Whether the nodes keep leader replicas ({@code limits.replicaMemoryBytes} above 0). */
    boolean replicasOn() {
        return cluster.options().limits().replicaMemoryBytes() > 0;
    }

    @Override
    public String description() {
        String call = "Thresher: `CALL BINDING <name>('{}')`, a pgjdbc prepared statement on one of the "
                + cluster.nodes().size() + " nodes (clients round-robin over nodes); guests run on GraalWasm";
        return replicasOn()
                ? call + "; leader replicas on (`limits.replicaMemoryBytes` = " + mib(cluster.options().limits().replicaMemoryBytes())
                        + " MiB): a partition is read from the leader's memory once it has applied the shard database's WAL"
                        + " position taken at the shard run's start"
                : call + "; leader replicas off (`limits.replicaMemoryBytes=0`): every partition is read through SQL, the path"
                        + " before replicas. A dev cluster of its own: embedded PostgreSQL servers of its own with the same settings and rows";
    }

    private static String mib(long bytes) {
        return bytes % (1 << 20) == 0 ? String.valueOf(bytes >> 20) : String.format(java.util.Locale.ROOT, "%.1f", bytes / 1048576.0);
    }

    @Override
    public Client open(Shape shape, int index) throws Exception {
        Node node = cluster.nodes().get(index % cluster.nodes().size());
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        // in clear, as the PostgreSQL peers' connections are (the embedded servers offer no TLS): the same transport
        p.setProperty("sslmode", "disable");
        Connection c = DriverManager.getConnection("jdbc:postgresql://" + node.pgwireAddress() + "/thresher", p);
        PreparedStatement s = c.prepareStatement("CALL BINDING " + shape.binding() + "('{}')");
        return new Client() {
            @Override
            public Object call() throws Exception {
                try (ResultSet rs = s.executeQuery()) {
                    if (!rs.next()) {
                        throw new IllegalStateException("CALL BINDING returned no row");
                    }
                    return rs.getString(1);
                }
            }

            @Override
            public Answer answer(Object raw) {
                return Answer.ofJson((String) raw);
            }

            @Override
            public void close() throws SQLException {
                s.close();
                c.close();
            }
        };
    }

    /** Every node's call-phase totals and replica reads, summed: a call is timed on the node that coordinated it. */
    Counters counters() {
        long calls = 0;
        Map<CallPhases.Phase, Long> nanos = new EnumMap<>(CallPhases.Phase.class);
        long memory = 0;
        Map<String, Long> sql = new TreeMap<>();
        for (Node n : cluster.nodes()) {
            CallPhases.Snapshot s = n.coordinator().phases().snapshot();
            calls += s.calls();
            s.totalNanos().forEach((phase, v) -> nanos.merge(phase, v, Long::sum));
            for (ShardReplica r : n.replicas().values()) {
                ShardReplica.Reads reads = r.reads();
                memory += reads.memory();
                reads.sqlByReason().forEach((reason, v) -> sql.merge(reason, v, Long::sum));
            }
        }
        return new Counters(new CallPhases.Snapshot(calls, nanos), new ReplicaReads(replicasOn(), memory, sql));
    }

    /**
     * What is not yet served from memory: one line per partition some node holds in a state other than memory, and
     * one per partition of {@code 0..partitions-1} no node holds in memory. Empty when every partition is in memory
     * on every node that keeps it (or when replicas are off).
     */
    List<String> replicasNotInMemory(int partitions) {
        if (!replicasOn()) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        Set<Integer> inMemory = new TreeSet<>();
        for (Node n : cluster.nodes()) {
            if (n.replicas().isEmpty()) {
                out.add(n.hostId() + ": no replica");
            }
            for (ShardReplica r : n.replicas().values()) {
                for (ShardReplica.PartitionStatus p : r.status()) {
                    if (p.state() == ShardReplica.State.MEMORY) {
                        inMemory.add(p.partitionId());
                    } else {
                        out.add(n.hostId() + ": partition " + p.partitionId() + " of shard " + p.shardId() + " "
                                + p.state().name().toLowerCase(java.util.Locale.ROOT) + (p.reason().isEmpty() ? "" : " (" + p.reason() + ")"));
                    }
                }
            }
        }
        for (int id = 0; id < partitions; id++) {
            if (!inMemory.contains(id)) {
                out.add("partition " + id + ": in memory on no node");
            }
        }
        return out;
    }

    /** The nodes' counters at one instant: the call phases and the leader replicas' reads. */
    record Counters(CallPhases.Snapshot phases, ReplicaReads reads) {
        Counters minus(Counters earlier) {
            return new Counters(phases.minus(earlier.phases), reads.minus(earlier.reads));
        }
    }

    /**
     * Partition reads the leader replicas answered, summed over the nodes ({@code ShardReplica.reads()}, what
     * {@code thresher_replica_reads_total} counts).
     *
     * @param replicasOn whether the nodes keep replicas at all ({@code limits.replicaMemoryBytes} above 0)
     * @param memory reads served from memory
     * @param sqlByReason reads the replica sent through SQL, by its reason
     */
    record ReplicaReads(boolean replicasOn, long memory, Map<String, Long> sqlByReason) {
        ReplicaReads {
            sqlByReason = java.util.Collections.unmodifiableMap(new TreeMap<>(sqlByReason));
        }

        long sql() {
            return sqlByReason.values().stream().mapToLong(Long::longValue).sum();
        }

        ReplicaReads minus(ReplicaReads earlier) {
            Map<String, Long> m = new TreeMap<>();
            sqlByReason.forEach((reason, n) -> {
                long d = n - earlier.sqlByReason.getOrDefault(reason, 0L);
                if (d != 0) {
                    m.put(reason, d);
                }
            });
            return new ReplicaReads(replicasOn, memory - earlier.memory, m);
        }
    }
}
