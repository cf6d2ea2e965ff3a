package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * What one call will do, decided before anything runs.
 *
 * @param callId the call's base identity
 * @param binding the binding version pinned for the whole call
 * @param targets one per coordination slot, in slot order
 * @param reduceWireId the wire identity of the reduction
 */
public record CallPlan(UUID callId, Binding binding, List<ShardTarget> targets, String reduceWireId) {
    public CallPlan {
        Objects.requireNonNull(callId, "callId");
        Objects.requireNonNull(binding, "binding");
        targets = List.copyOf(targets);
        Objects.requireNonNull(reduceWireId, "reduceWireId");
    }
}
