package dev.thresher.limits;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class FairPlacesTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final ExecutorService waiters = Executors.newVirtualThreadPerTaskExecutor();

    @AfterEach
    void stop() {
        waiters.shutdownNow();
    }

    private static long in(long ms) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    }

    private CompletableFuture<FairPlaces.Permit> waitFor(FairPlaces pool, String key, long ms) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return pool.acquire(key, ms == Long.MAX_VALUE ? Long.MAX_VALUE : in(ms));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }, waiters);
    }

    @Test
    void aKeyHoldsAtMostItsShareAndTheOthersKeepTheRest() throws Exception {
        FairPlaces pool = new FairPlaces(8, 4, 1_000);
        FairPlaces.Permit otherFirst = pool.acquire("other", in(0));
        for (int i = 0; i < 4; i++) {
            assertThat(pool.acquire("greedy", in(0))).isNotNull();
        }
        assertThat(pool.acquire("greedy", in(0))).as("a fifth place for one key, with three free").isNull();
        assertThat(pool.held("greedy")).isEqualTo(4);
        for (int i = 0; i < 3; i++) {
            assertThat(pool.acquire("other", in(0))).isNotNull();
        }
        assertThat(pool.free()).isZero();
        otherFirst.close();
        assertThat(pool.acquire("greedy", in(0))).as("others still hold places").isNull();
    }

    @Test
    void aPlaceTakenWithoutWaitingIsOneAcquireWouldGiveAtOnceAndNeverJumpsItsKeysQueue() throws Exception {
        // kills: tryAcquire ignoring the share, the key's waiters, slowness or the free count
        FairPlaces pool = new FairPlaces(4, 2, 100, now::get);
        FairPlaces.Permit other = pool.tryAcquire("other");
        assertThat(other).isNotNull();
        FairPlaces.Permit g1 = pool.tryAcquire("greedy");
        FairPlaces.Permit g2 = pool.tryAcquire("greedy");
        assertThat(g1).isNotNull();
        assertThat(g2).isNotNull();
        assertThat(pool.tryAcquire("greedy")).as("beside another key, at most its share").isNull();
        assertThat(pool.held("greedy")).isEqualTo(2);
        assertThat(pool.free()).isEqualTo(1);
        // "greedy" turns slow: beside others it may hold one, so its waiter queues with a place free
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(200));
        g2.close();
        assertThat(pool.free()).isEqualTo(2);
        CompletableFuture<FairPlaces.Permit> queued = waitFor(pool, "greedy", 10_000);
        awaitWaiting(pool, "greedy", 1);
        assertThat(pool.tryAcquire("greedy")).as("never ahead of its own key's waiter").isNull();
        assertThat(pool.tryAcquire("third")).as("another key takes a free place").isNotNull();
        g1.close();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(2_000)); // long enough for slowness to pass
        assertThat(queued.get(10, TimeUnit.SECONDS)).as("the waiter is served first").isNotNull();
        other.close();
        FairPlaces full = new FairPlaces(1, 1, 1_000);
        assertThat(full.tryAcquire("a")).isNotNull();
        assertThat(full.tryAcquire("b")).as("nothing free").isNull();
        assertThat(full.waiting()).as("a refusal leaves nothing queued").isZero();
    }

    @Test
    void aKeyAloneMayHoldEveryPlace() throws Exception {
        FairPlaces pool = new FairPlaces(8, 4, 1_000);
        for (int i = 0; i < 8; i++) {
            assertThat(pool.acquire("alone", in(0))).isNotNull();
        }
        assertThat(pool.free()).isZero();
    }

    @Test
    void aFreedPlaceGoesToTheWaitingKeyHoldingFewest() throws Exception {
        FairPlaces pool = new FairPlaces(2, 2, 1_000);
        FairPlaces.Permit a1 = pool.acquire("a", in(0));
        FairPlaces.Permit a2 = pool.acquire("a", in(0));
        CompletableFuture<FairPlaces.Permit> a3 = waitFor(pool, "a", 10_000);
        awaitWaiting(pool, "a", 1);
        CompletableFuture<FairPlaces.Permit> a4 = waitFor(pool, "a", 10_000);
        awaitWaiting(pool, "a", 2);
        CompletableFuture<FairPlaces.Permit> b1 = waitFor(pool, "b", 10_000);
        awaitWaiting(pool, "b", 1);
        a1.close();
        // "a" queued first, but "b" holds nothing: the place goes to b
        assertThat(b1.get(10, TimeUnit.SECONDS)).isNotNull();
        assertThat(a3).isNotDone();
        a2.close();
        assertThat(a3.get(10, TimeUnit.SECONDS)).as("first come first served within a key").isNotNull();
        assertThat(a4).isNotDone();
        b1.get().close();
        assertThat(a4.get(10, TimeUnit.SECONDS)).isNotNull();
        assertThat(pool.held("a")).isEqualTo(2);
    }

    @Test
    void aWaiterGivesUpAtItsTimeAndHoldsNothing() throws Exception {
        FairPlaces pool = new FairPlaces(1, 1, 1_000);
        FairPlaces.Permit held = pool.acquire("a", in(0));
        assertThat(waitFor(pool, "b", 30).get(10, TimeUnit.SECONDS)).isNull();
        held.close();
        held.close(); // once
        assertThat(pool.free()).isEqualTo(1);
        assertThat(pool.acquire("b", in(0))).isNotNull();
        assertThat(pool.free()).isZero();
    }

    @Test
    void aKeyThatHeldAPlaceTooLongHoldsOnlyOneBesideOthersUntilAQuickOneOrTime() throws Exception {
        FairPlaces pool = new FairPlaces(8, 4, 100, now::get);
        FairPlaces.Permit other = pool.acquire("other", now.get());
        FairPlaces.Permit spinning = pool.acquire("spinner", now.get());
        assertThat(pool.slow("spinner")).isFalse();
        FairPlaces.Permit second = pool.acquire("spinner", now.get());
        assertThat(second).as("below its share, not slow yet").isNotNull();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(pool.slow("spinner")).isTrue();
        assertThat(pool.acquire("spinner", now.get())).as("slow: one place at most, and it holds two").isNull();
        spinning.close();
        second.close();
        assertThat(pool.slow("spinner")).as("remembered after the slow places are given back").isTrue();
        FairPlaces.Permit one = pool.acquire("spinner", now.get());
        assertThat(one).isNotNull();
        assertThat(pool.acquire("spinner", now.get())).isNull();
        other.close();
        FairPlaces.Permit alone = pool.acquire("spinner", now.get());
        assertThat(alone).as("alone again: more than one place").isNotNull();
        java.util.List<FairPlaces.Permit> more = new java.util.ArrayList<>();
        for (FairPlaces.Permit p; (p = pool.acquire("spinner", now.get())) != null; ) {
            more.add(p);
        }
        assertThat(pool.held("spinner")).as("slow and alone: its share, never every place").isEqualTo(4);
        FairPlaces.Permit arriving = pool.acquire("other", now.get());
        assertThat(arriving).as("a key arriving beside a slow one finds a place at once").isNotNull();
        arriving.close();
        more.forEach(FairPlaces.Permit::close);
        alone.close();
        other = pool.acquire("other", now.get());
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1_000));
        one.close(); // held 1 s: slow again, remembered 1 s more
        assertThat(pool.slow("spinner")).isTrue();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1_000));
        assertThat(pool.slow("spinner")).as("forgotten ten slow-run lengths later").isFalse();
        FairPlaces.Permit quick = pool.acquire("spinner", now.get());
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(200));
        quick.close(); // slow (200 ms), then a quick one clears it
        assertThat(pool.slow("spinner")).isTrue();
        pool.acquire("spinner", now.get()).close();
        assertThat(pool.slow("spinner")).as("a quick one clears it").isFalse();
        other.close();
    }

    @Test
    void theShareCountsOverAGroupAndSlownessPerKey() throws Exception {
        FairPlaces pool = new FairPlaces(8, 4, 100, now::get);
        FairPlaces.Permit other = pool.acquire("other", now.get());
        FairPlaces.Permit toA = pool.acquire("b", "b@a", now.get());
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(pool.slow("b@a")).isTrue();
        assertThat(pool.acquire("b", "b@a", now.get())).as("slow toward a").isNull();
        FairPlaces.Permit[] toC = new FairPlaces.Permit[3];
        for (int i = 0; i < 3; i++) {
            toC[i] = pool.acquire("b", "b@c", now.get());
            assertThat(toC[i]).as("not slow toward c").isNotNull();
        }
        assertThat(pool.acquire("b", "b@c", now.get())).as("the group holds its share, 4").isNull();
        toA.close();
        other.close();
        for (FairPlaces.Permit p : toC) {
            p.close();
        }
        assertThat(pool.free()).isEqualTo(8);
    }

    @Test
    void theShareOfLimitsIsAPercentOfThePlacesAndAtLeastOne() {
        assertThat(Limits.DEFAULTS.placesPerBinding(8)).isEqualTo(4);
        assertThat(Limits.DEFAULTS.placesPerBinding(1)).isEqualTo(1);
        assertThat(Limits.DEFAULTS.placesPerBinding(3)).isEqualTo(2);
        assertThat(FairPlaces.of(Limits.DEFAULTS).perKey()).isEqualTo(4);
        assertThat(new FairPlaces(2, 5, 1).perKey()).isEqualTo(2);
    }

    @Test
    void waitingCountsTheWaitersOfEveryKey() throws Exception {
        FairPlaces pool = new FairPlaces(1, 1, 1_000);
        FairPlaces.Permit held = pool.acquire("a", in(0));
        assertThat(pool.waiting()).isZero();
        CompletableFuture<FairPlaces.Permit> a = waitFor(pool, "a", Long.MAX_VALUE);
        CompletableFuture<FairPlaces.Permit> b = waitFor(pool, "b", Long.MAX_VALUE);
        awaitWaiting(pool, "a", 1);
        awaitWaiting(pool, "b", 1);
        assertThat(pool.waiting()).isEqualTo(2);
        held.close();
        FairPlaces.Permit next = CompletableFuture.anyOf(a, b).thenApply(FairPlaces.Permit.class::cast).get(10, TimeUnit.SECONDS);
        assertThat(pool.waiting()).isEqualTo(1);
        next.close();
        (a.isDone() && a.join() == next ? b : a).get(10, TimeUnit.SECONDS).close();
        assertThat(pool.waiting()).isZero();
        assertThat(pool.free()).isEqualTo(1);
    }

    /** Waits (bounded) until {@code n} threads wait for {@code key}: a condition, not a sleep. */
    private static void awaitWaiting(FairPlaces pool, String key, int n) throws InterruptedException {
        long until = in(10_000);
        while (pool.waiting(key) < n) {
            assertThat(System.nanoTime() - until).as("%d waiters of %s", n, key).isNegative();
            Thread.sleep(1);
        }
    }
}
