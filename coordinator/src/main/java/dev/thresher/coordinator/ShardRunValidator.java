package dev.thresher.coordinator;

import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ShardRunRow;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks every expected slot, as published in the control database, before reduction and builds
 * the deterministic merged partial list. Slots are examined in slot order, so the violation found
 * is the one of the lowest slot, whatever order the shards finished in. Pure.
 */
public final class ShardRunValidator {
    private ShardRunValidator() {}

    /** Every code {@link #validate} fails with: the reasons a published slot is rejected. */
    public static final Set<ErrorCode> REASONS = java.util.Collections.unmodifiableSet(java.util.EnumSet.of(
            ErrorCode.SLOT_MISSING, ErrorCode.SLOT_STALE, ErrorCode.SLOT_EXPIRED, ErrorCode.TARGET_STALE,
            ErrorCode.EMIT_LIMIT_EXCEEDED, ErrorCode.SLOT_TOO_LARGE, ErrorCode.PARTIAL_MALFORMED,
            ErrorCode.PARTIAL_NON_NUMERIC, ErrorCode.PARTIAL_KEY_DUPLICATED, ErrorCode.MERGED_PARTIALS_TOO_LARGE));

    /**
     * @param targets the call's slots as finally dispatched (a retry may have re-planned one)
     * @param slots the published slots of the call
     * @return every partial of every slot, sorted by key: the same complete set always gives the same list
     * @throws ThresherException with the violation's own code: {@link ErrorCode#SLOT_MISSING},
     *     {@link ErrorCode#SLOT_EXPIRED} (lease ended), {@link ErrorCode#TARGET_STALE} (produced against
     *     another epoch than dispatched), {@link ErrorCode#SLOT_STALE} (the partition's epoch moved on
     *     since), {@link ErrorCode#EMIT_LIMIT_EXCEEDED}, {@link ErrorCode#SLOT_TOO_LARGE},
     *     {@link ErrorCode#PARTIAL_MALFORMED}, {@link ErrorCode#PARTIAL_NON_NUMERIC},
     *     {@link ErrorCode#PARTIAL_KEY_DUPLICATED}, {@link ErrorCode#MERGED_PARTIALS_TOO_LARGE}
     */
    public static List<Partial> validate(List<ShardTarget> targets, List<ShardRunRow> slots, Limits limits) {
        Map<Integer, ShardRunRow> bySlot = new HashMap<>();
        for (ShardRunRow r : slots) {
            bySlot.put(r.runIndex(), r);
        }
        Map<String, Integer> owner = new HashMap<>();
        List<Partial> merged = new ArrayList<>();
        for (ShardTarget t : targets) {
            ShardRunRow r = bySlot.get(t.runIndex());
            String where = "slot " + t.runIndex() + " (partition " + t.partition().id() + ")";
            if (r == null) {
                throw new ThresherException(ErrorCode.SLOT_MISSING, where + " was not published");
            }
            if (r.partitionId() != t.partition().id() || !r.wireId().equals(t.wireId())) {
                throw new ThresherException(ErrorCode.SLOT_STALE, where + " holds partition " + r.partitionId()
                        + " under wire identity " + r.wireId() + "; expected " + t.wireId());
            }
            if (!r.leaseLive()) {
                throw new ThresherException(ErrorCode.SLOT_EXPIRED, where + ": the slot's lease ended before reduce");
            }
            if (r.epoch() != t.partition().epoch()) {
                throw new ThresherException(ErrorCode.TARGET_STALE, where + " was produced under epoch " + r.epoch()
                        + "; it was dispatched under epoch " + t.partition().epoch());
            }
            if (r.currentEpoch() != r.epoch()) {
                throw new ThresherException(ErrorCode.SLOT_STALE, where + " was produced under epoch " + r.epoch()
                        + "; the partition is at epoch " + r.currentEpoch() + " now");
            }
            if (r.emitCount() > limits.emitsPerInvocation()) {
                throw new ThresherException(ErrorCode.EMIT_LIMIT_EXCEEDED, where + " made " + r.emitCount()
                        + " emit calls; the limit is " + limits.emitsPerInvocation());
            }
            if (r.entryCount() > limits.partialEntriesPerSlot()) {
                throw new ThresherException(ErrorCode.SLOT_TOO_LARGE, where + " holds " + r.entryCount()
                        + " partials; the limit is " + limits.partialEntriesPerSlot());
            }
            List<Partial> partials;
            try {
                partials = PartialsCodec.decode(r.partials());
            } catch (RuntimeException e) {
                throw new ThresherException(ErrorCode.PARTIAL_MALFORMED, where + " holds an undecodable partial set: "
                        + e.getMessage());
            }
            if (partials.size() != r.entryCount()) {
                throw new ThresherException(ErrorCode.PARTIAL_MALFORMED, where + " claims " + r.entryCount()
                        + " partials and holds " + partials.size());
            }
            for (Partial p : partials) {
                int keyBytes = p.key().getBytes(StandardCharsets.UTF_8).length;
                if (keyBytes == 0 || keyBytes > limits.partialKeyMaxBytes()) {
                    throw new ThresherException(ErrorCode.PARTIAL_MALFORMED, where + " emitted a key of " + keyBytes
                            + " bytes; keys are 1.." + limits.partialKeyMaxBytes() + " bytes");
                }
                if (!Double.isFinite(p.value())) {
                    throw new ThresherException(ErrorCode.PARTIAL_NON_NUMERIC, where + " emitted " + p.value()
                            + " for key '" + p.key() + "'; partials are finite numbers");
                }
                Integer previous = owner.putIfAbsent(p.key(), t.runIndex());
                if (previous != null) {
                    throw previous == t.runIndex()
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
