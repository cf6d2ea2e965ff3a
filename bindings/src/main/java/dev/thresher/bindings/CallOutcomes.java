package dev.thresher.bindings;

import java.util.Optional;
import java.util.UUID;

/**
 * Looks up the outcome of a call by its id (pgwire's {@code SHOW CALL 'id'}). Blocking: front doors call
 * it off their event loops. Finished invocations are kept {@code limits.coordinationRetentionMs} and then
 * swept, so an old id is unknown again.
 */
@FunctionalInterface
public interface CallOutcomes {
    /**
     * The call {@code callId} of {@code tenant}, or empty when that tenant has no such call (another
     * tenant's calls are not visible).
     *
     * @throws dev.thresher.errors.ThresherException {@code STORE_UNAVAILABLE} when the control database cannot answer
     */
    Optional<CallOutcome> lookup(String tenant, UUID callId);
}
