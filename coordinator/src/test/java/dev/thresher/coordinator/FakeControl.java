package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.CallJournal.ReduceStart;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.store.control.PublishOutcome;
import dev.thresher.store.control.PublishOutcome.Status;
import dev.thresher.store.control.ShardRunRow;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

/**
 * The control database and the node's cache of it, in memory, with the fences that matter to the
 * coordinator: an invocation is recorded only while its binding version is current, the result is
 * published only under the reduce lease and while the binding version is still current, the journal's
 * first writer wins. The cache is what the coordinator reads; the "database" is what a refresh reads.
 */
final class FakeControl implements CallStore, Catalog {
    /** One invocation row. */
    static final class Invocation {
        final Binding binding;
        volatile String state = "running";
        volatile ErrorCode error;
        volatile String result;

        Invocation(Binding binding) {
            this.binding = binding;
        }
    }

    /** A call refused at planning. */
    record Refused(UUID callId, Binding binding, ErrorCode code, String message) {}

    private volatile Binding dbBinding;
    private volatile Topology dbTopology;
    private volatile Binding cachedBinding;
    private volatile Topology cachedTopology;
    volatile boolean grantReduceLease = true;
    /** How many host requests were sent so far, read at each {@link #insertInvocation}. */
    volatile IntSupplier sendsSoFar = () -> 0;

    final AtomicInteger invalidations = new AtomicInteger();
    final AtomicInteger refreshes = new AtomicInteger();
    final AtomicInteger cachedTopologyReads = new AtomicInteger();
    final AtomicInteger startReduces = new AtomicInteger();
    final AtomicInteger publishes = new AtomicInteger();
    final List<Binding> inserted = new CopyOnWriteArrayList<>();
    final List<Integer> sendsAtInsert = new CopyOnWriteArrayList<>();
    final List<Refused> refused = new CopyOnWriteArrayList<>();
    final Map<UUID, Invocation> invocations = new ConcurrentHashMap<>();
    private final Map<UUID, Map<Integer, ShardRunRow>> slots = new ConcurrentHashMap<>();
    private final Map<String, JournalEntry> journal = new ConcurrentHashMap<>();

    FakeControl(Binding binding, Topology topology) {
        this.dbBinding = binding;
        this.cachedBinding = binding;
        this.dbTopology = topology;
        this.cachedTopology = topology;
    }

    /** Both the database and the cache hold {@code t}. */
    void topology(Topology t) {
        dbTopology = t;
        cachedTopology = t;
    }

    /** The database moves on; the cache does not hear of it until refreshed. */
    void dbTopology(Topology t) {
        dbTopology = t;
    }

    Topology dbTopology() {
        return dbTopology;
    }

    /** A new binding version in the database; the cache does not hear of it until invalidated. */
    void redeploy(Binding b) {
        dbBinding = b;
    }

    /** A leader published slot {@code row.runIndex()} of {@code callId}. */
    void publishShardRun(UUID callId, ShardRunRow row) {
        slots.computeIfAbsent(callId, c -> new ConcurrentHashMap<>()).put(row.runIndex(), row);
    }

    /** Journals {@code e} unless its wire identity is journaled; returns what stands. */
    JournalEntry journal(JournalEntry e) {
        JournalEntry before = journal.putIfAbsent(e.tenant() + "|" + e.wireId(), e);
        return before == null ? e : before;
    }

    Optional<JournalEntry> journaled(String tenant, String wireId) {
        return Optional.ofNullable(journal.get(tenant + "|" + wireId));
    }

    /** The only invocation recorded. */
    Map.Entry<UUID, Invocation> onlyInvocation() {
        if (invocations.size() != 1) {
            throw new AssertionError("expected one invocation, found " + invocations.keySet());
        }
        return invocations.entrySet().iterator().next();
    }

    // ---- Catalog

    @Override
    public Optional<Binding> currentBinding(String tenant, String name) {
        Binding b = cachedBinding;
        if (b == null) {
            b = dbBinding;
            cachedBinding = b;
        }
        return Optional.ofNullable(b).filter(x -> x.tenant().equals(tenant) && x.name().equals(name));
    }

    @Override
    public void invalidateBinding(String tenant, String name) {
        invalidations.incrementAndGet();
        cachedBinding = null;
    }

    @Override
    public Topology topology() {
        cachedTopologyReads.incrementAndGet();
        return cachedTopology;
    }

    /** How long a read of the topology takes, as the control database answers; 0: at once. */
    volatile long refreshDelayMs;

