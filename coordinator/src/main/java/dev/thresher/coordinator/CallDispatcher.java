package dev.thresher.coordinator;

import dev.thresher.coordinator.CallPhases.Phase;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Burners;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.FairPlaces;
import dev.thresher.limits.Limits;
import dev.thresher.store.DbDeadline;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * A call's dispatch ({@link Coordinator}'s step between recording the invocation and reduce): one host request per
 * leader host through the node's bounded pool of host requests, each slot's outcome judged, a slot that may be sent
 * again ({@link RetryPolicy}) re-resolved and sent to its leader again, the other hosts told when the call stops.
 * Logs as the coordinator.
 */
final class CallDispatcher {
    private static final Logger log = LoggerFactory.getLogger(Coordinator.class);

    private final Catalog catalog;
    private final Leaders wire;
    private final Limits limits;
    private final ExecutorService callExecutor;
    /** Host requests out at once, shared fairly among bindings (docs/contract.md, "fair shares"). */
    private final FairPlaces hostPool;
    /** Bindings toward a host whose requests ran to their deadline there: one place toward it beside others. */
    private final Burners toDeadline;
    private final AtomicLong requestIds = new AtomicLong();
    private final AtomicLong shardRetries = new AtomicLong();
    private final AtomicLong supersededRequests = new AtomicLong();
    private final AtomicLong leaderWaits = new AtomicLong();
    private final AtomicLong failedShardRuns = new AtomicLong();

    CallDispatcher(Catalog catalog, Leaders wire, Limits limits, ExecutorService callExecutor) {
        this.catalog = catalog;
        this.wire = wire;
        this.limits = limits;
        this.callExecutor = callExecutor;
        this.toDeadline = new Burners(limits.slowRunMs());
        this.hostPool = FairPlaces.of(limits, toDeadline::burns);
    }

    /** {@link Coordinator#shardRetries}. */
    long shardRetries() {
        return shardRetries.get();
    }

    /** {@link Coordinator#supersededRequests}. */
    long supersededRequests() {
        return supersededRequests.get();
    }

    /** {@link Coordinator#leaderWaits}. */
    long leaderWaits() {
        return leaderWaits.get();
    }

    /** {@link Coordinator#failedShardRuns}. */
    long failedShardRuns() {
        return failedShardRuns.get();
    }

    /** {@link Coordinator#hostRequestsOut}. */
    int hostRequestsOut() {
        return hostPool.places() - hostPool.free();
    }

    /** {@link Coordinator#hostRequestsWaiting}. */
    int hostRequestsWaiting() {
        return hostPool.waiting();
    }

    /**
     * The outcome of one slot after its attempts: null failure when published. A slot that ran no
     * guest and failed after the call had already stopped (it was not admitted, or its host skipped
     * it on the coordinator's stop) is {@code notStarted}: it is no started shard whose failure could
     * be the call's cause.
     */
    private record ShardRunResult(ShardTarget target, ThresherException failure, boolean notStarted) {
        ShardRunResult(ShardTarget target, ThresherException failure) {
            this(target, failure, false);
        }
    }

