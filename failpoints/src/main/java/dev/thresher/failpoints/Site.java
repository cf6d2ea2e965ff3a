package dev.thresher.failpoints;

/**
 * Where a failpoint was reached, so an armed failpoint can pick the hits it applies to.
 *
 * @param hostId the node
 * @param partitionId the partition involved, or -1
 * @param runIndex the shard run's index in its call, or -1
 * @param wireId the wire identity involved, or empty
 */
public record Site(String hostId, int partitionId, int runIndex, String wireId) {
    public static Site of(String hostId) {
        return new Site(hostId, -1, -1, "");
    }
}
