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
     * The call {@code callId} when {@code scope} sees it, or empty when its tenant has no such call or it is of a
     * binding the scope does not see (another tenant's calls, and calls the reader may not see, are not there).
     *
     * @throws dev.thresher.errors.ThresherException {@code STORE_UNAVAILABLE} when the control database cannot answer
     */
    Optional<CallOutcome> lookup(JournalScope scope, UUID callId);
}