    /**
     * Sends one request per leader host through the bounded pool, hosts in the order of their lowest
     * slot. Once a slot fails for good or the deadline passes, no further host request is admitted and
     * no slot is sent again; started requests settle; the failure of the lowest slot surfaces,
     * whatever order failures arrived in.
     */
    void dispatch(CallRun call) {
        Map<String, List<ShardTarget>> byHost = new LinkedHashMap<>();
        for (ShardTarget t : call.plan().targets()) {
            byHost.computeIfAbsent(t.leader().hostId(), h -> new ArrayList<>()).add(t);
        }
        List<CompletableFuture<List<ShardRunResult>>> started = new ArrayList<>();
        int left = byHost.size();
        for (List<ShardTarget> group : byHost.values()) {
            left--;
            if (call.stopped()) {
                break;
            }
            FairPlaces.Permit place;
            try {
                place = admit(call, group.get(0), "");
            } catch (ThresherException e) {
                call.stop(e);
                break;
            }
            if (call.stopped()) {
                place.close(); // a failure settled while this request waited for the pool: not admitted
                break;
            }
            if (left == 0) {
                // the last host's request runs on this thread, which would otherwise only wait for the others
                // (already under the call's deadline and id)
                try {
                    started.add(CompletableFuture.completedFuture(runHost(call, group, place)));
                } catch (RuntimeException e) {
                    started.add(CompletableFuture.failedFuture(e));
                }
                break;
            }
            started.add(CompletableFuture.supplyAsync(() -> {
                try (DbDeadline scope = DbDeadline.enter(call.deadline);
                     MDC.MDCCloseable id = MDC.putCloseable(Coordinator.CALL_ID, call.callId.toString())) {
                    return runHost(call, group, place);
                }
            }, callExecutor));
        }
        Map<Integer, ThresherException> failures = new TreeMap<>();
        for (CompletableFuture<List<ShardRunResult>> f : started) {
            for (ShardRunResult r : f.join()) {
                call.redispatched(r.target());
                if (r.failure() != null && !r.notStarted()) {
                    failures.put(r.target().runIndex(), r.failure());
                }
            }
        }
        if (!failures.isEmpty()) {
            throw failures.values().iterator().next();
        }
        if (call.stopped()) {
            throw call.stopCause();
        }
    }

