package dev.thresher.coordinator;

import dev.thresher.errors.ErrorCode;
import java.util.Optional;

/**
 * What the coordinator tells about the calls it coordinates, as they end: the node binds it to its metrics
 * (docs/operations.md, "Metrics"). Called on the call's own thread, once per call or per rejected slot, never per
 * row: an implementation must be quick and must not block. A failure it throws is logged and otherwise ignored.
 */
public interface CallObserver {
    /** Observes nothing. */
    CallObserver NONE = new CallObserver() {
        @Override
        public void callEnded(Optional<String> binding, ErrorCode failure, long nanos) {
        }

        @Override
        public void slotRejected(ErrorCode reason) {
        }
    };

    /**
     * A call accepted by {@link Coordinator#call} ended.
     *
     * @param binding the binding's name once the call resolved it; empty for a call that ended before (an unknown
     *     binding, a deadline or arguments refused), whose name is the caller's and unbounded
     * @param failure the call's error code, or null when its result was published
     * @param nanos from acceptance to the end, re-plans included
     */
    void callEnded(Optional<String> binding, ErrorCode failure, long nanos);

    /**
     * A published slot failed validation before reduce ({@link ShardRunValidator}), failing its call.
     *
     * @param reason the violation's code, one of {@link ShardRunValidator#REASONS}
     */
    void slotRejected(ErrorCode reason);
}
