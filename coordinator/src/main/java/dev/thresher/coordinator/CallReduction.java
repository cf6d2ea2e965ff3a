package dev.thresher.coordinator;

import dev.thresher.bindings.Budgets;
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
import dev.thresher.limits.Limits;
import dev.thresher.store.control.CallJournal.ReduceStart;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.store.control.PublishOutcome;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * A call's last steps ({@link Coordinator}'s after dispatch): the reduce lease with the published slots, their
 * validation, reduce in this node's reduce cell (or the journaled reduction replayed), and the reduction journaled with
 * the result's publication. Logs as the coordinator.
 */
final class CallReduction {
    private static final Logger log = LoggerFactory.getLogger(Coordinator.class);

    private final String hostId;
    private final CallStore control;
    private final Reducer reducer;
    private final Limits limits;
    private final ExecutorService guestExecutor;
    private final Failpoints failpoints;
    private final CallObserver observer;

    CallReduction(String hostId, CallStore control, Reducer reducer, Limits limits, ExecutorService guestExecutor,
                  Failpoints failpoints, CallObserver observer) {
        this.hostId = hostId;
        this.control = control;
        this.reducer = reducer;
        this.limits = limits;
        this.guestExecutor = guestExecutor;
        this.failpoints = failpoints;
        this.observer = observer;
    }

    /**
     * Takes the reduce lease and reads the slots (one transaction), judges them, reduces (or replays a
     * journaled reduction) and journals the reduction with the result's publication (one transaction).
     */
    String reduceAndPublish(CallRun call) {
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
            merged = ShardRunValidator.validate(call.dispatchedTargets(), start.runs(), limits);
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
        call.publishing(); // from here, a failure without an answer may hide a publication
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
            try (MDC.MDCCloseable id = MDC.putCloseable(Coordinator.CALL_ID, call.callId.toString())) {
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
}
