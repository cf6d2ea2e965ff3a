package dev.thresher.coordinator;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.cellhost.ReduceOutcome;
import dev.thresher.coordinator.CallPhases.Phase;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.FairPlaces;
import dev.thresher.limits.Limits;
import dev.thresher.store.DbDeadline;
import dev.thresher.store.control.CallJournal.ReduceStart;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.store.control.PublishOutcome;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import dev.thresher.wire.WireMessage.HostRunReply;
import dev.thresher.wire.WireMessage.HostRunRequest;
import dev.thresher.wire.WireMessage.SlotOutcome;
import dev.thresher.wire.WireMessage.SlotRun;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Coordinates calls accepted on this node.
 *
 * <pre>
 *  call ─► check deadline and arguments ─► binding and topology from the node's cache ─► plan (no rows read;
 *       waits for a missing leader up to min(deadline, activation window))
 *       ─► [tx 1] record the invocation, only while the binding version is current
 *       ─► one host request per leader host, carrying its slots, through the bounded pool in slot order
 *            (a retryable failure that provably ran no guest code is retried on a re-resolved
 *             target while the attempt budget lasts; any other failure stops admission)
 *       ─► settle started hosts ─► [tx 2] take the reduce lease and read the published slots
 *       ─► validate every slot ─► reduce
 *       ─► [tx 3] journal the reduction and publish the result, fenced by the reduce lease ─► result
 * </pre>
 *
 * One absolute {@link Deadline} bounds every step; it crosses the wire as remaining budget. A call's
 * state lives in one {@link CallRun}; whether a failed slot is sent again is {@link RetryPolicy}'s.
 */
