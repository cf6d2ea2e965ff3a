package dev.thresher.coordinator;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.Binding;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.ReduceOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.store.control.PublishOutcome;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireMessage;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Coordinates calls accepted on this node.
 *
 * <pre>
 *  call ─► check deadline and arguments ─► resolve binding ─► read topology ─► plan (no rows read;
 *       waits for a missing leader up to min(deadline, activation window))
 *       ─► record invocation ─► dispatch shards in slot order through the bounded pool
 *            (a retryable failure that provably ran no guest code is retried on a re-resolved
 *             target while the attempt budget lasts; any other failure stops admission)
 *       ─► settle started shards ─► take the reduce lease ─► read the published slots and
 *          validate every slot ─► reduce (journaled by the reduce wire identity)
 *       ─► publish once, fenced by the reduce lease ─► result
 * </pre>
 *
 * One absolute deadline bounds every step; it crosses the wire as remaining budget.
 */
public final class Coordinator implements CallService {
    private static final Logger log = LoggerFactory.getLogger(Coordinator.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long ACTIVATION_POLL_MS = 100;

    private final String hostId;
    private final ControlStore control;
    private final WireClient wire;
    private final CellHost cells;
    private final ComponentCache components;
    private final Limits limits;
    private final ExecutorService callExecutor;
    private final ExecutorService guestExecutor;
    private final Failpoints failpoints;
    private final Semaphore shardPool;
    private final AtomicLong requestIds = new AtomicLong();
    private final AtomicLong shardRetries = new AtomicLong();
    private final AtomicLong failedSlots = new AtomicLong();
    private final AtomicInteger callsInFlight = new AtomicInteger();
    private final CallPhases phases = new CallPhases();

    /**
     * @param callExecutor runs each call and each of its slots (virtual threads fit: they mostly wait)
     * @param guestExecutor platform threads that run reduce (polyglot contexts stay off virtual threads); not the
     *     shard pool, or a reduce could queue behind other calls' shard runs past its deadline
     */
    public Coordinator(String hostId, ControlStore control, WireClient wire, CellHost cells, Limits limits,
                       ExecutorService callExecutor, ExecutorService guestExecutor, Failpoints failpoints) {
        this.hostId = hostId;
        this.control = control;
        this.wire = wire;
        this.cells = cells;
        this.components = new ComponentCache(control);
        this.limits = limits;
        this.callExecutor = callExecutor;
        this.guestExecutor = guestExecutor;
        this.failpoints = failpoints;
        this.shardPool = new Semaphore(limits.shardConcurrency(), true);
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

    /** Shard runs this coordinator retried automatically. */
    public long shardRetries() {
        return shardRetries.get();
    }

    /** Slots of calls coordinated here that failed for good (counted once the call stops admitting for it). */
    public long failedSlots() {
        return failedSlots.get();
    }

    private CallResult run(CallRequest request, long startNanos) {
        long deadlineMs = request.deadlineMs().orElse(limits.callDeadlineMs());
        if (deadlineMs <= 0 || deadlineMs > limits.maxCallDeadlineMs()) {
            throw new ThresherException(ErrorCode.INVALID_DEADLINE, "a call deadline is 1.." + limits.maxCallDeadlineMs()
                    + " ms, was " + deadlineMs);
        }
        long deadlineNanos = startNanos + TimeUnit.MILLISECONDS.toNanos(deadlineMs);
        long deadlineEpochMs = System.currentTimeMillis() + deadlineMs;
        checkArguments(request.argumentsJson());
        Binding binding = control.currentBinding(request.tenant(), request.bindingName())
                .orElseThrow(() -> new ThresherException(ErrorCode.UNKNOWN_BINDING, "binding '" + request.bindingName()
                        + "' does not exist for tenant '" + request.tenant() + "'"));
        UUID callId = UUID.randomUUID();
        CallPlan plan;
        try {
            plan = planWithActivationWait(callId, binding, startNanos, deadlineNanos);
        } catch (ThresherException e) {
            // A call refused at planning still has an identity operators can find.
            control.insertInvocation(callId, binding, request.principal(), hostId, 0, deadlineEpochMs, deadlineMs);
            control.failInvocation(callId, e.code(), e.getMessage(), 0);
            throw e;
        }
        control.insertInvocation(callId, binding, request.principal(), hostId, plan.targets().size(), deadlineEpochMs,
                deadlineMs);
        AtomicInteger attempts = new AtomicInteger();
        AtomicBoolean guestRan = new AtomicBoolean();
        try {
            List<ShardTarget> targets = dispatch(plan, request, deadlineNanos, attempts, guestRan);
            if (!control.takeReduceLease(callId, hostId, plan.reduceWireId(), limits.reduceLeaseMs())) {
                throw new ThresherException(ErrorCode.REDUCE_LEASE_LOST, "another node holds the reduce lease of " + callId);
            }
            Site site = new Site(hostId, -1, -1, plan.reduceWireId());
            failpoints.hit(Failpoint.BEFORE_REDUCE, site);
            // Slots are read and judged as late as possible: immediately before reduce.
            List<Partial> merged = SlotValidator.validate(targets, control.slots(callId), limits);
            Deadlines.check(deadlineNanos, "before reduce");
            String result = reduce(plan, request, merged, deadlineNanos);
            failpoints.hit(Failpoint.AFTER_REDUCE_BEFORE_PUBLISH, site);
            Deadlines.check(deadlineNanos, "before publishing the result");
            PublishOutcome published = control.publishResult(callId, hostId, result, attempts.get());
            String visible = switch (published.status()) {
                case PUBLISHED, ALREADY_PUBLISHED -> published.visibleResult().orElseThrow();
                case REDUCE_LEASE_LOST, NOT_RUNNING -> throw new ThresherException(ErrorCode.REDUCE_LEASE_LOST,
                        "the reduce lease of " + callId + " ended before its result was published");
                case BINDING_REPLACED -> throw new ThresherException(ErrorCode.TARGET_STALE, "binding "
                        + binding.name() + " got a new version during the call; its result is not published");
            };
            log.debug("call {} of {} published after {} µs", callId, binding.name(),
                    TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - startNanos));
            return new CallResult(callId.toString(), visible);
        } catch (RuntimeException e) {
            ThresherException te = ThresherException.of(e);
            if (guestRan.get()) {
                te = te.afterGuestCode(); // a retryable code then still means "call again", not "nothing ran"
            }
            try {
                control.failInvocation(callId, te.code(), te.getMessage(), attempts.get());
            } catch (RuntimeException recordFailure) {
                log.warn("could not record the failure of call {}: {}", callId, recordFailure.toString());
            }
            throw te;
        }
    }

    /**
     * Plans the call; when a partition has no live leader, reads the topology again until one
     * appears or the earlier of the deadline and the activation window passes.
     */
    private CallPlan planWithActivationWait(UUID callId, Binding binding, long startNanos, long deadlineNanos) {
        long giveUp = Math.min(deadlineNanos, startNanos + TimeUnit.MILLISECONDS.toNanos(limits.activationWindowMs()));
        while (true) {
            try {
                return CallPlanner.plan(callId, binding, control.readTopology(), limits);
            } catch (ThresherException e) {
                if (e.code() != ErrorCode.CELL_UNAVAILABLE || System.nanoTime() + msToNanos(ACTIVATION_POLL_MS) - giveUp >= 0) {
                    throw e;
                }
                pause(ACTIVATION_POLL_MS);
            }
        }
    }

    /** The outcome of one slot after its attempts. */
    private record SlotOutcome(ShardTarget target, ThresherException failure) {}

    /** Whether a slot holds its place in the shard pool; it gives it up while it waits for a new leader. */
    private static final class Permit {
        boolean held = true;
    }

    /**
     * Sends every shard through the bounded pool in slot order. Once one fails for good or the
     * deadline passes, no new shard is admitted; started shards settle; the failure of the lowest
     * slot surfaces, whatever order failures arrived in.
     *
     * @return the targets as finally dispatched
     */
    private List<ShardTarget> dispatch(CallPlan plan, CallRequest request, long deadlineNanos, AtomicInteger attempts,
                                       AtomicBoolean guestRan) {
        AtomicReference<ThresherException> stop = new AtomicReference<>();
        Map<Integer, CompletableFuture<SlotOutcome>> started = new TreeMap<>();
        for (ShardTarget t : plan.targets()) {
            if (stop.get() != null) {
                break;
            }
            long waitNanos = deadlineNanos - System.nanoTime();
            boolean admitted;
            try {
                admitted = waitNanos > 0 && shardPool.tryAcquire(waitNanos, TimeUnit.NANOSECONDS);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted while dispatching", ie);
            }
            if (!admitted) {
                stop.compareAndSet(null, new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "deadline passed before slot " + t.slotIndex() + " was admitted"));
                break;
            }
            if (stop.get() != null) {
                // A failure settled while this slot waited for the pool: it is not admitted.
                shardPool.release();
                break;
            }
            Permit permit = new Permit();
            started.put(t.slotIndex(), CompletableFuture.supplyAsync(() -> {
                try {
                    SlotOutcome o = runSlot(plan, t, request, deadlineNanos, stop, attempts, permit, guestRan);
                    if (o.failure() != null) {
                        stop.compareAndSet(null, o.failure());
                        failedSlots.incrementAndGet();
                    }
                    return o;
                } finally {
                    if (permit.held) {
                        shardPool.release();
                    }
                }
            }, callExecutor));
        }
        List<ShardTarget> targets = new ArrayList<>();
        ThresherException first = null;
        for (CompletableFuture<SlotOutcome> f : started.values()) {
            SlotOutcome o = f.join();
            targets.add(o.target());
            if (first == null && o.failure() != null) {
                first = o.failure();
            }
        }
        if (first != null) {
            throw first;
        }
        if (stop.get() != null) {
            throw stop.get();
        }
        return targets;
    }

