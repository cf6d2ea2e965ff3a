package dev.thresher.coordinator;

import dev.thresher.bindings.Partial;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.wire.WireMessage.ShardRunResult;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Checks every expected slot before reduction and builds the deterministic merged partial list.
 * Slots are examined in slot order, so the first violation found is the one of the lowest slot,
 * whatever order the results arrived in.
 */
public final class SlotValidator {
    private SlotValidator() {}

    /**
     * @param results the slot results by slot index
     * @return every partial of every slot, sorted by key
     * @throws ThresherException with the violation's own code: {@link ErrorCode#SLOT_MISSING},
     *     {@link ErrorCode#SLOT_STALE}, {@link ErrorCode#EMIT_LIMIT_EXCEEDED}, {@link ErrorCode#SLOT_TOO_LARGE},
     *     {@link ErrorCode#PARTIAL_MALFORMED}, {@link ErrorCode#PARTIAL_NON_NUMERIC},
     *     {@link ErrorCode#PARTIAL_KEY_DUPLICATED}, {@link ErrorCode#MERGED_PARTIALS_TOO_LARGE}
     */
    public static List<Partial> validate(CallPlan plan, Map<Integer, ShardRunResult> results, Limits limits) {
        Map<String, Integer> owner = new HashMap<>();
        List<Partial> merged = new ArrayList<>();
        for (ShardTarget t : plan.targets()) {
            ShardRunResult r = results.get(t.slotIndex());
            String where = "slot " + t.slotIndex() + " (partition " + t.partition().id() + ")";
            if (r == null) {
                throw new ThresherException(ErrorCode.SLOT_MISSING, where + " did not publish");
            }
            if (r.partitionId() != t.partition().id() || r.epoch() != t.partition().epoch()
                    || !r.wireId().equals(t.wireId())) {
                throw new ThresherException(ErrorCode.SLOT_STALE, where + " answered for partition " + r.partitionId()
                        + " epoch " + r.epoch() + " wire " + r.wireId() + "; expected epoch " + t.partition().epoch());
            }
            if (r.emitCount() > limits.emitsPerInvocation()) {
                throw new ThresherException(ErrorCode.EMIT_LIMIT_EXCEEDED, where + " made " + r.emitCount()
                        + " emit calls; the limit is " + limits.emitsPerInvocation());
            }
            if (r.partials().size() > limits.partialEntriesPerSlot()) {
                throw new ThresherException(ErrorCode.SLOT_TOO_LARGE, where + " holds " + r.partials().size()
                        + " partials; the limit is " + limits.partialEntriesPerSlot());
            }
            for (Partial p : r.partials()) {
                int keyBytes = p.key().getBytes(StandardCharsets.UTF_8).length;
                if (keyBytes == 0 || keyBytes > limits.partialKeyMaxBytes()) {
                    throw new ThresherException(ErrorCode.PARTIAL_MALFORMED, where + " emitted a key of " + keyBytes
                            + " bytes; keys are 1.." + limits.partialKeyMaxBytes() + " bytes");
                }
                if (!Double.isFinite(p.value())) {
                    throw new ThresherException(ErrorCode.PARTIAL_NON_NUMERIC, where + " emitted " + p.value()
                            + " for key '" + p.key() + "'; partials are finite numbers");
                }
                Integer previous = owner.putIfAbsent(p.key(), t.slotIndex());
                if (previous != null) {
                    throw previous == t.slotIndex()
                            ? new ThresherException(ErrorCode.PARTIAL_MALFORMED, where + " emitted key '" + p.key()
                                    + "' twice; keys are unique within a slot")
                            : new ThresherException(ErrorCode.PARTIAL_KEY_DUPLICATED, "key '" + p.key()
                                    + "' was emitted by slot " + previous + " and by " + where
                                    + "; namespace keys with a partition-local identity");
                }
                merged.add(p);
            }
            if (merged.size() > limits.partialEntriesPerSlot()) {
                throw new ThresherException(ErrorCode.MERGED_PARTIALS_TOO_LARGE, "the merged partial set exceeds "
                        + limits.partialEntriesPerSlot() + " entries at " + where);
            }
        }
        merged.sort(null);
        return merged;
    }
}