public final class Coordinator implements CallService {
    /** The log context key of a call's id; {@code wire_id} is a shard run's (docs/operations.md, "Logs"). */
    public static final String CALL_ID = "call_id";
    private static final Logger log = LoggerFactory.getLogger(Coordinator.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long ACTIVATION_POLL_MS = 100;
    /** Re-resolutions of a binding whose cached version turned out superseded when the call was recorded. */
    private static final int BINDING_REFRESHES = 3;
    /** The longest a coordinator waits to record a call's failure before answering the caller. */
    private static final long FAILURE_RECORD_MS = 1_000;
    /** What recording a failure may take even when the deadline has passed. */
    private static final long FAILURE_RECORD_MIN_MS = 250;

    private final String hostId;
    private final CallStore control;
    private final Catalog catalog;
    private final Leaders wire;
    private final Reducer reducer;
    private final Limits limits;
    private final ExecutorService callExecutor;
    private final ExecutorService guestExecutor;
    private final Failpoints failpoints;
    /** Host requests out at once, shared fairly among bindings (docs/contract.md, "fair shares"). */
    private final FairPlaces hostPool;
    private final AtomicLong requestIds = new AtomicLong();
    private final AtomicLong shardRetries = new AtomicLong();
    private final AtomicLong replans = new AtomicLong();
    private final AtomicLong supersededRequests = new AtomicLong();
    private final AtomicLong leaderWaits = new AtomicLong();
    private final AtomicLong failedSlots = new AtomicLong();
    private final AtomicInteger callsInFlight = new AtomicInteger();
    private final CallPhases phases = new CallPhases();
    private final CallObserver observer;

    /**
     * @param control the control database's invocation, reduce and publish transactions
     * @param catalog the node's cache of bindings and topology
     * @param wire the leader hosts, reached over the node-to-node protocol
     * @param reducer this node's reduce cells (sharing the node's one component cache with its leader side)
     * @param callExecutor runs each call and each of its host requests (virtual threads fit: they mostly wait)
     * @param guestExecutor platform threads that run reduce (polyglot contexts stay off virtual threads); not the
     *     shard pool, or a reduce could queue behind other calls' shard runs past its deadline
     */
    public Coordinator(String hostId, CallStore control, Catalog catalog, Leaders wire, Reducer reducer, Limits limits,
                       ExecutorService callExecutor, ExecutorService guestExecutor, Failpoints failpoints) {
        this(hostId, control, catalog, wire, reducer, limits, callExecutor, guestExecutor, failpoints, CallObserver.NONE);
    }

    /** As above, telling {@code observer} how each call ended (the node's metrics). */
    public Coordinator(String hostId, CallStore control, Catalog catalog, Leaders wire, Reducer reducer, Limits limits,
                       ExecutorService callExecutor, ExecutorService guestExecutor, Failpoints failpoints,
                       CallObserver observer) {
        this.observer = java.util.Objects.requireNonNull(observer, "observer");
        this.hostId = hostId;
        this.control = control;
        this.catalog = catalog;
        this.wire = wire;
        this.reducer = reducer;
        this.limits = limits;
        this.callExecutor = callExecutor;
        this.guestExecutor = guestExecutor;
        this.failpoints = failpoints;
        this.hostPool = FairPlaces.of(limits);
    }

    @Override
    public CompletableFuture<CallResult> call(CallRequest request) {
        long startNanos = System.nanoTime();
        callsInFlight.incrementAndGet();
        try {
            return CompletableFuture.supplyAsync(() -> {
                try {
                    return run(request, startNanos);
                } finally {
                    callsInFlight.decrementAndGet();
                }
            }, callExecutor);
        } catch (RuntimeException e) {
            callsInFlight.decrementAndGet();
            throw e;
        }
    }

    /** Calls accepted by {@link #call} that have not finished yet (a stopping node waits for them). */
    public int callsInFlight() {
        return callsInFlight.get();
    }

    /** Where the calls coordinated here spent their time. */
    public CallPhases phases() {
        return phases;
    }

    /** Slots this coordinator sent again automatically. */
    public long shardRetries() {
        return shardRetries.get();
    }

    /** Calls planned again because a partition was split or dropped under them. */
    public long replans() {
        return replans.get();
    }

    /** Host requests given up because their partitions' epochs moved on while they were out (a leader replaced). */
    public long supersededRequests() {
        return supersededRequests.get();
    }

    /** Slots to be sent again that found their partition without a live leader and waited for one. */
    public long leaderWaits() {
        return leaderWaits.get();
    }

    /** Slots of calls coordinated here that failed for good. */
    public long failedSlots() {
        return failedSlots.get();
    }

    /** Host requests out now, each holding a place of this node's pool of {@code limits.shardConcurrency}. */
    public int hostRequestsOut() {
        return hostPool.places() - hostPool.free();
    }

    /** Host requests waiting for a place of this node's pool now. */
    public int hostRequestsWaiting() {
        return hostPool.waiting();
    }

    /** Runs the call and tells the observer how it ended. */
    private CallResult run(CallRequest request, long startNanos) {
        CallRun[] last = new CallRun[1];
        ErrorCode failure = ErrorCode.INTERNAL_ERROR; // unless it returns or throws a code
        try {
            CallResult result = run(request, startNanos, last);
            failure = null;
            return result;
        } catch (RuntimeException e) {
            failure = ThresherException.of(e).code();
            throw e;
        } finally {
            observe(last[0], failure, System.nanoTime() - startNanos);
        }
    }

    private void observe(CallRun call, ErrorCode failure, long nanos) {
        try {
            observer.callEnded(Optional.ofNullable(call == null ? null : call.bindingName()), failure, nanos);
        } catch (RuntimeException e) {
            log.debug("the call observer failed: {}", e.toString());
        }
    }

    /** @param last set to each attempt's run as it starts: the last one tells whether the binding was resolved */
    private CallResult run(CallRequest request, long startNanos, CallRun[] last) {
        long deadlineMs = request.deadlineMs().orElse(limits.callDeadlineMs());
        if (deadlineMs <= 0 || deadlineMs > limits.maxCallDeadlineMs()) {
            throw new ThresherException(ErrorCode.INVALID_DEADLINE, "a call deadline is 1.." + limits.maxCallDeadlineMs()
                    + " ms, was " + deadlineMs);
        }
        checkArguments(request.argumentsJson(), limits);
        for (int plans = 1; ; plans++) {
            CallRun call = new CallRun(request, UUID.randomUUID(), startNanos, deadlineMs);
            last[0] = call;
            try {
                return run(call);
            } catch (ThresherException e) {
                // A partition split (or dropped) under the call: its plan no longer tiles the table. Nothing of it
                // is published; the call is planned again, as a new invocation, while attempts and time remain.
                if (!call.isPlanSuperseded() || plans >= limits.attemptBudget() || call.deadline.passed()) {
                    throw e;
                }
                replans.incrementAndGet();
                log.debug("call {} of {} re-planned: {}", call.callId, request.bindingName(), e.getMessage());
            }
        }
    }

    private CallResult run(CallRun call) {
        // Every database wait of the call on this thread ends at its deadline (docs/contract.md, "one deadline").
        // and every line logged about it carries its id (docs/operations.md, "Logs")
        try (DbDeadline scope = DbDeadline.enter(call.deadline);
             MDC.MDCCloseable id = MDC.putCloseable(CALL_ID, call.callId.toString())) {
            return runWithin(call);
        }
    }

    private CallResult runWithin(CallRun call) {
        CallRequest request = call.request;
        long startNanos = System.nanoTime();
        record(call);
        call.addPhase(Phase.PLAN, System.nanoTime() - startNanos);
        try {
            long t = System.nanoTime();
            dispatch(call);
            call.addPhase(Phase.DISPATCH, System.nanoTime() - t);
            String visible = reduceAndPublish(call);
            phases.record(call.phaseNanos());
            log.debug("call {} of {} published after {} µs", call.callId, request.bindingName(),
                    TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - call.startNanos));
            return new CallResult(call.callId.toString(), visible);
        } catch (RuntimeException e) {
            ThresherException te = ThresherException.of(e);
            // a retryable code after guest code still means "call again", not "nothing ran"; before any guest
            // code started anywhere, even an outcome otherwise unknown (a store outage) is safe to retry
            te = call.anyGuestMayHaveRun() ? te.afterGuestCode() : te.beforeGuestCode();
            // Recording the failure is bounded too: by what is left of the deadline, at least a short while
            // and at most FAILURE_RECORD_MS; if it cannot be recorded, the reconciler records it later.
            try (DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofMillis(
                    Math.clamp(call.deadline.remainingMillis(), FAILURE_RECORD_MIN_MS, FAILURE_RECORD_MS))))) {
                control.failInvocation(call.callId, te.code(), te.getMessage(), call.attempts());
            } catch (RuntimeException recordFailure) {
                log.warn("could not record the failure of call {} (the reconciler will): {}", call.callId,
                        recordFailure.toString());
            }
            throw te;
        }
    }

    /**
     * Resolves the binding and plans the call from the node's cache, then records the invocation. The
     * record is conditional on the binding version still being current: when the cache was behind, the
     * binding is resolved again and the call re-planned before anything ran. A call refused at planning
     * is still recorded, as failed, so operators can find it.
     */
    private void record(CallRun call) {
        CallRequest request = call.request;
        for (int refresh = 0; ; refresh++) {
            Optional<Binding> cached = catalog.currentBinding(request.tenant(), request.bindingName());
            if (cached.isEmpty()) {
                // the cache may not have heard of a binding created a moment ago: ask the database once
                catalog.invalidateBinding(request.tenant(), request.bindingName());
                cached = catalog.currentBinding(request.tenant(), request.bindingName());
            }
            Binding binding = cached.orElseThrow(() -> new ThresherException(ErrorCode.UNKNOWN_BINDING, "binding '"
                    + request.bindingName() + "' does not exist for tenant '" + request.tenant() + "'"));
            call.resolved(binding.name());
            if (request.pinnedVersion().isPresent() && request.pinnedVersion().get() != binding.version()) {
                if (request.pinnedVersion().get() > binding.version() && refresh + 1 < BINDING_REFRESHES) {
                    catalog.invalidateBinding(request.tenant(), request.bindingName()); // the cache may be behind
                    continue;
                }
                throw new ThresherException(ErrorCode.TARGET_STALE, "binding " + request.bindingName() + " is at version "
                        + binding.version() + "; the call pinned version " + request.pinnedVersion().get()).beforeGuestCode();
            }
            CallPlan plan;
            try {
                plan = planWithActivationWait(call, binding);
            } catch (ThresherException e) {
                control.insertRefusedInvocation(call.callId, binding, request.principal(), hostId,
                        call.deadline.remainingMillis(), call.deadlineMs, e.code(), e.getMessage());
                tellRecorded(call);
                throw e;
            }
            call.planned(plan);
            if (control.insertInvocation(call.callId, binding, request.principal(), hostId, plan.targets().size(),
                    call.deadline.remainingMillis(), call.deadlineMs).isPresent()) {
                tellRecorded(call);
                return;
            }
            catalog.invalidateBinding(request.tenant(), request.bindingName());
            if (refresh + 1 >= BINDING_REFRESHES) {
                throw new ThresherException(ErrorCode.TARGET_STALE, "binding " + request.bindingName()
                        + " kept getting new versions while the call was planned");
            }
        }
    }

    /** Tells the front door the call's id once its invocation is recorded (CallRequest.onRecorded). */
    private static void tellRecorded(CallRun call) {
        try {
            call.request.onRecorded().accept(call.callId.toString());
        } catch (RuntimeException e) {
            log.warn("the listener of call {} failed: {}", call.callId, e.toString());
        }
    }

    /**
     * Plans the call; when a partition has no live leader, reads the topology again until one
     * appears or the earlier of the deadline and the activation window passes.
     */
    private CallPlan planWithActivationWait(CallRun call, Binding binding) {
        Deadline giveUp = call.deadline.earlier(Deadline.afterMillis(call.startNanos, limits.activationWindowMs()));
        Topology topology = catalog.topology();
        while (true) {
            try {
                return CallPlanner.plan(call.callId, binding, topology, limits);
            } catch (ThresherException e) {
                if (e.code() != ErrorCode.CELL_UNAVAILABLE || giveUp.remainingNanos() <= msToNanos(ACTIVATION_POLL_MS)) {
                    throw e;
                }
                pause(ACTIVATION_POLL_MS);
                topology = catalog.refreshTopology();
            }
        }
    }

    /**
     * The outcome of one slot after its attempts: null failure when published. A slot that ran no
     * guest and failed after the call had already stopped (it was not admitted, or its host skipped
     * it on the coordinator's stop) is {@code notStarted}: it is no started shard whose failure could
     * be the call's cause.
     */
    private record SlotResult(ShardTarget target, ThresherException failure, boolean notStarted) {
        SlotResult(ShardTarget target, ThresherException failure) {
            this(target, failure, false);
        }
    }

    /**
     * Sends one request per leader host through the bounded pool, hosts in the order of their lowest
     * slot. Once a slot fails for good or the deadline passes, no further host request is admitted and
     * no slot is sent again; started requests settle; the failure of the lowest slot surfaces,
     * whatever order failures arrived in.
     */
    private void dispatch(CallRun call) {
        Map<String, List<ShardTarget>> byHost = new LinkedHashMap<>();
        for (ShardTarget t : call.plan().targets()) {
            byHost.computeIfAbsent(t.leader().hostId(), h -> new ArrayList<>()).add(t);
        }
        List<CompletableFuture<List<SlotResult>>> started = new ArrayList<>();
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
                     MDC.MDCCloseable id = MDC.putCloseable(CALL_ID, call.callId.toString())) {
                    return runHost(call, group, place);
                }
            }, callExecutor));
        }
        Map<Integer, ThresherException> failures = new TreeMap<>();
        for (CompletableFuture<List<SlotResult>> f : started) {
            for (SlotResult r : f.join()) {
                call.redispatched(r.target());
                if (r.failure() != null && !r.notStarted()) {
                    failures.put(r.target().slotIndex(), r.failure());
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
        int slotIndex = first.slotIndex();
        long now = System.nanoTime();
        long until = now + call.deadline.remainingNanos();
        String binding = call.request.tenant() + "/" + call.request.bindingName();
        FairPlaces.Permit place;
        try {
            place = until - now > 0 ? hostPool.acquire(binding, binding + "@" + first.leader().hostId(), until) : null;
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted while dispatching", ie);
        }
        if (place == null) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before slot " + slotIndex
                    + " was admitted" + again);
        }
        return place;
    }

    /**
     * Runs one host's slots, holding one pool place while its request is out. Slots that fail in a
     * way {@link RetryPolicy} allows are re-resolved (the pool place given up while they wait for a
     * leader) and sent again, grouped by their new leader.
     */
    private List<SlotResult> runHost(CallRun call, List<ShardTarget> group, FairPlaces.Permit admitted) {
        Map<Integer, Integer> attempt = new HashMap<>();
        group.forEach(t -> attempt.put(t.slotIndex(), 1));
        List<SlotResult> results = new ArrayList<>();
        List<List<ShardTarget>> toSend = new ArrayList<>(List.of(group));
        FairPlaces.Permit place = admitted;
        while (!toSend.isEmpty()) {
            List<ShardTarget> targets = toSend.remove(0);
            if (place == null) {
                try {
                    place = admit(call, targets.get(0), " again");
                } catch (ThresherException e) {
                    targets.forEach(t -> results.add(new SlotResult(t, e.code() == ErrorCode.DEADLINE_EXCEEDED
                            ? new ThresherException(e.code(), "deadline passed before slot " + t.slotIndex()
                                    + " was admitted again") : e)));
                    continue;
                }
                if (call.stopped()) {
                    place.close();
                    place = null;
                    targets.forEach(t -> results.add(new SlotResult(t, call.stopCause(), true)));
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
                log.debug("retrying {} (attempt {} of {})", describe(t), attempt.get(t.slotIndex()) + 1,
                        limits.attemptBudget());
                ShardTarget again;
                try {
                    again = reresolve(call, t);
                } catch (ThresherException e) {
                    results.add(new SlotResult(t, e));
                    call.stop(e);
                    // failed for good like any other slot: counted, and the call stops on every host
                    failedSlots.incrementAndGet();
                    stopOtherHosts(call, t.leader());
                    continue;
                }
                if (again == null) {
                    // another slot failed meanwhile: nothing is sent, and this slot, never started, is no cause
                    results.add(new SlotResult(t, r.getValue(), true));
                    continue;
                }
                attempt.merge(t.slotIndex(), 1, Integer::sum);
                regrouped.computeIfAbsent(again.leader().hostId(), h -> new ArrayList<>()).add(again);
            }
            toSend.addAll(regrouped.values());
        }
        return results;
    }

    /** Judges one host reply's outcomes: published, retried (into {@code retry}), or failed (stopping the call). */
    private void judge(CallRun call, List<SlotOutcomeAt> outcomes, Map<Integer, Integer> attempt,
                       Map<ShardTarget, ThresherException> retry, List<SlotResult> results) {
        for (SlotOutcomeAt o : outcomes) {
            if (o.failure() == null) {
                results.add(new SlotResult(o.target(), null));
                continue;
            }
            if (!o.provablyNotStarted()) {
                call.guestMayHaveRun();
            }
            RetryPolicy.Verdict verdict = RetryPolicy.decide(o.failure().code(), o.provablyNotStarted(),
                    attempt.get(o.target().slotIndex()), limits.attemptBudget(), call.stopped(), call.deadline.passed());
            if (verdict.retry()) {
                retry.put(o.target(), o.failure());
            } else if (o.provablyNotStarted() && call.stopped()) {
                results.add(new SlotResult(o.target(), o.failure(), true));
            } else {
                call.stop(o.failure());
                failedSlots.incrementAndGet();
                results.add(new SlotResult(o.target(), o.failure()));
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
    private record SlotOutcomeAt(ShardTarget target, ThresherException failure, boolean provablyNotStarted) {}

    /** Sends one host request for {@code targets} (all led by the same host) and waits for its reply within the deadline. */
    private List<SlotOutcomeAt> send(CallRun call, List<ShardTarget> targets, Map<Integer, Integer> attempt) {
        CallPlan plan = call.plan();
        Host leader = targets.get(0).leader();
        long remainingMicros = call.deadline.remainingMicros();
        if (remainingMicros <= 0) {
            return failAll(targets, new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before slot "
                    + targets.get(0).slotIndex() + " was sent"), true);
        }
        List<SlotRun> slots = targets.stream().map(t -> new SlotRun(t.slotIndex(), t.partition().id(),
                t.partition().epoch(), t.wireId(), attempt.get(t.slotIndex()))).toList();
        HostRunRequest req = new HostRunRequest(requestIds.incrementAndGet(), call.callId.toString(),
                call.request.tenant(), plan.binding().name(), plan.binding().componentDigest(), plan.binding().version(),
                remainingMicros, call.request.argumentsJson(), slots);
        call.sent(slots.size());
        CompletableFuture<HostRunReply> sent = wire.send(leader.wireHost(), leader.wirePort(), req);
        HostRunReply reply;
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
        Map<Integer, SlotOutcome> bySlot = new HashMap<>();
        reply.slots().forEach(o -> bySlot.put(o.slotIndex(), o));
        List<SlotOutcomeAt> out = new ArrayList<>(targets.size());
        for (ShardTarget t : targets) {
            SlotOutcome o = bySlot.get(t.slotIndex());
            if (o == null || !o.wireId().equals(t.wireId())) {
                out.add(new SlotOutcomeAt(t, new ThresherException(ErrorCode.INTERNAL_ERROR, describe(t)
                        + ": the host's reply has no outcome for it"), false));
                continue;
            }
            call.addPhase(Phase.READ, TimeUnit.MICROSECONDS.toNanos(o.readMicros()));
            call.addPhase(Phase.GUEST, TimeUnit.MICROSECONDS.toNanos(o.guestMicros()));
            out.add(o.published() ? new SlotOutcomeAt(t, null, false)
                    : new SlotOutcomeAt(t, new ThresherException(o.code(), describe(t) + ": " + o.message()),
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
    private HostRunReply awaitReply(CallRun call, CompletableFuture<HostRunReply> sent, List<ShardTarget> targets)
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

    private static List<SlotOutcomeAt> failAll(List<ShardTarget> targets, ThresherException e, boolean provablyNotStarted) {
        return targets.stream().map(t -> new SlotOutcomeAt(t, e, provablyNotStarted)).toList();
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
                return new ShardTarget(t.slotIndex(), p, leader.get(), t.wireId());
            }
            if (giveUp.remainingNanos() <= msToNanos(ACTIVATION_POLL_MS)) {
                throw new ThresherException(ErrorCode.CELL_UNAVAILABLE, "partition " + p.id() + " has no live leader");
            }
            if (!waited) {
                waited = true;
                leaderWaits.incrementAndGet();
            }
            pause(ACTIVATION_POLL_MS);
        }
    }

    /**
     * Takes the reduce lease and reads the slots (one transaction), judges them, reduces (or replays a
     * journaled reduction) and journals the reduction with the result's publication (one transaction).
     */
    private String reduceAndPublish(CallRun call) {
        CallPlan plan = call.plan();
        long t = System.nanoTime();
        failpoints.hit(Failpoint.BEFORE_REDUCE, new Site(hostId, -1, -1, plan.reduceWireId()));
        // Slots are read and judged as late as possible: immediately before reduce.
        ReduceStart start = control.startReduce(call.callId, call.request.tenant(), hostId, plan.reduceWireId(),
                limits.reduceLeaseMs());
        if (!start.leaseHeld()) {
            throw new ThresherException(ErrorCode.REDUCE_LEASE_LOST, "another node holds the reduce lease of "
                    + call.callId);
        }
        List<Partial> merged;
        try {
            merged = SlotValidator.validate(call.dispatchedTargets(), start.slots(), limits);
        } catch (ThresherException e) {
            try {
                observer.slotRejected(e.code());
            } catch (RuntimeException oe) {
                log.debug("the call observer failed: {}", oe.toString());
            }
            throw e;
        }
        call.deadline.check("before reduce");
        call.addPhase(Phase.VALIDATE, System.nanoTime() - t);

        t = System.nanoTime();
        JournalEntry reduction = start.journaledReduce().orElseGet(() -> reduce(call, merged));
        call.addPhase(Phase.REDUCE, System.nanoTime() - t);
        failpoints.hit(Failpoint.AFTER_REDUCE_BEFORE_PUBLISH, new Site(hostId, -1, -1, plan.reduceWireId()));
        call.deadline.check("before publishing the result");

        t = System.nanoTime();
        Map.Entry<JournalEntry, Optional<PublishOutcome>> published = control.journalAndPublish(reduction, hostId,
                call.attempts());
        JournalEntry standing = published.getKey();
        if (!standing.succeeded()) {
            throw new ThresherException(ErrorCode.ofCode(standing.errorCode()), "reduce: " + standing.errorMessage());
        }
        PublishOutcome outcome = published.getValue().orElseThrow();
        String visible = switch (outcome.status()) {
            case PUBLISHED, ALREADY_PUBLISHED -> outcome.visibleResult().orElseThrow();
            case REDUCE_LEASE_LOST, NOT_RUNNING -> throw new ThresherException(ErrorCode.REDUCE_LEASE_LOST,
                    "the reduce lease of " + call.callId + " ended before its result was published");
            case BINDING_REPLACED -> throw new ThresherException(ErrorCode.TARGET_STALE, "binding "
                    + plan.binding().name() + " got a new version during the call; its result is not published");
            case DEADLINE_PASSED -> throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the deadline passed, on"
                    + " the control database's clock, before the result of " + call.callId + " was published");
        };
        call.addPhase(Phase.RESULT, System.nanoTime() - t);
        return visible;
    }

    /**
     * Runs reduce in this node's reduce cell and returns its outcome to journal: the result, or the
     * guest's failure (a component outcome too). A reduce refused before guest code, or cut by the
     * deadline, has no outcome to journal and throws.
     */
    private JournalEntry reduce(CallRun call, List<Partial> merged) {
        CallPlan plan = call.plan();
        byte[] partials = PartialsCodec.encode(merged);
        Budgets budgets = plan.binding().budgets();
        // the binding's run budget bounds reduce too, within the call's deadline
        Deadline reduceDeadline = budgets.runDeadline(call.deadline);
        CompletableFuture<ReduceOutcome> running = CompletableFuture.supplyAsync(() -> {
            try (MDC.MDCCloseable id = MDC.putCloseable(CALL_ID, call.callId.toString())) {
                return reducer.reduce(plan.binding().componentDigest(), partials, call.request.argumentsJson(),
                        reduceDeadline);
            }
        }, guestExecutor);
        try {
            ReduceOutcome reduced = awaitReduce(running, call.deadline);
            if (reduced.resultJson().indexOf('\u0000') >= 0) {
                // no PostgreSQL text holds a NUL: refused as the guest's invalid result before it reaches the journal
                return new JournalEntry(call.request.tenant(), plan.reduceWireId(), call.callId, JournalEntry.REDUCE,
                        hostId, -1, -1, false, ErrorCode.GUEST_INVALID_RESULT.code(), "reduce returned a result"
                        + " holding a NUL character (U+0000), which a result cannot hold", 0, 0, null, 0);
            }
            byte[] json = reduced.resultJson().getBytes(StandardCharsets.UTF_8);
            if (json.length > limits.resultMaxBytes()) {
                throw new ThresherException(ErrorCode.RESULT_TOO_LARGE, "the reduced result is " + json.length
                        + " bytes; the limit is " + limits.resultMaxBytes());
            }
            return new JournalEntry(call.request.tenant(), plan.reduceWireId(), call.callId, JournalEntry.REDUCE,
                    hostId, -1, -1, true, 0, null, 0, 0, json, TimeUnit.NANOSECONDS.toMicros(reduced.guestNanos()));
        } catch (RuntimeException e) {
            if (reducer.refusedBeforeGuest(e) || !running.isDone() || running.isCancelled()) {
                throw ThresherException.of(e);
            }
            ThresherException te = ThresherException.of(budgets.overRunBudget(e, call.deadline, "reduce"));
            return new JournalEntry(call.request.tenant(), plan.reduceWireId(), call.callId, JournalEntry.REDUCE, hostId,
                    -1, -1, false, te.code().code(), te.getMessage(), 0, 0, null, 0);
        }
    }

    /**
     * Waits for reduce no longer than the deadline. A reduce still queued then refuses to start (the
     * cell checks the deadline before the guest); one running is interrupted at the deadline.
     */
    private static ReduceOutcome awaitReduce(CompletableFuture<ReduceOutcome> reduce, Deadline deadline) {
        try {
            return reduce.get(Math.max(0, deadline.remainingNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            reduce.cancel(false);
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting for reduce");
        } catch (ExecutionException e) {
            throw ThresherException.of(e.getCause() == null ? e : e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted waiting for reduce", e);
        }
    }

    private static String describe(ShardTarget t) {
        return "slot " + t.slotIndex() + " (partition " + t.partition().id() + " on " + t.leader().hostId() + ")";
    }

    /**
     * A call's arguments as the coordinator accepts them: one JSON value of at most
     * {@code limits.directCallPayloadBytes} UTF-8 bytes.
     *
     * @throws ThresherException {@code PAYLOAD_TOO_LARGE} or {@code INVALID_ARGUMENTS}
     */
    public static void checkArguments(String argumentsJson, Limits limits) {
        int bytes = argumentsJson.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > limits.directCallPayloadBytes()) {
            throw new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "arguments are " + bytes + " bytes; the limit is "
                    + limits.directCallPayloadBytes());
        }
        try (JsonParser p = JSON.createParser(argumentsJson)) {
            if (p.nextToken() == null) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments are empty; pass a JSON value such as '{}'");
            }
            p.skipChildren();
            if (p.nextToken() != null) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments hold more than one JSON value");
            }
        } catch (JsonProcessingException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments are not valid JSON: "
                    + e.getOriginalMessage());
        } catch (IOException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments could not be read: " + e.getMessage());
        }
    }


    private static long msToNanos(long ms) {
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted", e);
        }
    }
}
