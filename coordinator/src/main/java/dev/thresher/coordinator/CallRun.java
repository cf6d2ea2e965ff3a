package dev.thresher.coordinator;

import dev.thresher.bindings.CallRequest;
import dev.thresher.coordinator.CallPhases.Phase;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * The state of one call while it runs on its coordinator: what was asked, the plan, the one
 * deadline, and what the slots' threads learn as they settle. Each field has one writer rule:
 * the plan is set once; {@link #stop} is set by the first failure that ends the call and never
 * cleared; the counters only grow.
 */
final class CallRun {
    final CallRequest request;
    final UUID callId;
    final Deadline deadline;
    final long startNanos;
    final long deadlineMs;

    private CallPlan plan;
    /** The binding's name once resolved from the catalog (the caller's name may name none); the call's thread only. */
    private String bindingName;
    private final AtomicInteger attempts = new AtomicInteger();
    private final AtomicBoolean guestMayHaveRun = new AtomicBoolean();
    /** The statement publishing the result was sent (its answer may never come). */
    private final AtomicBoolean publicationSent = new AtomicBoolean();
    private final AtomicReference<ThresherException> stop = new AtomicReference<>();
    private final AtomicBoolean stopSent = new AtomicBoolean();
    /** Set when a slot's partition was split or dropped under the call: its plan no longer covers the table. */
    private final AtomicBoolean planSuperseded = new AtomicBoolean();
    /** Targets as finally dispatched (a retry may re-plan one), by slot index. */
    private final Map<Integer, ShardTarget> dispatched = new TreeMap<>();
    private final Map<Phase, LongAdder> phaseNanos = new EnumMap<>(Phase.class);

    CallRun(CallRequest request, UUID callId, long startNanos, long deadlineMs) {
        this.request = request;
        this.callId = callId;
        this.startNanos = startNanos;
        this.deadlineMs = deadlineMs;
        this.deadline = Deadline.afterMillis(startNanos, deadlineMs);
        for (Phase p : Phase.values()) {
            phaseNanos.put(p, new LongAdder());
        }
    }

    /** The binding was resolved: it exists, under this name. */
    void resolved(String name) {
        bindingName = name;
    }

    /** The resolved binding's name, or null before it was resolved. */
    String bindingName() {
        return bindingName;
    }

    CallPlan plan() {
        return plan;
    }

    void planned(CallPlan p) {
        this.plan = p;
        synchronized (dispatched) {
            dispatched.clear();
            p.targets().forEach(t -> dispatched.put(t.runIndex(), t));
        }
    }

    /** A slot was sent again to a re-resolved target. */
    void redispatched(ShardTarget t) {
        synchronized (dispatched) {
            dispatched.put(t.runIndex(), t);
        }
    }

    /** The targets as finally dispatched, in slot order. */
    List<ShardTarget> dispatchedTargets() {
        synchronized (dispatched) {
            return List.copyOf(dispatched.values());
        }
    }

    /** Counts {@code n} slot sends (the invocation's {@code attempts}). */
    void sent(int n) {
        attempts.addAndGet(n);
    }

    int attempts() {
        return attempts.get();
    }

    /** Guest code may have run for some slot: a retryable failure of the call then says so. */
    void guestMayHaveRun() {
        guestMayHaveRun.set(true);
    }

    boolean anyGuestMayHaveRun() {
        return guestMayHaveRun.get();
    }

    /** The result's publication is about to be sent: from now on a failure heard no answer may hide a published result. */
    void publishing() {
        publicationSent.set(true);
    }

    boolean publicationSent() {
        return publicationSent.get();
    }

    /** Stops admission for the call; the first failure to stop it is kept. */
    void stop(ThresherException cause) {
        stop.compareAndSet(null, cause);
    }

    /** True once, for the one thread that tells the other hosts the call stopped. */
    void planSuperseded() {
        planSuperseded.set(true);
    }

    /** Whether the plan no longer matches the table's partitions (a split or drop under the call). */
    boolean isPlanSuperseded() {
        return planSuperseded.get();
    }

    boolean markStopSent() {
        return stopSent.compareAndSet(false, true);
    }

    boolean stopped() {
        return stop.get() != null;
    }

    ThresherException stopCause() {
        return stop.get();
    }

    void addPhase(Phase phase, long nanos) {
        phaseNanos.get(phase).add(nanos);
    }

    Map<Phase, Long> phaseNanos() {
        Map<Phase, Long> m = new EnumMap<>(Phase.class);
        phaseNanos.forEach((p, a) -> m.put(p, a.sum()));
        return m;
    }
}
