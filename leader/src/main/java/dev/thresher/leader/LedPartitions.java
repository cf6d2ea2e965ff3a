package dev.thresher.leader;

import dev.thresher.topology.Partition;
import java.util.Optional;

/** Which partitions this node leads right now, under which epoch, by its local view of its leases. */
public interface LedPartitions {

    /** The partition when this node leads it under {@code epoch} now; empty otherwise. */
    Optional<Partition> ledPartition(int partitionId, long epoch);

    /** The node's lease keeper. */
    static LedPartitions of(LeaseKeeper leases) {
        return leases::ledPartition;
    }
}