    /**
     * Runs one slot, retrying only what the contract allows. Between attempts the slot gives up its
     * pool place while it waits for a leader, and it sends again only if no other slot failed and
     * the deadline has not passed in the meantime.
     */
    private SlotOutcome runSlot(CallPlan plan, ShardTarget target, CallRequest request, long deadlineNanos,
                                AtomicReference<ThresherException> stop, AtomicInteger attempts, Permit permit,
                                AtomicBoolean guestRan) {
        ShardTarget t = target;
        for (int attempt = 1; ; attempt++) {
            attempts.incrementAndGet();
            ThresherException failure;
            boolean provablyNotStarted;
            long remainingMicros = TimeUnit.NANOSECONDS.toMicros(deadlineNanos - System.nanoTime());
            if (remainingMicros <= 0) {
                return new SlotOutcome(t, new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "deadline passed before slot " + t.slotIndex() + " was sent"));
            }
            ShardRunRequest req = new ShardRunRequest(requestIds.incrementAndGet(), plan.callId().toString(), t.wireId(),
                    request.tenant(), plan.binding().name(), plan.binding().componentDigest(), plan.binding().version(), t.slotIndex(),
                    t.partition().id(), t.partition().epoch(), remainingMicros, attempt, request.argumentsJson());
            CompletableFuture<WireMessage> sent = wire.send(t.leader().wireHost(), t.leader().wirePort(), req);
            try {
                WireMessage reply = sent.get(remainingMicros, TimeUnit.MICROSECONDS);
                switch (reply) {
                    case ShardRunResult r -> {
                        guestRan.set(true);
                        return new SlotOutcome(t, null);
                    }
                    case ShardRunFailure f -> {
                        failure = new ThresherException(f.code(), describe(t) + ": " + f.message());
                        provablyNotStarted = !f.guestStarted();
                    }
                    case WireMessage.Hello m -> throw unexpected(t, m);
                    case WireMessage.HelloAck m -> throw unexpected(t, m);
                    case WireMessage.HelloReject m -> throw unexpected(t, m);
                    case ShardRunRequest m -> throw unexpected(t, m);
                }
            } catch (TimeoutException e) {
                guestRan.set(true); // the request left: its guest may be running
                sent.cancel(false); // frees the request's place on the connection; a late reply is dropped
                return new SlotOutcome(t, new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "deadline passed waiting for " + describe(t)));
            } catch (ExecutionException | CompletionException e) {
                ThresherException te = ThresherException.of(e.getCause() == null ? e : e.getCause());
                failure = new ThresherException(te.code(), describe(t) + ": " + te.getMessage(), te);
                // The client proves a request never left only for HOST_UNREACHABLE.
                provablyNotStarted = te.code() == ErrorCode.HOST_UNREACHABLE;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new SlotOutcome(t, new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted", e));
            } catch (ThresherException e) {
                return new SlotOutcome(t, e);
            }
            if (!provablyNotStarted) {
                guestRan.set(true);
            }
            boolean retry = failure.code().retryClass() == RetryClass.RETRYABLE && provablyNotStarted
                    && attempt < limits.attemptBudget() && stop.get() == null && System.nanoTime() < deadlineNanos;
            if (!retry) {
                return new SlotOutcome(t, failure);
            }
            log.debug("retrying {} after {} (attempt {} of {})", describe(t), failure.code(), attempt + 1,
                    limits.attemptBudget());
            shardPool.release();
            permit.held = false;
            try {
                t = reresolve(t, deadlineNanos, stop);
            } catch (ThresherException e) {
                return new SlotOutcome(t, e);
            }
            if (t == null) {
                return new SlotOutcome(target, failure); // another slot failed meanwhile: nothing more is sent
            }
            try {
                permit.held = shardPool.tryAcquire(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                return new SlotOutcome(t, new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted", ie));
            }
            if (!permit.held) {
                return new SlotOutcome(t, new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "deadline passed before slot " + t.slotIndex() + " was admitted again"));
            }
            if (stop.get() != null) {
                return new SlotOutcome(t, failure);
            }
            shardRetries.incrementAndGet();
        }
    }

