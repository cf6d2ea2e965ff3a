package dev.thresher.leader;

import dev.thresher.topology.Partition;
import java.util.Optional;

/** Whether this node leads a partition under an epoch right now, by its local view of its leases. */
public interface Leadership {

    /** The partition when this node leads it under {@code epoch} now; empty otherwise. */
    Optional<Partition> ledPartition(int partitionId, long epoch);

    /** The node's lease keeper. */
    static Leadership of(LeaseKeeper leases) {
        return leases::ledPartition;
    }
}
