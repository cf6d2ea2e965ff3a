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
 * @param guestStartedAtMicros shard: the latest time, on the control database's clock (microseconds since the
 *     epoch), at which the leader decided to start the guest, an upper bound from its clock reading; 0 when
 *     unknown (a reduce, a replay read back from the journal)
 */
public record JournalEntry(String tenant, String wireId, UUID callId, String kind, String hostId, int partitionId,
                           long epoch, boolean succeeded, int errorCode, String errorMessage, int rowCount,
                           int emitCount, byte[] payload, long guestMicros, long guestStartedAtMicros) {
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

    /** An outcome whose guest start time is not known. */
    public JournalEntry(String tenant, String wireId, UUID callId, String kind, String hostId, int partitionId,
                        long epoch, boolean succeeded, int errorCode, String errorMessage, int rowCount,
                        int emitCount, byte[] payload, long guestMicros) {
        this(tenant, wireId, callId, kind, hostId, partitionId, epoch, succeeded, errorCode, errorMessage, rowCount,
                emitCount, payload, guestMicros, 0);
    }
}
