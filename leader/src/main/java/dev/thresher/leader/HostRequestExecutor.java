package dev.thresher.leader;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Burners;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.FairPlaces;
import dev.thresher.limits.Limits;
import dev.thresher.store.DbDeadline;
import dev.thresher.store.control.CallJournal.RequestStart;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.topology.Partition;
import dev.thresher.wire.HostRunHandler;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Runs the slots a coordinator sends this node, one host request at a time per executor thread.
 *
 * <pre>
 * request ─► journaled outcomes of all its wire ids (one statement)
 *   for each slot, in slot order:
 *     the coordinator sent CallStop for the call? ── yes ─► not run
 *     journaled? ── yes ─► replay it (no guest)
 *     lead the partition under that epoch? binding at that version known?  (else: refused, guest not started)
 *     (every slot's read of ≤ rowsPerBatch rows from the local replica starts up front, on the readers' pool,
 *      unless the call was stopped; for an ABI v2 guest a partition larger than that is read when its turn
 *      comes instead, as a stream of batches from one snapshot, each read as the guest asks for it)
 *     batch read? still the leader? deadline left? ─► [shard.before-guest-start] ─► run(batch, args)
 *     ─► [shard.after-guest-start]
 *     a failure the coordinator cannot retry stops the slots after it: they are not run
 *   [shard.before-slot-publish] per slot ─► journal every outcome and publish every slot under a lease,
 *   each fenced by the partition lease, in one transaction ─► one reply, an outcome per slot
 * </pre>
 *
 * This class admits requests and runs their slots; a request's binding is {@link Resolved} once, a slot's input read
 * as {@link ShardRunInputs} says, the deadline judged by the {@link ControlClock}, and the outcomes published by
 * {@link ShardRunPublishing}.
 */
public final class HostRequestExecutor implements HostRunHandler {
    private static final Logger log = LoggerFactory.getLogger(HostRequestExecutor.class);
    /** Stopped calls remembered at once; past it, stops are dropped (the slots then run, and the call fails anyway). */
    private static final int STOPPED_CALLS_MAX = 65_536;