    /**
     * A place in the node's pool for the call's next host request, the one of {@code first}'s leader, in the
     * fair share of the binding toward that host (a binding slow on one host is not slowed toward the others).
     * A request out holds its place until its leader answers; leaders answer busy rather than queue a shard
     * run past {@code limits.admissionWaitMs}, so places come free while the deadline lasts.
     *
     * @throws ThresherException {@code DEADLINE_EXCEEDED} when the deadline passed first
     */
    private FairPlaces.Permit admit(CallRun call, ShardTarget first, String again) {
        int runIndex = first.runIndex();
        long now = System.nanoTime();
        long until = now + call.deadline.remainingNanos();
        String binding = call.request.tenant() + "/" + call.request.bindingName();
        FairPlaces.Permit place;
        try {
            place = until - now > 0 ? hostPool.acquire(binding, poolKey(call, first.leader()), until) : null;
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted while dispatching", ie);
        }
        if (place == null) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before slot " + runIndex
                    + " was admitted" + again);
        }
        return place;
    }

    /** The pool's key of the call's binding toward {@code leader}. */
    private static String poolKey(CallRun call, Host leader) {
        return call.request.tenant() + "/" + call.request.bindingName() + "@" + leader.hostId();
    }

    /**
     * Runs one host's slots, holding one pool place while its request is out. Slots that fail in a
     * way {@link RetryPolicy} allows are re-resolved (the pool place given up while they wait for a
     * leader) and sent again, grouped by their new leader.
     */
    private List<ShardRunResult> runHost(CallRun call, List<ShardTarget> group, FairPlaces.Permit admitted) {
        Map<Integer, Integer> attempt = new HashMap<>();
        group.forEach(t -> attempt.put(t.runIndex(), 1));
        List<ShardRunResult> results = new ArrayList<>();
        List<List<ShardTarget>> toSend = new ArrayList<>(List.of(group));
        FairPlaces.Permit place = admitted;
        while (!toSend.isEmpty()) {
            List<ShardTarget> targets = toSend.remove(0);
            if (place == null) {
                try {
                    place = admit(call, targets.get(0), " again");
                } catch (ThresherException e) {
                    targets.forEach(t -> results.add(new ShardRunResult(t, e.code() == ErrorCode.DEADLINE_EXCEEDED
                            ? new ThresherException(e.code(), "deadline passed before slot " + t.runIndex()
                                    + " was admitted again") : e)));
                    continue;
                }
                if (call.stopped()) {
                    place.close();
                    place = null;
                    targets.forEach(t -> results.add(new ShardRunResult(t, call.stopCause(), true)));
                    continue;
                }
                shardRetries.addAndGet(targets.size());
            }
            // The pool place is given up once the outcomes are judged: a failure for good stops the call before
            // a host request waiting for the place can be admitted.
            Map<ShardTarget, ThresherException> retry = new LinkedHashMap<>();
            try {
                judge(call, send(call, targets, attempt), attempt, retry, results);
            } finally {
                place.close();
                place = null;
            }
            Map<String, List<ShardTarget>> regrouped = new LinkedHashMap<>();
            for (Map.Entry<ShardTarget, ThresherException> r : retry.entrySet()) {
                ShardTarget t = r.getKey();
                log.debug("retrying {} (attempt {} of {})", describe(t), attempt.get(t.runIndex()) + 1,
                        limits.attemptBudget());
                ShardTarget again;
                try {
                    again = reresolve(call, t);
                } catch (ThresherException e) {
                    results.add(new ShardRunResult(t, e));
                    call.stop(e);
                    // failed for good like any other slot: counted, and the call stops on every host
                    failedShardRuns.incrementAndGet();
                    stopOtherHosts(call, t.leader());
                    continue;
                }
                if (again == null) {
                    // another slot failed meanwhile: nothing is sent, and this slot, never started, is no cause
                    results.add(new ShardRunResult(t, r.getValue(), true));
                    continue;
                }
                attempt.merge(t.runIndex(), 1, Integer::sum);
                regrouped.computeIfAbsent(again.leader().hostId(), h -> new ArrayList<>()).add(again);
            }
            toSend.addAll(regrouped.values());
        }
        return results;
    }

    /** Judges one host reply's outcomes: published, retried (into {@code retry}), or failed (stopping the call). */
    private void judge(CallRun call, List<ShardRunOutcomeAt> outcomes, Map<Integer, Integer> attempt,
                       Map<ShardTarget, ThresherException> retry, List<ShardRunResult> results) {
        for (ShardRunOutcomeAt o : outcomes) {
            if (o.failure() == null) {
                results.add(new ShardRunResult(o.target(), null));
                continue;
            }
            if (!o.provablyNotStarted()) {
                call.guestMayHaveRun();
            }
            RetryPolicy.Verdict verdict = RetryPolicy.decide(o.failure().code(), o.provablyNotStarted(),
                    attempt.get(o.target().runIndex()), limits.attemptBudget(), call.stopped(), call.deadline.passed());
            if (verdict.retry()) {
                retry.put(o.target(), o.failure());
            } else if (o.provablyNotStarted() && call.stopped()) {
                results.add(new ShardRunResult(o.target(), o.failure(), true));
            } else {
                call.stop(o.failure());
                failedShardRuns.incrementAndGet();
                results.add(new ShardRunResult(o.target(), o.failure()));
                stopOtherHosts(call, o.target().leader());
            }
        }
    }

    /**
     * Tells every other leader host of the call that it stopped, once per call: slots they have not
     * started yet are then not run. Best effort; a host that misses it runs them, and the call fails all
     * the same.
     */
    private void stopOtherHosts(CallRun call, Host failed) {
        if (!call.markStopSent()) {
            return;
        }
        Map<String, Host> hosts = new LinkedHashMap<>();
        call.dispatchedTargets().forEach(t -> hosts.putIfAbsent(t.leader().hostId(), t.leader()));
        hosts.remove(failed.hostId());
        for (Host h : hosts.values()) {
            wire.stop(h.wireHost(), h.wirePort(), call.callId.toString()).exceptionally(e -> {
                log.debug("stop of call {} not delivered to {}: {}", call.callId, h.hostId(), e.toString());
                return null;
            });
        }
    }

    /** One slot's outcome of one send. */
    private record ShardRunOutcomeAt(ShardTarget target, ThresherException failure, boolean provablyNotStarted) {}

    /** Sends one host request for {@code targets} (all led by the same host) and waits for its reply within the deadline. */
    private List<ShardRunOutcomeAt> send(CallRun call, List<ShardTarget> targets, Map<Integer, Integer> attempt) {
        CallPlan plan = call.plan();
        Host leader = targets.get(0).leader();
        long remainingMicros = call.deadline.remainingMicros();
        if (remainingMicros <= 0) {
            return failAll(targets, new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before slot "
                    + targets.get(0).runIndex() + " was sent"), true);
        }
        List<ShardRun> slots = targets.stream().map(t -> new ShardRun(t.runIndex(), t.partition().id(),
                t.partition().epoch(), t.wireId(), attempt.get(t.runIndex()))).toList();
        HostRequest req = new HostRequest(requestIds.incrementAndGet(), call.callId.toString(),
                call.request.tenant(), plan.binding().name(), plan.binding().componentDigest(), plan.binding().version(),
                remainingMicros, call.request.argumentsJson(), slots);
        call.sent(slots.size());
        CompletableFuture<HostReply> sent = wire.send(leader.wireHost(), leader.wirePort(), req);
        HostReply reply;
        try {
            reply = awaitReply(call, sent, targets);
            if (reply == null) {
                sent.cancel(false);
                supersededRequests.incrementAndGet();
                return failAll(targets, new ThresherException(ErrorCode.TARGET_STALE, "slots on " + leader.hostId()
                        + ": their partitions moved to a new epoch (a new leader) while the request was out; the old"
                        + " leader can no longer publish them"), false);
            }
        } catch (TimeoutException e) {
            sent.cancel(false); // frees the request's place on the connection; a late reply is dropped
            toDeadline.burnt(poolKey(call, leader));
            return failAll(targets, new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting for "
                    + leader.hostId()), false);
        } catch (ExecutionException | CompletionException e) {
            ThresherException te = ThresherException.of(e.getCause() == null ? e : e.getCause());
            // The client proves a request never left only for HOST_UNREACHABLE.
            return failAll(targets, new ThresherException(te.code(), "slots on " + leader.hostId() + ": "
                    + te.getMessage(), te), te.code() == ErrorCode.HOST_UNREACHABLE);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return failAll(targets, new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted", e), false);
        }
        call.addPhase(Phase.PUBLISH, TimeUnit.MICROSECONDS.toNanos(reply.publishMicros()));
        Map<Integer, ShardRunOutcome> bySlot = new HashMap<>();
        reply.runs().forEach(o -> bySlot.put(o.runIndex(), o));
        List<ShardRunOutcomeAt> out = new ArrayList<>(targets.size());
        for (ShardTarget t : targets) {
            ShardRunOutcome o = bySlot.get(t.runIndex());
            if (o == null || !o.wireId().equals(t.wireId())) {
                out.add(new ShardRunOutcomeAt(t, new ThresherException(ErrorCode.INTERNAL_ERROR, describe(t)
                        + ": the host's reply has no outcome for it"), false));
                continue;
            }
            if (!o.published() && o.code() == ErrorCode.DEADLINE_EXCEEDED && o.guestStarted()) {
                toDeadline.burnt(poolKey(call, leader)); // its guest ran to the deadline
            }
            call.addPhase(Phase.READ, TimeUnit.MICROSECONDS.toNanos(o.readMicros()));
            call.addPhase(Phase.GUEST, TimeUnit.MICROSECONDS.toNanos(o.guestMicros()));
            out.add(o.published() ? new ShardRunOutcomeAt(t, null, false)
                    : new ShardRunOutcomeAt(t, new ThresherException(o.code(), describe(t) + ": " + o.message()),
                            !o.guestStarted()));
            if (o.published()) {
                call.guestMayHaveRun();
            }
        }
        return out;
    }

    /** How often a coordinator waiting for a host's reply looks whether its partitions moved on. */
    private static final long SUPERSEDED_CHECK_MICROS = 250_000;

    /**
     * Waits for a host's reply within the deadline, looking every {@value #SUPERSEDED_CHECK_MICROS} µs at the
     * node's cached topology: when a target's partition is at another epoch than the one dispatched (its leader
     * was replaced: died, froze, or handed over), the reply can no longer carry a publication and waiting for
     * it would only wait for a frozen or dead host.
     *
     * @return the reply, or null when the request was superseded
     * @throws TimeoutException when the deadline passed first
     */
    private HostReply awaitReply(CallRun call, CompletableFuture<HostReply> sent, List<ShardTarget> targets)
            throws TimeoutException, ExecutionException, InterruptedException {
        while (true) {
            long remaining = call.deadline.remainingMicros();
            if (remaining <= 0) {
                throw new TimeoutException();
            }
            try {
                // one microsecond more than what is left (whole microseconds, rounded down): a wait to the deadline
                // ends past it
                return sent.get(Math.min(remaining + 1, SUPERSEDED_CHECK_MICROS), TimeUnit.MICROSECONDS);
            } catch (TimeoutException e) {
                // a deadline that passed (a stall of this process included) is the answer, not a leader replaced
                // meanwhile: the caller must not read a retryable stale target long after the deadline
                if (call.deadline.passed()) {
                    throw e;
                }
                if (superseded(targets)) {
                    return null;
                }
            }
        }
    }

    /**
     * Whether a target's partition is gone or at a newer epoch led by another host (or by none). A newer epoch
     * led by the very host the request went to is not: that host renewed its lease meanwhile, so it is alive and
     * answers, and its epoch fence refuses the slot before any guest, which leaves the slot retryable.
     */
    private boolean superseded(List<ShardTarget> targets) {
        Topology t = catalog.topology();
        for (ShardTarget target : targets) {
            Optional<Partition> p = t.partition(target.partition().id());
            if (p.isEmpty()) {
                return true;
            }
            if (p.get().epoch() > target.partition().epoch()
                    && !t.leaderOf(p.get()).map(h -> h.hostId().equals(target.leader().hostId())).orElse(false)) {
                return true;
            }
        }
        return false;
    }

    private static List<ShardRunOutcomeAt> failAll(List<ShardTarget> targets, ThresherException e, boolean provablyNotStarted) {
        return targets.stream().map(t -> new ShardRunOutcomeAt(t, e, provablyNotStarted)).toList();
    }

    /**
     * The slot's partition and leader read again from the control database (the cache may be what
     * was stale), waiting for a leader like planning does.
     *
     * @return the new target, or null when another slot failed while this one waited
     */
    private ShardTarget reresolve(CallRun call, ShardTarget t) {
        Deadline giveUp = call.deadline.within(Duration.ofMillis(limits.activationWindowMs()));
        boolean waited = false;
        while (true) {
            if (call.stopped()) {
                return null;
            }
            Topology topology = catalog.refreshTopology();
            Optional<Partition> now = topology.partition(t.partition().id());
            if (now.isEmpty() || now.get().slotLo() != t.partition().slotLo() || now.get().slotHi() != t.partition().slotHi()) {
                call.planSuperseded();
                throw new ThresherException(ErrorCode.TARGET_STALE, "partition " + t.partition().id()
                        + (now.isEmpty() ? " no longer exists" : " was split (slots " + t.partition().slotLo() + ".."
                        + t.partition().slotHi() + " are now " + now.get().slotLo() + ".." + now.get().slotHi() + ")")
                        + "; the call is planned again");
            }
            Partition p = now.get();
            Optional<Host> leader = topology.leaderOf(p);
            if (leader.isPresent()) {
                return new ShardTarget(t.runIndex(), p, leader.get(), t.wireId());
            }
            if (giveUp.remainingNanos() <= Coordinator.msToNanos(Coordinator.ACTIVATION_POLL_MS)) {
                throw new ThresherException(ErrorCode.CELL_UNAVAILABLE, "partition " + p.id() + " has no live leader");
            }
            if (!waited) {
                waited = true;
                leaderWaits.incrementAndGet();
            }
            Coordinator.pause(Coordinator.ACTIVATION_POLL_MS);
        }
    }

    private static String describe(ShardTarget t) {
        return "slot " + t.runIndex() + " (partition " + t.partition().id() + " on " + t.leader().hostId() + ")";
    }
}
