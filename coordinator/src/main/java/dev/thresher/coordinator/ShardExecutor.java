package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.ControlStore.SlotFence;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import dev.thresher.wire.ShardRunHandler;
import dev.thresher.wire.WireMessage;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the shards sent to this node.
 *
 * <pre>
 * request ─► journaled (tenant, wire id)? ── yes ─► re-publish the journaled slot, answer it (no guest)
 *             │ no
 *             ▼
 *   lead the partition under that epoch? binding at that version known? deadline left?  (else: refused, guest not started)
 *   read ≤ rowsPerBatch rows from the local replica ─► [shard.before-guest-start] ─► run(batch, args)
 *   [shard.after-guest-start] ─► journal the outcome ─► [shard.before-slot-publish]
 *   ─► publish the slot under a lease, fenced by the partition lease ─► answer
 * </pre>
 */
public final class ShardExecutor implements ShardRunHandler {
    private static final Logger log = LoggerFactory.getLogger(ShardExecutor.class);
    private static final int BINDING_CACHE_ENTRIES = 1024;

    private final String hostId;
    private final ControlStore control;
    private final LeaseKeeper leases;
    private final ShardReader reader;
    private final CellHost cells;
    private final ComponentCache components;
    private final Limits limits;
    private final ExecutorService executor;
    private final Failpoints failpoints;
    /** Binding versions seen here, the least recently used dropped past {@link #BINDING_CACHE_ENTRIES}. */
    private final Map<String, Binding> bindings = Collections.synchronizedMap(new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Binding> eldest) {
            return size() > BINDING_CACHE_ENTRIES;
        }
    });
    private final AtomicLong replays = new AtomicLong();
    private final AtomicLong refusals = new AtomicLong();

    public ShardExecutor(String hostId, ControlStore control, LeaseKeeper leases, ShardReader reader, CellHost cells,
                         Limits limits, ExecutorService executor, Failpoints failpoints) {
        this.hostId = hostId;
        this.control = control;
        this.leases = leases;
        this.reader = reader;
        this.cells = cells;
        this.components = new ComponentCache(control);
        this.limits = limits;
        this.executor = executor;
        this.failpoints = failpoints;
    }

    @Override
    public CompletableFuture<WireMessage> handle(ShardRunRequest request, long receivedNanos) {
        long deadlineNanos = receivedNanos + TimeUnit.MICROSECONDS.toNanos(request.remainingBudgetMicros());
        return CompletableFuture.supplyAsync(() -> execute(request, deadlineNanos), executor);
    }

    /** Deliveries refused before any guest code ran (stale target, deadline, failpoint, ...). */
    public long refusals() {
        return refusals.get();
    }

    /** Deliveries answered from the journal, without running the guest. */
    public long replays() {
        return replays.get();
    }

    private WireMessage execute(ShardRunRequest request, long deadlineNanos) {
        Site site = new Site(hostId, request.partitionId(), request.slotIndex(), request.wireId());
        Optional<JournalEntry> journaled;
        try {
            journaled = control.journaled(request.tenant(), request.wireId());
        } catch (RuntimeException e) {
            return refusal(request, e);
        }
        if (journaled.isPresent()) {
            replays.incrementAndGet();
            return publishAndAnswer(request, journaled.get(), 0);
        }
        Partition partition;
        Binding binding;
        Component component;
        ShardBatch batch;
        try {
            partition = leases.ledPartition(request.partitionId(), request.epoch())
                    .orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE, "node " + hostId
                            + " does not lead partition " + request.partitionId() + " under epoch " + request.epoch()));
            binding = binding(request);
            component = components.get(binding.componentDigest());
            Deadlines.check(deadlineNanos, "before reading partition " + partition.id());
            batch = reader.read(partition, binding.selector(), limits.rowsPerBatch(), limits.batchMaxBytes(), deadlineNanos);
            failpoints.hit(Failpoint.BEFORE_GUEST_START, site);
        } catch (RuntimeException e) {
            return refusal(request, e);
        }
        JournalEntry outcome;
        try {
            RunOutcome run = cells.run(component, batch.bytes(), request.argumentsJson(), deadlineNanos);
            failpoints.hit(Failpoint.AFTER_GUEST_START, site);
            outcome = new JournalEntry(request.tenant(), request.wireId(), UUID.fromString(request.callId()),
                    JournalEntry.SHARD, hostId, partition.id(), partition.epoch(), true, 0, null, batch.rowCount(),
                    run.emitCount(), PartialsCodec.encode(run.partials()), TimeUnit.NANOSECONDS.toMicros(run.guestNanos()));
        } catch (RuntimeException e) {
            if (CellHost.refusedBeforeGuest(e)) {
                return refusal(request, e);
            }
            ThresherException te = ThresherException.of(e);
            if (te.code() == ErrorCode.INTERNAL_ERROR) {
                log.error("shard run {} failed after the guest started", request.wireId(), e);
            }
            // A component outcome all the same: journaled, so a redelivery replays the failure.
            outcome = new JournalEntry(request.tenant(), request.wireId(), UUID.fromString(request.callId()),
                    JournalEntry.SHARD, hostId, partition.id(), partition.epoch(), false, te.code().code(),
                    te.getMessage(), batch.rowCount(), 0, null, 0);
        }
        return publishAndAnswer(request, outcome, TimeUnit.NANOSECONDS.toMicros(batch.readNanos()));
    }

    /**
     * Journals (first writer wins) and publishes the standing outcome, then answers with it. A
     * failure answered from here always says the guest started: the outcome exists because the
     * guest ran for this wire identity, in this delivery or an earlier one, so no retry may be
     * based on it.
     */
    private WireMessage publishAndAnswer(ShardRunRequest request, JournalEntry outcome, long readMicros) {
        Site site = new Site(hostId, request.partitionId(), request.slotIndex(), request.wireId());
        Map.Entry<JournalEntry, SlotFence> published;
        try {
            failpoints.hit(Failpoint.BEFORE_SLOT_PUBLISH, site);
            published = control.publishShardOutcome(outcome, request.slotIndex(), limits.reduceLeaseMs());
        } catch (RuntimeException e) {
            ThresherException te = ThresherException.of(e);
            return ShardRunFailure.of(request, te, true);
        }
        JournalEntry standing = published.getKey();
        if (!standing.succeeded()) {
            return new ShardRunFailure(request.requestId(), request.wireId(), standing.errorCode(), true,
                    standing.errorMessage() == null ? "guest failed" : standing.errorMessage());
        }
        if (published.getValue() == SlotFence.NOT_LEADER) {
            return new ShardRunFailure(request.requestId(), request.wireId(), ErrorCode.TARGET_STALE.code(), true,
                    "node " + hostId + " lost the lease of partition " + standing.partitionId() + " under epoch "
                            + standing.epoch() + " before publishing the slot");
        }
        return new ShardRunResult(request.requestId(), request.wireId(), standing.partitionId(), standing.epoch(),
                standing.rowCount(), standing.emitCount(), readMicros, standing.guestMicros(),
                PartialsCodec.decode(standing.payload()));
    }

    /** A refusal before any guest code ran: the coordinator may retry it when its code is retryable. */
    private ShardRunFailure refusal(ShardRunRequest request, RuntimeException e) {
        refusals.incrementAndGet();
        ThresherException te = ThresherException.of(e);
        if (te.code() == ErrorCode.INTERNAL_ERROR) {
            log.error("shard run {} refused", request.wireId(), e);
        }
        return ShardRunFailure.of(request, te, false);
    }

    /**
     * The binding version the call was planned with. Versions are immutable, so caching them is
     * safe; a version that does not exist here, or that pins another component than the request
     * names, is a stale target (nothing ran).
     */
    private Binding binding(ShardRunRequest request) {
        String key = request.tenant() + '\0' + request.bindingName() + '\0' + request.bindingVersion();
        Binding b = bindings.get(key);
        if (b == null) {
            b = control.binding(request.tenant(), request.bindingName(), request.bindingVersion())
                    .orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE, "binding " + request.bindingName()
                            + " version " + request.bindingVersion() + " is not known here"));
            bindings.put(key, b);
        }
        if (!b.componentDigest().equals(request.componentDigest())) {
            throw new ThresherException(ErrorCode.TARGET_STALE, "binding " + request.bindingName() + " version "
                    + request.bindingVersion() + " pins " + b.componentDigest() + ", not " + request.componentDigest());
        }
        return b;
    }
}
