package dev.thresher.leader;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.Selector;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.store.control.CallJournal.ShardRunFence;
import dev.thresher.store.control.CallJournal.ShardRunPublication;
import dev.thresher.store.control.CallJournal.ShardRunPublished;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.topology.Partition;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/** In-memory leader ports: the journal, binding versions, leadership, the shard database, the run cell. */
final class Fakes {
    private Fakes() {}

    /** The journal (first writer wins) and the slots' fenced publication. */
    static final class Journal implements ShardRunJournal {
        final Map<String, JournalEntry> entries = new ConcurrentHashMap<>();
        /** Each publishShardOutcomes call's publications. */
        final List<List<ShardRunPublication>> publishes = new CopyOnWriteArrayList<>();
        /** Partitions whose lease the fence finds lost at publication. */
        final Set<Integer> leaseLostAtPublish = ConcurrentHashMap.newKeySet();
        volatile RuntimeException readFailure;
        volatile RuntimeException publishFailure;
        /** The call's deadline and the control database's clock that requestStart answers; 0: no deadline known. */
        volatile long deadlineMicros;
        volatile long clockMicros;

        @Override
        public dev.thresher.store.control.CallJournal.RequestStart requestStart(String tenant, java.util.UUID callId,
                                                                               List<String> wireIds) {
            return new dev.thresher.store.control.CallJournal.RequestStart(journaled(tenant, wireIds),
                    deadlineMicros == 0 ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(deadlineMicros),
                    clockMicros);
        }

        @Override
        public Map<String, JournalEntry> journaled(String tenant, List<String> wireIds) {
            if (readFailure != null) {
                throw readFailure;
            }
            Map<String, JournalEntry> found = new HashMap<>();
            for (String w : wireIds) {
                JournalEntry e = entries.get(tenant + "|" + w);
                if (e != null) {
                    found.put(w, e);
                }
            }
            return found;
        }

        @Override
        public List<ShardRunPublished> publishShardOutcomes(List<ShardRunPublication> publications, String hostId,
                                                        long leaseMs) {
            if (publishFailure != null) {
                throw publishFailure;
            }
            publishes.add(List.copyOf(publications));
            List<ShardRunPublished> out = new ArrayList<>();
            for (ShardRunPublication p : publications) {
                JournalEntry e = p.outcome();
                JournalEntry before = entries.putIfAbsent(e.tenant() + "|" + e.wireId(), e);
                JournalEntry standing = before == null ? e : before;
                out.add(new ShardRunPublished(standing, standing.succeeded()
                        && leaseLostAtPublish.contains(standing.partitionId()) ? ShardRunFence.NOT_LEADER : ShardRunFence.PUBLISHED));
            }
            return out;
        }

        Optional<JournalEntry> entry(String tenant, String wireId) {
            return Optional.ofNullable(entries.get(tenant + "|" + wireId));
        }

        /** The slot indexes published, over every publishShardOutcomes call. */
        List<Integer> publishedShardRuns() {
            return publishes.stream().flatMap(List::stream).map(ShardRunPublication::runIndex).toList();
        }
    }

    /** Binding versions by (tenant, name, version). */
    static final class Bindings implements BindingVersions {
        final Map<String, Binding> versions = new ConcurrentHashMap<>();

        Bindings with(Binding b) {
            versions.put(b.tenant() + "/" + b.name() + "/" + b.version(), b);
            return this;
        }

        @Override
        public Optional<Binding> binding(String tenant, String name, int version) {
            return Optional.ofNullable(versions.get(tenant + "/" + name + "/" + version));
        }

        @Override
        public java.util.OptionalInt currentVersion(String tenant, String name) {
            return versions.values().stream().filter(b -> b.tenant().equals(tenant) && b.name().equals(name))
                    .mapToInt(Binding::version).max();
        }
    }

    /** The partitions this node leads, and leases that lapse after some checks. */
    static final class Leases implements LedPartitions {
        final Map<Integer, Partition> led = new ConcurrentHashMap<>();
        /** Partition → checks that still find it led before its lease lapses. */
        final Map<Integer, AtomicInteger> lapseAfter = new ConcurrentHashMap<>();

        Leases leading(Partition... partitions) {
            for (Partition p : partitions) {
                led.put(p.id(), p);
            }
            return this;
        }

        @Override
        public Optional<Partition> ledPartition(int partitionId, long epoch) {
            Partition p = led.get(partitionId);
            if (p == null || p.epoch() != epoch) {
                return Optional.empty();
            }
            AtomicInteger left = lapseAfter.get(partitionId);
            if (left != null && left.getAndDecrement() <= 0) {
                return Optional.empty();
            }
            return Optional.of(p);
        }
    }

    /** The shard database: partition {@code n}'s batch reads "rows of n", 3 rows. */
    static final class Reader implements PartitionReader {
        final List<Integer> reads = new CopyOnWriteArrayList<>();
        final List<Selector> selectors = new CopyOnWriteArrayList<>();
        /** Partitions whose shard's reads were prepared, and as fresh as when. */
        final List<Integer> prepared = new CopyOnWriteArrayList<>();
        final List<Long> preparedAsOf = new CopyOnWriteArrayList<>();

