package dev.thresher.leader;

import dev.thresher.limits.Deadline;
import dev.thresher.store.control.CallJournal.RequestStart;
import java.util.concurrent.TimeUnit;

/**
 * The control database's clock as a leader reads it once per host request: its reading {@code clockMicros}
 * was taken at some moment after {@code askedNanos} (this node's {@code nanoTime} when the statement was
 * sent), so {@code clockMicros + (now - askedNanos)} is never earlier than that clock now. A call's stored
 * deadline converts to this node's clock on that safe side: never later than the shared clock says.
 *
 * @param deadlineMicros the call's deadline on that clock; 0 when unknown
 */
record ControlClock(long askedNanos, long clockMicros, long deadlineMicros) {
    static ControlClock of(long askedNanos, RequestStart start) {
        return new ControlClock(askedNanos, start.clockMicros(), start.deadlineMicros().orElse(0));
    }

    /** The earlier of {@code local} and the call's stored deadline. */
    Deadline deadline(Deadline local) {
        if (deadlineMicros == 0) {
            return local;
        }
        return local.earlier(new Deadline(askedNanos + TimeUnit.MICROSECONDS.toNanos(deadlineMicros - clockMicros)));
    }

    /** The latest the control database's clock can read at this node's {@code nanoTime} {@code at}; 0 when unknown. */
    long latestAt(long at) {
        return deadlineMicros == 0 ? 0 : clockMicros + TimeUnit.NANOSECONDS.toMicros(at - askedNanos);
    }
}
