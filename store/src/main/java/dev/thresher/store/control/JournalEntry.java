package dev.thresher.store.control;

import java.util.Objects;
import java.util.UUID;

/**
 * One component outcome, journaled by (tenant, wire identity).
 *
 * @param kind {@code shard} or {@code reduce}
 * @param succeeded whether the component produced an outcome; a failed outcome keeps its code and message
 * @param payload shard: the partials encoding; reduce: the result JSON in UTF-8; null when failed
 * @param partitionId shard: the partition; reduce: -1
 * @param epoch shard: the epoch the run was fenced by; reduce: -1
 */
public record JournalEntry(String tenant, String wireId, UUID callId, String kind, String hostId, int partitionId,
                           long epoch, boolean succeeded, int errorCode, String errorMessage, int rowCount,
                           int emitCount, byte[] payload, long guestMicros) {
    public static final String SHARD = "shard";
    public static final String REDUCE = "reduce";

    public JournalEntry {
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(wireId, "wireId");
        Objects.requireNonNull(callId, "callId");
        if (!SHARD.equals(kind) && !REDUCE.equals(kind)) {
            throw new IllegalArgumentException("kind is shard or reduce, was " + kind);
        }
        Objects.requireNonNull(hostId, "hostId");
        if (succeeded && payload == null) {
            throw new IllegalArgumentException("a successful outcome has a payload");
        }
    }
}
