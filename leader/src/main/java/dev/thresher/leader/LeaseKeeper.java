package dev.thresher.leader;

import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.store.control.ControlStore;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes and renews this node's partition leadership leases in the control database and keeps a
 * local view of them. The local view expires by the local monotonic clock, counted from the moment
 * the renewal was sent, so it never outlives the lease the database granted, whatever the clocks say.
 */
public final class LeaseKeeper implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

    private static final long RELEASE_WAIT_MS = 2_000;

    private record Held(Partition partition, long validUntilNanos) {}

    private final ControlStore control;
    private final String hostId;
    private final int shardId;
    private final long leaseMs;
    private final Map<Integer, Held> held = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer;
    private final Failpoints failpoints;

    public LeaseKeeper(ControlStore control, String hostId, int shardId, long leaseMs, Failpoints failpoints) {
        this.control = control;
        this.failpoints = failpoints;
        this.hostId = hostId;
        this.shardId = shardId;
        this.leaseMs = leaseMs;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "lease-keeper-" + hostId);
            t.setDaemon(true);
            return t;
        });
    }

    /** Takes the leases once, synchronously, then renews them every third of the lease. */
    public void start() {
        renew();
        long period = Math.max(1, leaseMs / 3);
        timer.scheduleWithFixedDelay(this::renewQuietly, period, period, TimeUnit.MILLISECONDS);
    }

    /**
     * Also renews as soon as the partitions of this node's shard change (a table created, a partition
     * added), instead of at the next period: {@code partitionsOfShard} is read every {@code everyMs}
     * (from the node's topology cache, so without a database read unless the topology changed).
     */
    public void followPartitions(java.util.function.Supplier<java.util.Set<Integer>> partitionsOfShard, long everyMs) {
        java.util.concurrent.atomic.AtomicReference<java.util.Set<Integer>> seen =
                new java.util.concurrent.atomic.AtomicReference<>(java.util.Set.copyOf(held.keySet()));
        timer.scheduleWithFixedDelay(() -> {
            try {
                java.util.Set<Integer> now = partitionsOfShard.get();
                if (!now.equals(seen.get())) {
                    seen.set(now);
                    renewQuietly();
                }
            } catch (RuntimeException e) {
                log.debug("{}: cannot read the partitions of shard {} now: {}", hostId, shardId, e.toString());
            }
        }, everyMs, everyMs, TimeUnit.MILLISECONDS);
    }

    /**
     * Renews now; returns the partitions led afterwards. Renewals take turns: one that started earlier
     * can never overwrite the local view with what it learned before a later one.
     */
    public synchronized List<Integer> renew() {
        failpoints.hit(Failpoint.LEASE_RENEW, Site.of(hostId));
        long sent = System.nanoTime();
        List<Integer> led = control.acquireLeadership(hostId, shardId, leaseMs);
        Topology topology = control.readTopology();
        long validUntil = sent + TimeUnit.MILLISECONDS.toNanos(leaseMs);
        var ledSet = new HashSet<>(led);
        held.keySet().removeIf(id -> !ledSet.contains(id));
        for (int id : led) {
            topology.partition(id).ifPresent(p -> held.put(id, new Held(p, validUntil)));
        }
        return led;
    }

    private void renewQuietly() {
        try {
            renew();
        } catch (RuntimeException e) {
            log.warn("lease renewal of {} failed; leadership lapses locally when the lease ends: {}", hostId, e.toString());
        }
    }

    /** The partition when this node leads it under {@code epoch} right now. */
    public Optional<Partition> ledPartition(int partitionId, long epoch) {
        Held h = held.get(partitionId);
        if (h == null || h.partition().epoch() != epoch || System.nanoTime() - h.validUntilNanos() >= 0) {
            return Optional.empty();
        }
        return Optional.of(h.partition());
    }

    public int ledCount() {
        return held.size();
    }

    @Override
    public void close() {
        timer.shutdownNow();
        held.clear();
        // Bounded: when the control database is already gone the leases simply expire.
        try {
            CompletableFuture.runAsync(() -> control.releaseLeadership(hostId)).get(RELEASE_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.warn("could not release the leases of {}; they expire on their own: {}", hostId, e.getCause() == null ? e : e.getCause());
        }
    }
}
