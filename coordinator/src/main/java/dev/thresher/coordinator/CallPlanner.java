package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import dev.thresher.topology.Tiling;
import dev.thresher.topology.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/**
 * Resolves a binding's selector to the partitions it covers, without reading rows. Pure: the
 * same binding, topology and identity always give the same plan.
 */
public final class CallPlanner {
    private CallPlanner() {}

    /**
     * @throws ThresherException {@link ErrorCode#INVALID_SELECTOR} when the table has no partitions,
     *     {@link ErrorCode#PARTITIONS_DO_NOT_TILE} when they leave a slot out or hold one twice (the call
     *     would leave rows out of its answer or count them twice),
     *     {@link ErrorCode#TOO_MANY_COORDINATION_SLOTS} past the limit (never a silent truncation),
     *     {@link ErrorCode#CELL_UNAVAILABLE} when a partition has no live leader
     */
    public static CallPlan plan(UUID callId, Binding binding, Topology topology, Limits limits) {
        List<Partition> partitions = topology.partitionsOf(binding.tenant(), binding.selector().table());
        if (partitions.isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_SELECTOR, "binding " + binding.name() + " reads table '"
                    + binding.selector().table() + "', which has no partitions");
        }
        Optional<String> tiling = Tiling.problem(partitions);
        if (tiling.isPresent()) {
            throw new ThresherException(ErrorCode.PARTITIONS_DO_NOT_TILE, "binding " + binding.name() + " reads table '"
                    + binding.selector().table() + "', whose partitions do not tile the " + Slots.COUNT + " slots: "
                    + tiling.get() + "; no call runs over it until they do");
        }
        if (partitions.size() > limits.coordinationSlots()) {
            throw new ThresherException(ErrorCode.TOO_MANY_COORDINATION_SLOTS, "binding " + binding.name()
                    + " covers " + partitions.size() + " partitions; a call may cover at most "
                    + limits.coordinationSlots());
        }
        List<ShardTarget> targets = new ArrayList<>(partitions.size());
        for (int i = 0; i < partitions.size(); i++) {
            Partition p = partitions.get(i);
            final int slot = i;
            Host leader = topology.leaderOf(p).orElseThrow(() -> new ThresherException(ErrorCode.CELL_UNAVAILABLE,
                    "partition " + p.id() + " (slot " + slot + ") has no live leader"));
            targets.add(new ShardTarget(i, p, leader, shardWireId(callId, i)));
        }
        return new CallPlan(callId, binding, targets, reduceWireId(callId));
    }

    /** The wire identity of one shard run: the same call and slot always give the same identity. */
    public static String shardWireId(UUID callId, int runIndex) {
        return callId + "/shard/" + runIndex;
    }

    /** The wire identity of a call's reduction. */
    public static String reduceWireId(UUID callId) {
        return callId + "/reduce";
    }
}
