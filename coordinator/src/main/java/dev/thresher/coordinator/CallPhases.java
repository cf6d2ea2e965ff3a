package dev.thresher.coordinator;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Where the calls coordinated on this node spent their time, summed over every call that
 * published a result. Cheap enough to stay on in production (one {@link LongAdder} add per phase
 * per call); operators and {@code ./thresher bench} read it as differences of two snapshots.
 */
public final class CallPhases {

    /** The phases of one call, in the order a call goes through them. */
    public enum Phase {
        /** Deadline and argument checks, binding and topology (from the cache), the plan, recording the invocation. */
        PLAN,
        /** From the first host request sent to the last host reply received: the leaders' work included. */
        DISPATCH,
        /** Leader side, summed over slots: reading a partition into its batch. */
        READ,
        /** Leader side, summed over slots: the guest's {@code run}. */
        GUEST,
        /** Leader side, summed over hosts: journaling and publishing a host's slots. */
        PUBLISH,
        /** Taking the reduce lease, reading the published slots and judging them. */
        VALIDATE,
        /** The guest's {@code reduce}, and journaling it. */
        REDUCE,
        /** Publishing the result, fenced by the reduce lease and the binding version. */
        RESULT
    }

    private final LongAdder calls = new LongAdder();
    private final Map<Phase, LongAdder> nanos = new EnumMap<>(Phase.class);

    public CallPhases() {
        for (Phase p : Phase.values()) {
            nanos.put(p, new LongAdder());
        }
    }

    /** Adds one published call's phase times. */
    void record(Map<Phase, Long> callNanos) {
        calls.increment();
        callNanos.forEach((p, n) -> nanos.get(p).add(n));
    }

    /** Calls that published a result so far. */
    public long calls() {
        return calls.sum();
    }

    /** Time spent in {@code phase} so far, summed over those calls. */
    public long totalNanos(Phase phase) {
        return nanos.get(phase).sum();
    }

    /** The totals so far. */
    public Snapshot snapshot() {
        Map<Phase, Long> m = new EnumMap<>(Phase.class);
        nanos.forEach((p, a) -> m.put(p, a.sum()));
        return new Snapshot(calls.sum(), m);
    }

    /**
     * Totals at one instant.
     *
     * @param calls calls that published a result
     * @param totalNanos time per phase, summed over those calls
     */
    public record Snapshot(long calls, Map<Phase, Long> totalNanos) {
        public Snapshot {
            totalNanos = Collections.unmodifiableMap(new EnumMap<>(totalNanos));
        }

        /** What happened between {@code earlier} and this snapshot. */
        public Snapshot minus(Snapshot earlier) {
            Map<Phase, Long> m = new EnumMap<>(Phase.class);
            totalNanos.forEach((p, n) -> m.put(p, n - earlier.totalNanos.getOrDefault(p, 0L)));
            return new Snapshot(calls - earlier.calls, m);
        }

        /** Mean microseconds per call spent in {@code phase}; 0 with no call. */
        public double meanMicros(Phase phase) {
            return calls == 0 ? 0 : totalNanos.getOrDefault(phase, 0L) / 1_000.0 / calls;
        }
    }
}
