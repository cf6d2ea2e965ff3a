package dev.thresher.topology;

import java.util.Objects;

/**
 * A node as the topology knows it.
 *
 * @param hostId stable node id
 * @param shardId the shard database the node is attached to (its local replica)
 * @param wireHost address of its node-to-node protocol
 * @param wirePort port of its node-to-node protocol
 */
public record Host(String hostId, int shardId, String wireHost, int wirePort) {
    public Host {
        Objects.requireNonNull(hostId, "hostId");
        Objects.requireNonNull(wireHost, "wireHost");
    }
}
