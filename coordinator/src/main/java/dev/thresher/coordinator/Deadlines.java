package dev.thresher.coordinator;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;

/** Checks of a call's one deadline, a {@link System#nanoTime()} instant on this node. */
final class Deadlines {
    private Deadlines() {}

    /** @throws ThresherException {@link ErrorCode#DEADLINE_EXCEEDED} once the deadline has passed */
    static void check(long deadlineNanos, String when) {
        if (System.nanoTime() - deadlineNanos >= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed " + when);
        }
    }
}
