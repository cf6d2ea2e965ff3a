package dev.thresher.leader;

import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Deadline;
import dev.thresher.store.DbDeadline;
import dev.thresher.store.control.TopologyStore;
import dev.thresher.topology.Partition;
import java.time.Duration;
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

    private final TopologyStore control;
    private final String hostId;
    private final long leaseMs;
    private final Map<Integer, Held> held = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer;
    private final Failpoints failpoints;
    private final java.util.concurrent.atomic.AtomicLong takeovers = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong drops = new java.util.concurrent.atomic.AtomicLong();

    public LeaseKeeper(TopologyStore control, String hostId, long leaseMs, Failpoints failpoints) {
        this.control = control;
        this.failpoints = failpoints;
        this.hostId = hostId;
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
     * Also renews as soon as the topology changes (a partition added, split or moved, a candidate added, a
     * transfer asked for, a lease released), instead of at the next period: {@code topologyFingerprint} is read
     * every {@code everyMs} (from the node's topology cache, so without a database read).
     */
    public void followTopology(java.util.function.Supplier<Object> topologyFingerprint, long everyMs) {
        java.util.concurrent.atomic.AtomicReference<Object> seen =
                new java.util.concurrent.atomic.AtomicReference<>(topologyFingerprint.get());
        timer.scheduleWithFixedDelay(() -> {
            try {
                Object now = topologyFingerprint.get();
                if (!now.equals(seen.get())) {
                    seen.set(now);
                    renewQuietly();
                }
            } catch (RuntimeException e) {
                log.debug("{}: cannot read the topology version now: {}", hostId, e.toString());
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
        List<TopologyStore.Held> led;
        // a renewal that cannot finish within the lease is worth nothing: it gives up then (a frozen or cut-off
        // control database does not hold the next renewal, after it heals, behind a socket timeout)
        try (DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofMillis(leaseMs)))) {
            led = control.acquireLeadership(hostId, leaseMs);
        }
        long validUntil = sent + TimeUnit.MILLISECONDS.toNanos(leaseMs);
        var ledSet = new HashSet<Integer>();
        led.forEach(h -> ledSet.add(h.partition().id()));
        List<Integer> dropped = held.keySet().stream().filter(id -> !ledSet.contains(id)).sorted().toList();
        List<String> taken = led.stream().filter(h -> {
            Held before = held.get(h.partition().id());
            return before == null || before.partition().epoch() != h.partition().epoch();
        }).map(h -> h.partition().id() + "@" + h.partition().epoch()).toList();
        held.keySet().removeAll(dropped);
        takeovers.addAndGet(taken.size());
        drops.addAndGet(dropped.size());
        if (!taken.isEmpty()) {
            log.info("{} leads partitions {} now (partition@epoch)", hostId, taken);
        }
        if (!dropped.isEmpty()) {
            log.info("{} no longer leads partitions {}", hostId, dropped);
        }
        for (TopologyStore.Held h : led) {
            held.put(h.partition().id(), new Held(h.partition(), validUntil));
        }
        if (!dropped.isEmpty()) {
            // No longer led here (handed over, draining, failback, or taken): the local view is gone first, then the
            // database's lease ends, so the next holder starts at once and never beside this node.
            try {
                control.releaseLeases(hostId, dropped);
            } catch (RuntimeException e) {
                log.debug("{}: could not end the leases of {} early; they end on their own: {}", hostId, dropped, e.toString());
            }
        }
        return led.stream().map(h -> h.partition().id()).toList();
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

    /**
     * Partitions this node came to lead so far: a lease taken that it did not hold, or held under another epoch
     * (each line "leads partitions … now" counts its partitions).
     */
    public long takeovers() {
        return takeovers.get();
    }

    /** Partitions this node stopped leading so far (handed over, drained, failed back, or taken by another). */
    public long drops() {
        return drops.get();
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