        @Override
        public void prepare(Partition partition, long freshAsOfNanos, Deadline deadline) {
            preparedAsOf.add(freshAsOfNanos);
            prepared.add(partition.id());
        }

        @Override
        public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
            reads.add(partition.id());
            selectors.add(selector);
            if (pages > 1) {
                throw new ThresherException(ErrorCode.BATCH_TOO_MANY_ROWS, "partition " + partition.id() + " passes one batch");
            }
            return new ShardBatch(("rows of " + partition.id()).getBytes(StandardCharsets.UTF_8), 3, 4_000);
        }

        /**
         * Partition n holds {@code pages} batches ("rows of n", 3 rows each): more than one is too many for a
         * whole-partition read. Paged reads opened and closed are counted.
         */
        volatile int pages = 1;
        final List<Integer> opened = new CopyOnWriteArrayList<>();
        final List<Integer> closed = new CopyOnWriteArrayList<>();

        @Override
        public Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
            opened.add(partition.id());
            selectors.add(selector);
            int total = pages;
            return new Pages() {
                int given;
                boolean done;

                @Override
                public ShardBatch next() {
                    if (given == total) {
                        return null;
                    }
                    given++;
                    return new ShardBatch(("rows of " + partition.id()).getBytes(StandardCharsets.UTF_8), 3, 4_000);
                }

                @Override
                public void close() {
                    if (!done) {
                        done = true;
                        closed.add(partition.id());
                    }
                }
            };
        }
    }

    /** A run cell: emits one partial {@code p<n>} for partition n's batch, or fails as told. */
    static final class Guests implements GuestRunner {
        private static final RuntimeException NOT_STARTED = new RuntimeException("guest not started", null, false,
                false) {};

        final Set<String> packages = ConcurrentHashMap.newKeySet();
        final List<String> loads = new CopyOnWriteArrayList<>();
        /** The partitions whose batch the guest ran over, in order. */
        final List<Integer> runs = new CopyOnWriteArrayList<>();
        /** Partition → what running its batch throws. */
        final Map<Integer, RuntimeException> failures = new ConcurrentHashMap<>();
        /** The budgets and the deadline of the last run. */
        volatile Budgets lastBudgets;
        volatile Deadline lastDeadline;
        /** Called with the partition while its guest runs. */
        volatile IntConsumer whileRunning = partition -> {};

        Guests(String... digests) {
            packages.addAll(List.of(digests));
        }

        @Override
        public int load(String componentDigest) {
            loads.add(componentDigest);
            if (!packages.contains(componentDigest)) {
                throw new ThresherException(ErrorCode.TARGET_STALE, "component " + componentDigest
                        + " is not in the package store");
            }
            return abiVersion;
        }

        /** The ABI version every component reports. */
        volatile int abiVersion = 1;
        /** Batches each run pulled, in order of runs. */
        final List<Integer> batchesPulled = new CopyOnWriteArrayList<>();

        @Override
        public RunOutcome run(String componentDigest, RowBatchStream batches, String argumentsJson, Deadline deadline,
                              Budgets budgets) {
            lastBudgets = budgets;
            lastDeadline = deadline;
            byte[] batch = batches.next();
            int pulled = 1;
            while (abiVersion == 2 && batches.next() != null) {
                pulled++;
            }
            batchesPulled.add(pulled);
            int partition = Integer.parseInt(new String(batch, StandardCharsets.UTF_8).substring("rows of ".length()));
            RuntimeException f = failures.get(partition);
            if (f != null && refusedBeforeGuest(f)) {
                throw f;
            }
            runs.add(partition);
            whileRunning.accept(partition);
            if (f != null) {
                throw f;
            }
            return new RunOutcome(List.of(new Partial("p" + partition, partition)), 1, 2_000_000);
        }

        /** Demand leases taken, and those still open. */
        final java.util.concurrent.atomic.AtomicInteger demands = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger openDemands = new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public dev.thresher.cellhost.CellHost.Demand demand(String componentDigest) {
            demands.incrementAndGet();
            openDemands.incrementAndGet();
            java.util.concurrent.atomic.AtomicBoolean open = new java.util.concurrent.atomic.AtomicBoolean(true);
            return () -> {
                if (open.getAndSet(false)) {
                    openDemands.decrementAndGet();
                }
            };
        }

        @Override
        public boolean refusedBeforeGuest(Throwable failure) {
            for (Throwable t = failure; t != null; t = t.getCause()) {
                if (t == NOT_STARTED) {
                    return true;
                }
            }
            return false;
        }

        /** A refusal of the cell that provably came before any guest code. */
        static ThresherException refused(ErrorCode code) {
            return new ThresherException(code, "refused before the guest", NOT_STARTED);
        }
    }

    /** Runs every task on the caller's thread: partition reads are then done in order, before any guest. */
    static final class Direct extends AbstractExecutorService {
        private volatile boolean shutdown;

        @Override
        public void execute(Runnable command) {
            command.run();
        }

        @Override
        public void shutdown() {
            shutdown = true;
        }

        @Override
        public List<Runnable> shutdownNow() {
            shutdown = true;
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return shutdown;
        }

        @Override
        public boolean isTerminated() {
            return shutdown;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return true;
        }
    }
}
