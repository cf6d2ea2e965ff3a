package dev.thresher.topology;

import java.util.Objects;

/**
 * A node that may lead the partitions of a shard database.
 *
 * @param hostId the node
 * @param shardId the shard database it can read
 * @param home whether it is the node's home shard: a home candidate takes a free lease at once, a standby only while
 *     no home candidate of the shard is live
 */
public record Candidate(String hostId, int shardId, boolean home) {
    public Candidate {
        Objects.requireNonNull(hostId, "hostId");
    }
}