    /**
     * The slot's partition and leader read again from the topology, waiting for a leader like
     * planning does.
     *
     * @return the new target, or null when another slot failed while this one waited
     */
    private ShardTarget reresolve(ShardTarget t, long deadlineNanos, AtomicReference<ThresherException> stop) {
        long giveUp = Math.min(deadlineNanos, System.nanoTime() + msToNanos(limits.activationWindowMs()));
        while (true) {
            if (stop.get() != null) {
                return null;
            }
            Topology topology = control.readTopology();
            Partition p = topology.partition(t.partition().id()).orElseThrow(() -> new ThresherException(
                    ErrorCode.TARGET_STALE, "partition " + t.partition().id() + " no longer exists"));
            Optional<Host> leader = topology.leaderOf(p);
            if (leader.isPresent()) {
                return new ShardTarget(t.slotIndex(), p, leader.get(), t.wireId());
            }
            if (System.nanoTime() + msToNanos(ACTIVATION_POLL_MS) - giveUp >= 0) {
                throw new ThresherException(ErrorCode.CELL_UNAVAILABLE, "partition " + p.id() + " has no live leader");
            }
            pause(ACTIVATION_POLL_MS);
        }
    }

    /** Runs reduce here, or replays its journaled outcome for the call's reduce wire identity. */
    private String reduce(CallPlan plan, CallRequest request, List<Partial> merged, long deadlineNanos) {
        Optional<JournalEntry> journaled = control.journaled(request.tenant(), plan.reduceWireId());
        JournalEntry outcome;
        if (journaled.isPresent()) {
            outcome = journaled.get();
        } else {
            byte[] partials = PartialsCodec.encode(merged);
            CompletableFuture<ReduceOutcome> running = CompletableFuture.supplyAsync(() -> cells.reduce(
                    components.get(plan.binding().componentDigest()), partials, request.argumentsJson(),
                    deadlineNanos), guestExecutor);
            try {
                ReduceOutcome reduced = awaitReduce(running, deadlineNanos);
                byte[] json = reduced.resultJson().getBytes(StandardCharsets.UTF_8);
                if (json.length > limits.resultMaxBytes()) {
                    throw new ThresherException(ErrorCode.RESULT_TOO_LARGE, "the reduced result is " + json.length
                            + " bytes; the limit is " + limits.resultMaxBytes());
                }
                outcome = control.journal(new JournalEntry(request.tenant(), plan.reduceWireId(), plan.callId(),
                        JournalEntry.REDUCE, hostId, -1, -1, true, 0, null, 0, 0, json,
                        TimeUnit.NANOSECONDS.toMicros(reduced.guestNanos())));
            } catch (RuntimeException e) {
                if (CellHost.refusedBeforeGuest(e) || !running.isDone() || running.isCancelled()) {
                    // refused before guest code, or the deadline passed while reduce was queued or running:
                    // no component outcome to journal
                    throw ThresherException.of(e);
                }
                ThresherException te = ThresherException.of(e);
                outcome = control.journal(new JournalEntry(request.tenant(), plan.reduceWireId(), plan.callId(),
                        JournalEntry.REDUCE, hostId, -1, -1, false, te.code().code(), te.getMessage(), 0, 0, null, 0));
            }
        }
        if (!outcome.succeeded()) {
            throw new ThresherException(ErrorCode.ofCode(outcome.errorCode()), "reduce: " + outcome.errorMessage());
        }
        return new String(outcome.payload(), StandardCharsets.UTF_8);
    }

    /**
     * Waits for reduce no longer than the deadline. A reduce still queued then refuses to start (the
     * cell checks the deadline before the guest); one running is interrupted at the deadline.
     */
    private static ReduceOutcome awaitReduce(CompletableFuture<ReduceOutcome> reduce, long deadlineNanos) {
        try {
            return reduce.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
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

    private static ThresherException unexpected(ShardTarget t, WireMessage reply) {
        return new ThresherException(ErrorCode.INTERNAL_ERROR, describe(t) + " answered with an unexpected message "
                + reply.getClass().getSimpleName());
    }

    private void checkArguments(String argumentsJson) {
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
