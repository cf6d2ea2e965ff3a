package dev.thresher.coordinator;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.Binding;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.coordinator.CallPhases.Phase;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import dev.thresher.store.DbDeadline;
import dev.thresher.topology.Host;
import dev.thresher.topology.Topology;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
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
 * state lives in one {@link CallRun}; whether a failed slot is sent again is {@link RetryPolicy}'s. The host requests
 * are {@link CallDispatcher}'s, reduce and the result's publication {@link CallReduction}'s; this class records the
 * call, plans it and records its failure.
 */
public final class Coordinator implements CallService {
    /** The log context key of a call's id; {@code wire_id} is a shard run's (docs/operations.md, "Logs"). */
    public static final String CALL_ID = "call_id";
    private static final Logger log = LoggerFactory.getLogger(Coordinator.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    static final long ACTIVATION_POLL_MS = 100;
    /** Re-resolutions of a binding whose cached version turned out superseded when the call was recorded. */
    private static final int BINDING_REFRESHES = 3;
    /** The longest a coordinator waits to record a call's failure before answering the caller. */
    private static final long FAILURE_RECORD_MS = 1_000;
    /** What recording a failure may take even when the deadline has passed. */
    private static final long FAILURE_RECORD_MIN_MS = 250;

    private final String hostId;
    private final CallStore control;
    private final Catalog catalog;
    private final Limits limits;
    private final ExecutorService callExecutor;
    private final CallDispatcher dispatcher;
    private final CallReduction reduction;
    private final AtomicLong replans = new AtomicLong();
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
        this.limits = limits;
        this.callExecutor = callExecutor;
        this.dispatcher = new CallDispatcher(catalog, wire, limits, callExecutor);
        this.reduction = new CallReduction(hostId, control, reducer, limits, guestExecutor, failpoints, observer);
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
        return dispatcher.shardRetries();
    }

    /** Calls planned again because a partition was split or dropped under them. */
    public long replans() {
        return replans.get();
    }

    /** Host requests given up because their partitions' epochs moved on while they were out (a leader replaced). */
    public long supersededRequests() {
        return dispatcher.supersededRequests();
    }

    /** Slots to be sent again that found their partition without a live leader and waited for one. */
    public long leaderWaits() {
        return dispatcher.leaderWaits();
    }

    /** Slots of calls coordinated here that failed for good. */
    public long failedShardRuns() {
        return dispatcher.failedShardRuns();
    }

    /** Host requests out now, each holding a place of this node's pool of {@code limits.shardConcurrency}. */
    public int hostRequestsOut() {
        return dispatcher.hostRequestsOut();
    }

    /** Host requests waiting for a place of this node's pool now. */
    public int hostRequestsWaiting() {
        return dispatcher.hostRequestsWaiting();
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
            dispatcher.dispatch(call);
            call.addPhase(Phase.DISPATCH, System.nanoTime() - t);
            String visible = reduction.reduceAndPublish(call);
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
            Optional<String> published;
            try (DbDeadline scope = recordingFailure(call)) {
                published = control.failInvocation(call.callId, te.code(), te.getMessage(), call.attempts());
            } catch (RuntimeException recordFailure) {
                log.warn("could not record the failure of call {} (the reconciler will): {}", call.callId,
                        recordFailure.toString());
                if (call.publicationSent()) {
                    // the publication was sent and neither its answer nor the call's state could be read: whether the
                    // result was published is unknown, whatever ended the wait (the deadline, a lost connection)
                    throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "the control database did not answer the"
                            + " publication of the result of call " + call.callId + ", nor whether it was published: it"
                            + " may have been; SHOW CALL '" + call.callId + "' tells once the control database answers ("
                            + te.getMessage() + ")", te).afterGuestCode();
                }
                throw te;
            }
            if (published.isPresent()) {
                // published, though this node never heard the commit answered: the journal proves the success
                log.info("call {} was published though its coordinator heard no answer to the publication ({}); answering"
                        + " its result", call.callId, te.getMessage());
                phases.record(call.phaseNanos());
                return new CallResult(call.callId.toString(), published.get());
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
                    + Quoted.of(request.bindingName()) + "' does not exist for tenant '" + Quoted.of(request.tenant()) + "'"));
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
                recordRefusal(call, binding, e);
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

    /**
     * Records a call refused at planning, as failed, with the refusal's own code: bounded as a failure's record is (by
     * what is left of the deadline, at least {@value #FAILURE_RECORD_MIN_MS} ms, at most {@value #FAILURE_RECORD_MS}),
     * not by the call's deadline alone, which a wait for a leader may have spent; a record that fails is logged and
     * the refusal stands.
     */
    private void recordRefusal(CallRun call, Binding binding, ThresherException refusal) {
        try (DbDeadline scope = recordingFailure(call)) {
            control.insertRefusedInvocation(call.callId, binding, call.request.principal(), hostId,
                    call.deadline.remainingMillis(), call.deadlineMs, refusal.code(), refusal.getMessage());
            tellRecorded(call);
        } catch (RuntimeException recordFailure) {
            log.warn("could not record the refusal of call {} ({}): {}", call.callId, refusal.code(),
                    recordFailure.toString());
        }
    }

    /**
     * The database scope a call's failure or refusal is recorded in: what is left of its deadline, at least
     * {@value #FAILURE_RECORD_MIN_MS} ms and at most {@value #FAILURE_RECORD_MS}.
     */
    private static DbDeadline recordingFailure(CallRun call) {
        return DbDeadline.enter(Deadline.after(Duration.ofMillis(
                Math.clamp(call.deadline.remainingMillis(), FAILURE_RECORD_MIN_MS, FAILURE_RECORD_MS))));
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
        Deadline window = Deadline.afterMillis(call.startNanos, limits.activationWindowMs());
        Topology topology = catalog.topology();
        while (true) {
            try {
                return CallPlanner.plan(call.callId, binding, topology, limits);
            } catch (ThresherException e) {
                // the wait ends with the activation window, or two polls before the deadline: the refusal it ends in
                // is the partition's, typed by its real cause, never the deadline's
                if (e.code() != ErrorCode.CELL_UNAVAILABLE || window.remainingNanos() <= msToNanos(ACTIVATION_POLL_MS)
                        || call.deadline.remainingNanos() <= msToNanos(2 * ACTIVATION_POLL_MS)) {
                    throw e;
                }
                pause(ACTIVATION_POLL_MS);
                try {
                    topology = catalog.refreshTopology();
                } catch (ThresherException unread) {
                    // the control database did not answer in time: the partition still has no known leader
                    log.debug("call {}: the topology could not be read again ({}); refusing as it stood", call.callId,
                            unread.toString());
                    throw e;
                }
            }
        }
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


    static long msToNanos(long ms) {
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }

    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted", e);
        }
    }
}
