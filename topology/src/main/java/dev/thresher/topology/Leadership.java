package dev.thresher.topology;

import java.time.Instant;
import java.util.Objects;

/**
 * Who leads a partition, under which epoch, until when.
 *
 * @param partitionId the partition
 * @param hostId the leader
 * @param epoch the partition epoch the lease was taken under
 * @param leaseUntil the lease end, by the control database's clock
 */
public record Leadership(int partitionId, String hostId, long epoch, Instant leaseUntil) {
    public Leadership {
        Objects.requireNonNull(hostId, "hostId");
        Objects.requireNonNull(leaseUntil, "leaseUntil");
    }
}
