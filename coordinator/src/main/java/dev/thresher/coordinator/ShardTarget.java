package dev.thresher.coordinator;

import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import java.util.Objects;

/**
 * One coordination slot of a call: which partition, on which leader, under which wire identity.
 *
 * @param runIndex the slot's stable position in the call (partition slot order); failures surface in this order
 * @param partition the partition as planned, epoch included
 * @param leader the node holding the partition's leadership when planned
 * @param wireId the wire identity of this shard run, derived from the call's base identity
 */
public record ShardTarget(int runIndex, Partition partition, Host leader, String wireId) {
    public ShardTarget {
        Objects.requireNonNull(partition, "partition");
        Objects.requireNonNull(leader, "leader");
        Objects.requireNonNull(wireId, "wireId");
    }
}
