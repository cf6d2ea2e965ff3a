package dev.thresher.bindings;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Changes of the topology an operator asks for, as the front doors reach them ({@code /admin/partitions},
 * {@code /admin/nodes}, {@code /admin/shards} over HTTP) and the command line does ({@code thresher partition},
 * {@code thresher leader}, {@code thresher node drain}, {@code thresher shard}). Each change is checked before
 * anything is changed, may be asked for as a dry run (checked and planned, nothing changed), and is audited:
 * who asked, when, what, and how it ended, dry runs and refusals included. Implemented by the node; every method
 * blocks.
 */
public interface TopologyService {

    /**
     * One audited change.
     *
     * @param changeId its row in the audit ({@code topology_changes})
     * @param command what was asked, as the command line spells it
     * @param dryRun whether it was only planned
     * @param outcome {@code planned} (a dry run), {@code succeeded}, {@code failed}, {@code refused} or {@code running}
     * @param steps what was checked and done, in order
     * @param requestedBy who asked
     * @param requestedAt when, by the control database's clock
     */
    record Change(long changeId, String command, boolean dryRun, String outcome, List<String> steps, String requestedBy,
                  Instant requestedAt) {
    }

    /** Splits a partition in two at {@code at} (the first slot of the new partition; default: the middle). */
    Change splitPartition(String requestedBy, int partitionId, OptionalInt at, boolean dryRun);

    /**
     * Moves a partition to another shard database: copy, verify (row count and a content checksum), one atomic
     * cutover that moves it to a new epoch, then the source rows removed. A move interrupted in any phase is
     * resumed by asking for it again.
     *
     * @param toShard the target shard's id or name
     */
    Change movePartition(String requestedBy, int partitionId, String toShard, boolean dryRun);

    /** Hands a partition's leadership to another candidate node of its shard. */
    Change transferLeader(String requestedBy, int partitionId, String toHost, boolean dryRun);

    /** Stops a node leading partitions: its leases pass to other candidates; refused when one would have none. */
    Change drainNode(String requestedBy, String hostId, boolean dryRun);

    /** Lets a drained node lead again (its own shard's partitions come back to it once it is settled). */
    Change undrainNode(String requestedBy, String hostId, boolean dryRun);

    /** Registers a shard database, once it is reachable and writable. */
    Change addShard(String requestedBy, String jdbcUrl, Optional<String> name, boolean dryRun);

    /** Removes a shard database from the cluster; refused while it holds partitions or a node is attached to it. */
    Change removeShard(String requestedBy, String shard, boolean dryRun);

    /** The most recent audited changes, newest first. */
    List<Change> changes(int limit);

    /** A node that may lead a shard's partitions: its home node, or one standing by for it. */
    record ShardCandidate(String host, boolean home) {}

    /** A shard database as the control database records it: its name, how many partitions it holds, its candidates. */
    record Shard(int id, String name, int partitions, List<ShardCandidate> candidates) {}

    /** Every shard database, by id. */
    List<Shard> shards();

    /**
     * The topology as the control database holds it, rendered as a node renders its own view for
     * {@code GET /admin/topology} (byte-stable JSON), so the two can be compared with diff.
     */
    String controlView();

    /**
     * One partition as this node's leader replicas hold it.
     *
     * @param partition the partition's id
     * @param shard its shard database
     * @param state {@code memory} (reads served from memory), {@code building} (being copied; reads through SQL)
     *     or {@code sql} (read through SQL: see {@code reason})
     * @param appliedLsn the WAL position the replica has applied, PostgreSQL's {@code X/Y} form
     * @param lagBytes WAL the shard database has sent past it
     */
    record ReplicaPartition(int partition, String table, int shard, String state, long rows, long bytes,
                            String appliedLsn, long lagBytes, String reason) {}

    /**
     * This node's leader replicas: memory against {@code limits.replicaMemoryBytes}, each partition of the shard
     * databases it is a candidate for, and how reads went (served from memory, or through SQL by reason).
     */
    record Replicas(long budgetBytes, long usedBytes, List<ReplicaPartition> partitions, long readsFromMemory,
                    java.util.Map<String, Long> readsThroughSqlByReason) {}

    /** This node's leader replicas ({@code GET /admin/topology/replicas}); node-local, not part of the topology. */
    default Replicas replicas() {
        return new Replicas(0, 0, List.of(), 0, java.util.Map.of());
    }
}