    @Override
    public Topology refreshTopology() {
        refreshes.incrementAndGet();
        if (refreshDelayMs > 0) {
            try {
                Thread.sleep(refreshDelayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            deadlineBound();
        }
        cachedTopology = dbTopology;
        return cachedTopology;
    }

    /** As a pool bounded by the thread's deadline (Pools.bounded) refuses a wait the deadline already ended. */
    private static void deadlineBound() {
        if (dev.thresher.store.DbDeadline.passed()) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting for the control database"
                    + " (the call's deadline passed before a connection was taken)");
        }
    }

    // ---- CallStore

    @Override
    public java.util.OptionalLong insertInvocation(UUID callId, Binding binding, String principal,
                                                   String coordinatorHost, int shardCount, long remainingMs,
                                                   long deadlineMs) {
        inserted.add(binding);
        sendsAtInsert.add(sendsSoFar.getAsInt());
        if (binding.version() != dbBinding.version()) {
            return java.util.OptionalLong.empty();
        }
        invocations.put(callId, new Invocation(binding));
        return java.util.OptionalLong.of(System.currentTimeMillis() * 1000 + remainingMs * 1000);
    }

    @Override
    public void insertRefusedInvocation(UUID callId, Binding binding, String principal, String coordinatorHost,
                                        long remainingMs, long deadlineMs, ErrorCode code, String message) {
        deadlineBound();
        refused.add(new Refused(callId, binding, code, message));
    }

    @Override
    public Optional<String> failInvocation(UUID callId, ErrorCode code, String message, int attempts) {
        if (failureRecordFails != null) {
            throw failureRecordFails;
        }
        Invocation i = invocations.get(callId);
        if (i == null || !i.state.equals("running")) {
            return i != null && i.state.equals("succeeded") ? Optional.ofNullable(i.result) : Optional.empty();
        }
        i.state = "failed";
        i.error = code;
        return Optional.empty();
    }

    @Override
    public ReduceStart startReduce(UUID callId, String tenant, String hostId, String reduceWireId, long leaseMs) {
        startReduces.incrementAndGet();
        if (!grantReduceLease) {
            return new ReduceStart(false, List.of(), Optional.empty());
        }
        List<ShardRunRow> rows = new ArrayList<>();
        for (ShardRunRow r : new TreeMap<>(slots.getOrDefault(callId, Map.of())).values()) {
            long current = dbTopology.partition(r.partitionId()).map(Partition::epoch).orElse(-1L);
            rows.add(new ShardRunRow(r.runIndex(), r.partitionId(), r.epoch(), r.wireId(), r.hostId(), r.rowCount(),
                    r.emitCount(), r.entryCount(), r.partials(), r.leaseLive(), current));
        }
        return new ReduceStart(true, rows, journaled(tenant, reduceWireId));
    }

    /** When set, a publication is done and its answer lost: this is thrown after it. */
    volatile RuntimeException publicationAnswerLost;
    /** When set, recording a failure throws it (the control database does not answer). */
    volatile RuntimeException failureRecordFails;

    @Override
    public Map.Entry<JournalEntry, Optional<PublishOutcome>> journalAndPublish(JournalEntry reduction, String hostId,
                                                                               int attempts) {
        Map.Entry<JournalEntry, Optional<PublishOutcome>> answer = publish(reduction);
        if (publicationAnswerLost != null) {
            throw publicationAnswerLost;
        }
        return answer;
    }

    private Map.Entry<JournalEntry, Optional<PublishOutcome>> publish(JournalEntry reduction) {
        publishes.incrementAndGet();
        JournalEntry standing = journal(reduction);
        if (!standing.succeeded()) {
            return Map.entry(standing, Optional.empty());
        }
        Invocation i = invocations.get(standing.callId());
        PublishOutcome outcome;
        if (i.state.equals("succeeded")) {
            outcome = new PublishOutcome(Status.ALREADY_PUBLISHED, Optional.of(i.result));
        } else if (!i.state.equals("running")) {
            outcome = new PublishOutcome(Status.NOT_RUNNING, Optional.empty());
        } else if (!grantReduceLease) {
            outcome = new PublishOutcome(Status.REDUCE_LEASE_LOST, Optional.empty());
        } else if (i.binding.version() != dbBinding.version()) {
            outcome = new PublishOutcome(Status.BINDING_REPLACED, Optional.empty());
        } else {
            i.result = new String(standing.payload(), java.nio.charset.StandardCharsets.UTF_8);
            i.state = "succeeded";
            outcome = new PublishOutcome(Status.PUBLISHED, Optional.of(i.result));
        }
        return Map.entry(standing, Optional.of(outcome));
    }
}
