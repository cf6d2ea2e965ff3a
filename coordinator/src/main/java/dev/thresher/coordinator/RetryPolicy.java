package dev.thresher.coordinator;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;

/**
 * Whether a failed slot is sent again: the contract's three conditions (the failure is retryable,
 * the runtime can prove no guest code ran, the attempt budget remains), and two of the call's own
 * (no other slot failed for good, the deadline has not passed). Pure.
 */
public final class RetryPolicy {
    private RetryPolicy() {}

    /** The decision, with the reason when it is not a retry. */
    public enum Verdict {
        /** Send the slot again, on a re-resolved target. */
        RETRY,
        /** The failure's class is terminal: the same request fails the same way. */
        TERMINAL,
        /** The failure's class is ambiguous: guest code may have run; never retried automatically. */
        AMBIGUOUS,
        /** Retryable by class, but guest code may have run for this attempt. */
        GUEST_MAY_HAVE_RUN,
        /** Retryable and provably not started, but the attempts are spent. */
        BUDGET_SPENT,
        /** Another slot of the call failed for good: nothing more is sent. */
        CALL_STOPPED,
        /** The call's deadline has passed. */
        DEADLINE_PASSED;

        public boolean retry() {
            return this == RETRY;
        }
    }

    /**
     * @param code the failure's code
     * @param provablyNotStarted whether the runtime can prove no guest code ran for this attempt
     * @param attempt the attempt that failed, the first being 1
     * @param attemptBudget attempts allowed in all, the first included ({@code limits.attemptBudget})
     * @param callStopped whether another slot of the call already failed for good
     * @param deadlinePassed whether the call's deadline has passed
     */
    public static Verdict decide(ErrorCode code, boolean provablyNotStarted, int attempt, int attemptBudget,
                                 boolean callStopped, boolean deadlinePassed) {
        RetryClass retryClass = code.retryClass();
        if (retryClass == RetryClass.TERMINAL) {
            return Verdict.TERMINAL;
        }
        if (retryClass == RetryClass.AMBIGUOUS) {
            return Verdict.AMBIGUOUS;
        }
        if (!provablyNotStarted) {
            return Verdict.GUEST_MAY_HAVE_RUN;
        }
        if (attempt >= attemptBudget) {
            return Verdict.BUDGET_SPENT;
        }
        if (callStopped) {
            return Verdict.CALL_STOPPED;
        }
        if (deadlinePassed) {
            return Verdict.DEADLINE_PASSED;
        }
        return Verdict.RETRY;
    }
}