    private final String hostId;
    private final ShardRunJournal control;
    private final BindingVersions catalog;
    private final LedPartitions leases;
    private final PartitionReader reader;
    private final GuestRunner cells;
    private final Limits limits;
    private final ExecutorService executor;
    private final ExecutorService readers;
    private final Failpoints failpoints;
    private final ShardRunPublishing publishing;
    private final AtomicLong replays = new AtomicLong();
    private final AtomicLong refusals = new AtomicLong();
    private final AtomicLong stopsReceived = new AtomicLong();
    private final AtomicLong busy = new AtomicLong();
    /** The shard pool's places, shared fairly among bindings; {@link #executor} has as many threads. */
    private final FairPlaces places;
    /** Bindings whose requests burn a core: their runs wait for one of the process's cores for slow runs too. */
    private final Burners hogs;
    /** Host requests wait for a place here, one virtual thread each. */
    private final ExecutorService admissions = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("shard-admission-", 0).factory());
    /** Calls whose coordinator stopped admitting, until when (nanoTime) to remember them. */
    private final ConcurrentHashMap<String, Long> stoppedCalls = new ConcurrentHashMap<>();

    /**
     * @param control the journal and the slots' publication in the control database
     * @param catalog binding versions (the node's cache)
     * @param leases this node's partition leadership (its lease keeper)
     * @param reader the local shard database
     * @param cells this node's run cells
     * @param executor runs each host request (the shard pool, {@code limits.shardConcurrency} platform threads)
     * @param readers runs the partition reads, as wide as the shard pool
     */
    public HostRequestExecutor(String hostId, ShardRunJournal control, BindingVersions catalog, LedPartitions leases,
                           PartitionReader reader, GuestRunner cells, Limits limits, ExecutorService executor,
                           ExecutorService readers, Failpoints failpoints) {
        this.hostId = hostId;
        this.control = control;
        this.catalog = catalog;
        this.leases = leases;
        this.reader = reader;
        this.cells = cells;
        this.limits = limits;
        this.executor = executor;
        this.hogs = new Burners(limits.slowRunMs());
        this.places = FairPlaces.of(limits, hogs::burns);
        this.readers = readers;
        this.failpoints = failpoints;
        this.publishing = new ShardRunPublishing(hostId, control, limits, failpoints);
    }

    @Override
    public CompletableFuture<HostReply> handle(HostRequest request, long receivedNanos) {
        Deadline deadline = Deadline.afterMicros(receivedNanos, request.remainingBudgetMicros());
        String key = request.tenant() + "/" + request.bindingName();
        // A place of the shard pool first, in the binding's fair share: taken at once when one is free for it, else
        // waited for on a virtual thread. The pool's threads only ever run admitted requests.
        // A binding that burns a core also waits for one of the process's cores for slow runs (SLOW_RUN_CORES).
        FairPlaces.Permit free = deadline.passed() ? null : places.tryAcquire(key);
        if (free != null && !hogs.burns(key)) {
            return admitted(request, key, deadline, free, null);
        }
        return CompletableFuture.supplyAsync(() -> admit(request, key, deadline, free), admissions).thenCompose(place -> {
            if (place instanceof HostReply refused) {
                return CompletableFuture.completedFuture(refused);
            }
            Admitted a = (Admitted) place;
            return admitted(request, key, deadline, a.place(), a.core());
        });
    }

    /** A place of the shard pool, and for a binding that burns a core one of the process's cores for slow runs. */
    private record Admitted(FairPlaces.Permit place, FairPlaces.Permit core) {
    }

    /**
     * Runs an admitted request on the shard pool, its place (and core) given back when it ends, the CPU time its thread
     * took counted against its binding while it runs and when it ends ({@link Burners}).
     */
    private CompletableFuture<HostReply> admitted(HostRequest request, String key, Deadline deadline,
                                                  FairPlaces.Permit permit, FairPlaces.Permit core) {
        try {
            return CompletableFuture.supplyAsync(() -> {
                try (permit; FairPlaces.Permit c = core) {
                    try (Burners.Run run = hogs.start(key)) {
                        return execute(request, deadline, null);
                    }
                }
            }, executor);
        } catch (RuntimeException e) { // the pool was shut down
            permit.close();
            if (core != null) {
                core.close();
            }
            throw e;
        }
    }

    /**
     * A place of the shard pool for {@code request}, or the reply refusing all its slots before any guest
     * code: {@code CELL_UNAVAILABLE} when none was free within {@code limits.admissionWaitMs}, the
     * deadline when that came first.
     */
    private Object admit(HostRequest request, String key, Deadline deadline, FairPlaces.Permit taken) {
        long now = System.nanoTime();
        long deadlineAt = now + deadline.remainingNanos();
        long until = Math.min(deadlineAt, now + TimeUnit.MILLISECONDS.toNanos(limits.admissionWaitMs()));
        FairPlaces.Permit place = taken;
        try {
            if (place == null) {
                place = until - now > 0 ? places.acquire(key, until) : null;
            }
            if (place != null && !hogs.burns(key)) {
                return new Admitted(place, null);
            }
            if (place != null) {
                // a binding that burns a core waits for one of the hogs' cores up to its deadline: it queues behind
                // itself and the other hogs, never another binding
                FairPlaces.Permit core = deadlineAt - System.nanoTime() > 0
                        ? FairPlaces.SLOW_RUN_CORES.acquire(key, deadlineAt) : null;
                if (core != null) {
                    return new Admitted(place, core);
                }
                place.close();
                place = null;
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            if (place != null) {
                place.close();
                place = null;
            }
        }
        busy.incrementAndGet();
        ThresherException why = System.nanoTime() - deadlineAt >= 0
                ? new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before " + hostId
                        + " admitted the shard run")
                : new ThresherException(ErrorCode.CELL_UNAVAILABLE, hostId + " busy: no shard place within "
                        + limits.admissionWaitMs() + " ms (limits.admissionWaitMs); binding " + request.bindingName()
                        + " " + places.describe(key, key));
        // no guest code: journaled outcomes (a redelivery) are still replayed, the other slots refused
        return execute(request, deadline, why);
    }

    /** Host requests refused because no shard place was free in time (busy or deadline), before any guest code. */
    public long busyRefusals() {
        return busy.get();
    }

    /** Host requests holding a place of the shard pool now: admitted, running or about to. */
    public int runsInFlight() {
        return places.places() - places.free();
    }

    /** Host requests waiting for a place of the shard pool now (each at most {@code limits.admissionWaitMs}). */
    public int runsQueued() {
        return places.waiting();
    }

    /** The shard pool's places ({@code limits.shardConcurrency}). */
    public int runPlaces() {
        return places.places();
    }

    /** Slots refused before any guest code ran (stale target, deadline, failpoint, not run after an earlier failure, ...). */
    public long refusals() {
        return refusals.get();
    }

    /**
     * The coordinator of {@code callId} stopped admitting: slots of that call not started here yet are
     * not run. Remembered for {@code limits.maxCallDeadlineMs}, no call lives longer.
     */
    @Override
    public void stop(String callId) {
        stopsReceived.incrementAndGet();
        long now = System.nanoTime();
        if (stoppedCalls.size() >= STOPPED_CALLS_MAX) {
            stoppedCalls.values().removeIf(until -> until - now < 0);
        }
        if (stoppedCalls.size() < STOPPED_CALLS_MAX) {
            stoppedCalls.put(callId, now + TimeUnit.MILLISECONDS.toNanos(limits.maxCallDeadlineMs()));
        }
    }

    /** Stop messages received from coordinators. */
    public long stopsReceived() {
        return stopsReceived.get();
    }

    private boolean stopped(String callId) {
        Long until = stoppedCalls.get(callId);
        if (until == null) {
            return false;
        }
        if (until - System.nanoTime() < 0) {
            stoppedCalls.remove(callId, until);
            return false;
        }
        return true;
    }

    /** Slots answered from the journal, without running the guest. */
    public long replays() {
        return replays.get();
    }

    /**
     * @param refused when not null, the answer of every slot not journaled yet: no read, no guest (the request
     *     was not admitted)
     */
    private HostReply execute(HostRequest request, Deadline received, ThresherException refused) {
        // Every database wait of the request ends at its deadline (docs/contract.md, "one deadline"), and every line
        // logged about it carries the call's id (and a slot's wire id while it runs).
        try (DbDeadline scope = DbDeadline.enter(received);
             MDC.MDCCloseable id = MDC.putCloseable("call_id", request.callId())) {
            RequestStart start;
            long asked = System.nanoTime();
            if (refused == null) {
                prepareReads(request, received, asked);
            }
            try {
                start = control.requestStart(request.tenant(), callId(request),
                        request.runs().stream().map(ShardRun::wireId).toList());
            } catch (RuntimeException e) {
                refusals.addAndGet(request.runs().size());
                // nothing started here, whatever the control database did
                return HostReply.failed(request, ThresherException.of(e), false);
            }
            ControlClock clock = ControlClock.of(asked, start);
            Deadline deadline = clock.deadline(received);
            if (refused == null && deadline.passed()) {
                refused = new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the call's deadline had passed, on the"
                        + " control database's clock, before " + hostId + " could run its slots (time in transit"
                        + " and in queues counts)");
            }
            Resolved resolved = new Resolved(request, catalog, cells);
            // The component's run cell stays activated here until this request is done: no other component's
            // admission and no idle sweep evicts it between the request's slots (docs/contract.md, demand leases).
            try (DbDeadline shared = DbDeadline.enter(deadline);
                 CellHost.Demand demand = refused == null ? cells.demand(request.componentDigest()) : () -> { }) {
                return executeShardRuns(request, deadline, clock, refused, start.journaled(), resolved, asked);
            }
        }
    }

    /**
     * Lets the reader get ready for the request's reads, one shard at a time on the readers' pool, while the control
     * database is asked about the request: a leader replica's wait for its shard's WAL position overlaps that round
     * trip. Nothing is read yet, so a slot that turns out journaled or late reads nothing.
     */
    private void prepareReads(HostRequest request, Deadline deadline, long freshAsOfNanos) {
        java.util.Set<Integer> shards = new java.util.HashSet<>();
        for (ShardRun slot : request.runs()) {
            leases.ledPartition(slot.partitionId(), slot.epoch()).filter(p -> shards.add(p.shardId()))
                    .ifPresent(p -> {
                        try {
                            readers.execute(() -> reader.prepare(p, freshAsOfNanos, deadline));
                        } catch (RuntimeException e) {
                            // the pool is shut down: the reads say so
                        }
                    });
        }
    }

    /** The request's call id; one that is not a UUID is a {@code PROTOCOL_VIOLATION} (no coordinator sends it). */
    private static UUID callId(HostRequest request) {
        try {
            return UUID.fromString(request.callId());
        } catch (IllegalArgumentException e) {
            throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "call id '" + request.callId()
                    + "' is not a UUID");
        }
    }

    private HostReply executeShardRuns(HostRequest request, Deadline deadline, ControlClock clock,
                                      ThresherException refused, Map<String, JournalEntry> journaled,
                                      Resolved resolved, long startedNanos) {
        // Every partition's read starts at once (bounded by the readers' pool, as wide as the shard pool);
        // the guests then run one at a time in slot order, each as soon as its batch is there. A call
        // its coordinator stopped reads nothing more: its slots are all skipped below.
        Map<Integer, Object> reads = new HashMap<>();
        for (ShardRun slot : request.runs()) {
            if (refused == null && !journaled.containsKey(slot.wireId()) && !stopped(request.callId())) {
                reads.put(slot.runIndex(), startRead(slot, resolved, deadline, startedNanos));
            }
        }
        List<RanShardRun> ran = new ArrayList<>(request.runs().size());
        ThresherException stop = null;
        for (ShardRun slot : request.runs()) {
            // The journal is the truth whatever happened since: a journaled outcome is replayed even when the
            // call was stopped or an earlier slot failed, so a replayed failure still says its guest ran.
            JournalEntry replay = journaled.get(slot.wireId());
            RanShardRun r;
            if (replay != null) {
                r = replay(slot, replay);
            } else if (refused != null) {
                refusals.incrementAndGet();
                ran.add(RanShardRun.answered(ShardRunOutcome.failed(slot, refused, false), slot));
                continue;
            } else if (stop != null) {
                refusals.incrementAndGet();
                ran.add(RanShardRun.answered(ShardRunOutcome.failed(slot, new ThresherException(stop.code(), "not run: an earlier slot "
                        + "of this call failed on " + hostId + ": " + stop.getMessage()), false), slot));
                continue;
            } else if (stopped(request.callId())) {
                refusals.incrementAndGet();
                ran.add(RanShardRun.answered(ShardRunOutcome.failed(slot, new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "not run: the coordinator stopped the call after another slot failed"), false), slot));
                continue;
            } else {
                r = run(request, slot, resolved, reads.get(slot.runIndex()), deadline, clock);
            }
            ran.add(r);
            if (stop == null) {
                stop = stopCause(r);
            }
        }
        reads.values().forEach(r -> {
            if (r instanceof CompletableFuture<?> f) {
                f.cancel(false); // reads of slots that were not run: their batches are dropped
            }
        });
        return publishing.publish(request, ran);
    }

    /**
     * Checks that this node leads the slot's partition under the planned epoch and that the binding
     * version is known, then starts reading the partition, at least as fresh as a read issued at
     * {@code freshAsOfNanos} (the request's start here).
     *
     * @return the read in flight, or the refusal (a {@link RuntimeException}) that ends the slot
     */
    private Object startRead(ShardRun slot, Resolved resolved, Deadline deadline, long freshAsOfNanos) {
        try {
            Partition partition = ledPartition(slot);
            Binding binding = resolved.binding();
            resolved.component();
            boolean paged = resolved.abiVersion() == 2;
            return CompletableFuture.supplyAsync(() -> {
                deadline.check("before reading partition " + partition.id());
                try (DbDeadline scope = DbDeadline.enter(deadline)) {
                    return reader.read(partition, binding.selector(), limits.rowsPerBatch(), limits.batchMaxBytes(), deadline,
                            freshAsOfNanos);
                } catch (ThresherException e) {
                    if (paged && (e.code() == ErrorCode.BATCH_TOO_MANY_ROWS || e.code() == ErrorCode.BATCH_TOO_LARGE)) {
                        return new ShardRunInputs.Paged(freshAsOfNanos);
                    }
                    throw e;
                }
            }, readers);
        } catch (RuntimeException e) {
            return e;
        }
    }

    private Partition ledPartition(ShardRun slot) {
        return leases.ledPartition(slot.partitionId(), slot.epoch())
                .orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE, "node " + hostId
                        + " does not lead partition " + slot.partitionId() + " under epoch " + slot.epoch()));
    }

    /**
     * A failure the coordinator will not retry ends the call, so the slots after it are not run. A
     * retryable refusal that provably ran no guest does not: the coordinator may send that slot
     * again while the others' results still count.
     */
    /** The failure that stops the later slots of the request after {@code r}, or null when they may run. */
    private static ThresherException stopCause(RanShardRun r) {
        if (r.answer() != null && stopsTheRest(r.answer())) {
            return new ThresherException(r.answer().code(), r.answer().message());
        }
        if (r.outcome() != null && !r.outcome().succeeded()) {
            return new ThresherException(ErrorCode.ofCode(r.outcome().errorCode()), r.outcome().errorMessage());
        }
        return null;
    }

    private static boolean stopsTheRest(ShardRunOutcome failed) {
        return failed.guestStarted() || failed.code().retryClass() != RetryClass.RETRYABLE;
    }

    private RanShardRun replay(ShardRun slot, JournalEntry journaled) {
        replays.incrementAndGet();
        return new RanShardRun(slot, journaled, 0, null);
    }

    private RanShardRun run(HostRequest request, ShardRun slot, Resolved resolved, Object read, Deadline deadline,
                    ControlClock clock) {
        try (MDC.MDCCloseable wire = MDC.putCloseable("wire_id", slot.wireId())) {
            RanShardRun r = runShard(request, slot, resolved, read, deadline, clock);
            log.debug("slot {} of {} (partition {} at epoch {}) ran on {}", slot.runIndex(), request.bindingName(),
                    slot.partitionId(), slot.epoch(), hostId);
            return r;
        }
    }

    private RanShardRun runShard(HostRequest request, ShardRun slot, Resolved resolved, Object read, Deadline deadline,
                        ControlClock clock) {
        Site site = new Site(hostId, slot.partitionId(), slot.runIndex(), slot.wireId());
        Partition partition;
        ShardRunInputs.Input input;
        try {
            Object got = ShardRunInputs.awaitRead(read, deadline);
            partition = ledPartition(slot); // again, right before the guest: the lease may have lapsed meanwhile
            if (got instanceof ShardRunInputs.Paged p) {
                // From the start, under a snapshot of its own: the batch read up front is not part of it.
                got = ShardRunInputs.OpenedPages.open(reader.open(partition, resolved.binding().selector(), limits.rowsPerBatch(),
                        limits.batchMaxBytes(), deadline, p.freshAsOfNanos()));
            }
            input = ShardRunInputs.Input.of(got);
            try {
                failpoints.hit(Failpoint.BEFORE_GUEST_START, site);
            } catch (RuntimeException e) {
                input.close();
                throw e;
            }
        } catch (RuntimeException e) {
            return RanShardRun.answered(refusal(slot, e), slot);
        }
        UUID callId = callId(request);
        Budgets budgets = resolved.binding().budgets();
        // The binding's budgets: its run time within the call's deadline, its input bytes (arguments and batches)
        Deadline runDeadline = budgets.runDeadline(deadline);
        long argumentBytes = request.argumentsJson().getBytes(StandardCharsets.UTF_8).length;
        RowBatchStream batches = input.batches();
        if (budgets.inputBytes() > 0) {
            if (input.pages() == null && argumentBytes + input.batch().bytes().length > budgets.inputBytes()) {
                input.close();
                return RanShardRun.answered(refusal(slot, budgets.inputOverBudget(argumentBytes + input.batch().bytes().length)),
                        slot);
            }
            batches = ShardRunInputs.budgeted(batches, budgets, argumentBytes);
        }
        // the cell checks the deadline right after this, before the guest: a guest starts only before it
        long startedAt = clock.latestAt(System.nanoTime());
        try (input) {
            RunOutcome out = cells.run(resolved.component(), batches, request.argumentsJson(), runDeadline, budgets);
            failpoints.hit(Failpoint.AFTER_GUEST_START, site);
            long guestNanos = Math.max(0, out.guestNanos() - input.readNanosDuringGuest());
            return new RanShardRun(slot, new JournalEntry(request.tenant(), slot.wireId(), callId, JournalEntry.SHARD, hostId,
                    partition.id(), partition.epoch(), true, 0, null, input.rows(), out.emitCount(),
                    PartialsCodec.encode(out.partials()), TimeUnit.NANOSECONDS.toMicros(guestNanos), startedAt),
                    input.readMicros(), null);
        } catch (RuntimeException thrown) {
            RuntimeException e = budgets.overRunBudget(thrown, deadline, "run");
            if (cells.refusedBeforeGuest(thrown)) {
                return RanShardRun.answered(refusal(slot, e), slot);
            }
            ThresherException te = ThresherException.of(e);
            if (te.code() == ErrorCode.INTERNAL_ERROR) {
                log.error("slot {} failed after the guest started", slot.wireId(), e);
            }
            // A component outcome all the same: journaled, so a redelivery replays the failure.
            return new RanShardRun(slot, new JournalEntry(request.tenant(), slot.wireId(), callId, JournalEntry.SHARD, hostId,
                    partition.id(), partition.epoch(), false, te.code().code(), te.getMessage(), input.rows(), 0,
                    null, 0, startedAt), input.readMicros(), null);
        }
    }

    /** A refusal before any guest code ran: the coordinator may retry it when its code is retryable. */
    private ShardRunOutcome refusal(ShardRun slot, RuntimeException e) {
        refusals.incrementAndGet();
        ThresherException te = ThresherException.of(e);
        if (te.code() == ErrorCode.INTERNAL_ERROR) {
            log.error("slot {} refused", slot.wireId(), e);
        }
        return ShardRunOutcome.failed(slot, te, false);
    }
}
