package dev.thresher.server.node;

import dev.thresher.bindings.TopologyService;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ControlCache;
import dev.thresher.store.replica.Lsn;
import dev.thresher.store.replica.ReplicaBudget;
import dev.thresher.store.replica.ShardReplica;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's leader replicas: one per shard database the node is a candidate for, every partition of the shard, led
 * here or stood by for, kept in memory from the shard's logical replication stream within one memory budget
 * ({@code limits.replicaMemoryBytes}; none when it is 0) (docs/architecture.md, "Leader replicas").
 */
final class NodeReplicas {
    private static final Logger log = LoggerFactory.getLogger(Node.class);

    /** The leader replicas of each shard database this node is a candidate for. */
    private final Map<Integer, ShardReplica> replicas = new TreeMap<>();
    private ReplicaBudget budget;

    /** Starts a replica of each shard database at its URL, unless the memory budget is 0. */
    void start(NodeConfig config, Limits limits, Map<Integer, String> shardUrls, ControlCache catalog,
               NodeMetrics metrics) {
        budget = new ReplicaBudget(limits.replicaMemoryBytes());
        if (!budget.enabled()) {
            log.info("node {}: leader replicas off (limits.replicaMemoryBytes=0); partitions are read through SQL",
                    config.hostId());
            return;
        }
        shardUrls.forEach((shard, url) -> replicas.put(shard, ShardReplica.start(
                config.hostId(), shard, url, config.dbUser(), config.dbPassword(),
                () -> catalog.topology().partitions().stream().filter(p -> p.shardId() == shard).toList(),
                budget, limits.replicaCatchUpMs())));
        metrics.bindReplicas(replicas, budget);
    }

    /** The replicas by shard database, as the leader side reads partitions through them. */
    Map<Integer, ShardReplica> byShard() {
        return replicas;
    }

    /** The replicas by shard database, not to be changed. */
    Map<Integer, ShardReplica> view() {
        return Collections.unmodifiableMap(replicas);
    }

    /** The node's leader replicas as {@code GET /admin/topology/replicas} shows them. */
    TopologyService.Replicas status() {
        List<TopologyService.ReplicaPartition> partitions = new ArrayList<>();
        long memory = 0;
        Map<String, Long> sql = new TreeMap<>();
        for (var replica : replicas.values()) {
            for (var p : replica.status()) {
                partitions.add(new TopologyService.ReplicaPartition(p.partitionId(), p.table(),
                        p.shardId(), p.state().name().toLowerCase(Locale.ROOT), p.rows(), p.bytes(),
                        Lsn.format(p.appliedLsn()), p.lagBytes(), p.reason()));
            }
            var reads = replica.reads();
            memory += reads.memory();
            reads.sqlByReason().forEach((reason, n) -> sql.merge(reason, n, Long::sum));
        }
        partitions.sort(Comparator.comparingInt(TopologyService.ReplicaPartition::partition));
        return new TopologyService.Replicas(budget == null ? 0 : budget.limitBytes(),
                budget == null ? 0 : budget.usedBytes(), partitions, memory, sql);
    }
}
