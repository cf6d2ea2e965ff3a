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
        FairPlaces pool = new FairPlaces(8, 4, 1_000, k -> false);
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
        // kills: tryAcquire ignoring the share, the key's waiters, burning or the free count
        java.util.Set<String> burning = java.util.concurrent.ConcurrentHashMap.newKeySet();
        FairPlaces pool = new FairPlaces(4, 2, 100, burning::contains, now::get);
        FairPlaces.Permit other = pool.tryAcquire("other");
        assertThat(other).isNotNull();
        FairPlaces.Permit g1 = pool.tryAcquire("greedy");
        FairPlaces.Permit g2 = pool.tryAcquire("greedy");
        assertThat(g1).isNotNull();
        assertThat(g2).isNotNull();
        assertThat(pool.tryAcquire("greedy")).as("beside another key, at most its share").isNull();
        assertThat(pool.held("greedy")).isEqualTo(2);
        assertThat(pool.free()).isEqualTo(1);
        // "greedy" burns: beside others it may hold one, so its waiter queues with a place free
        burning.add("greedy");
        g2.close();
        assertThat(pool.free()).isEqualTo(2);
        CompletableFuture<FairPlaces.Permit> queued = waitFor(pool, "greedy", 10_000);
        awaitWaiting(pool, "greedy", 1);
        assertThat(pool.tryAcquire("greedy")).as("never ahead of its own key's waiter").isNull();
        assertThat(pool.tryAcquire("third")).as("another key takes a free place").isNotNull();
        g1.close();
        burning.remove("greedy");
        assertThat(queued.get(10, TimeUnit.SECONDS)).as("the waiter is served first").isNotNull();
        other.close();
        FairPlaces full = new FairPlaces(1, 1, 1_000, k -> false);
        assertThat(full.tryAcquire("a")).isNotNull();
        assertThat(full.tryAcquire("b")).as("nothing free").isNull();
        assertThat(full.waiting()).as("a refusal leaves nothing queued").isZero();
    }

    @Test
    void aKeyAloneMayHoldEveryPlace() throws Exception {
        FairPlaces pool = new FairPlaces(8, 4, 1_000, k -> false);
        for (int i = 0; i < 8; i++) {
            assertThat(pool.acquire("alone", in(0))).isNotNull();
        }
        assertThat(pool.free()).isZero();
    }

    @Test
    void aFreedPlaceGoesToTheWaitingKeyHoldingFewest() throws Exception {
        FairPlaces pool = new FairPlaces(2, 2, 1_000, k -> false);
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
        FairPlaces pool = new FairPlaces(1, 1, 1_000, k -> false);
        FairPlaces.Permit held = pool.acquire("a", in(0));
        assertThat(waitFor(pool, "b", 30).get(10, TimeUnit.SECONDS)).isNull();
        held.close();
        held.close(); // once
        assertThat(pool.free()).isEqualTo(1);
        assertThat(pool.acquire("b", in(0))).isNotNull();
        assertThat(pool.free()).isZero();
    }

    @Test
    void aKeyThatHeldAPlaceTooLongHoldsOnlyItsShareAloneAndIsRememberedEvenAfterQuickOnes() throws Exception {
        // kills: slowness capping a key beside others (a binding starved of CPU by a spinner is slow by wall time, and
        // was held to one place per host), a quick place clearing it, forgetting it before ten slow-run lengths
        FairPlaces pool = new FairPlaces(8, 4, 100, k -> false, now::get);
        FairPlaces.Permit other = pool.acquire("other", now.get());
        FairPlaces.Permit slowOne = pool.acquire("slow", now.get());
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(pool.slow("slow")).isTrue();
        java.util.List<FairPlaces.Permit> beside = new java.util.ArrayList<>();
        for (FairPlaces.Permit p; (p = pool.acquire("slow", now.get())) != null; ) {
            beside.add(p);
        }
        assertThat(pool.held("slow")).as("slow beside others: still its whole share").isEqualTo(4);
        beside.forEach(FairPlaces.Permit::close);
        slowOne.close();
        assertThat(pool.slow("slow")).as("remembered after the slow place is given back").isTrue();
        pool.acquire("slow", now.get()).close(); // a quick one
        assertThat(pool.slow("slow")).as("a quick one does not clear it").isTrue();
        other.close();
        java.util.List<FairPlaces.Permit> alone = new java.util.ArrayList<>();
        for (FairPlaces.Permit p; (p = pool.acquire("slow", now.get())) != null; ) {
            alone.add(p);
        }
        assertThat(pool.held("slow")).as("slow and alone: its share, never every place").isEqualTo(4);
        FairPlaces.Permit arriving = pool.acquire("other", now.get());
        assertThat(arriving).as("a key arriving beside a slow one finds a place at once").isNotNull();
        arriving.close();
        alone.forEach(FairPlaces.Permit::close);
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(999));
        assertThat(pool.slow("slow")).isTrue();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
        assertThat(pool.slow("slow")).as("forgotten ten slow-run lengths later").isFalse();
        for (int i = 0; i < 8; i++) {
            assertThat(pool.acquire("slow", now.get())).as("alone and not slow: every place").isNotNull();
        }
    }

    @Test
    void aKeyThatBurnsHoldsOnePlaceBesideOthersAndItsShareAlone() throws Exception {
        // kills: burning ignored beside others, a burner holding none, burning asked of the wrong key
        java.util.Set<String> burning = java.util.concurrent.ConcurrentHashMap.newKeySet();
        FairPlaces pool = new FairPlaces(8, 4, 100, burning::contains, now::get);
        FairPlaces.Permit other = pool.acquire("other", now.get());
        FairPlaces.Permit first = pool.acquire("spinner", now.get());
        FairPlaces.Permit second = pool.acquire("spinner", now.get());
        assertThat(second).as("below its share, not burning yet").isNotNull();
        burning.add("spinner");
        assertThat(pool.acquire("spinner", now.get())).as("burning: one place at most, and it holds two").isNull();
        second.close();
        assertThat(pool.acquire("spinner", now.get())).as("still one held").isNull();
        assertThat(pool.describe("spinner", "spinner")).contains("burns its places");
        first.close();
        FairPlaces.Permit one = pool.acquire("spinner", now.get());
        assertThat(one).as("holding none, a burner gets one").isNotNull();
        java.util.List<FairPlaces.Permit> others = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            others.add(pool.acquire("other", now.get()));
        }
        assertThat(others).as("the others keep their share").doesNotContainNull();
        others.forEach(FairPlaces.Permit::close);
        other.close();
        FairPlaces.Permit alone = pool.acquire("spinner", now.get());
        assertThat(alone).as("alone: more than one place").isNotNull();
        one.close();
        alone.close();
        burning.remove("spinner");
        assertThat(pool.free()).isEqualTo(8);
    }

    @Test
    void theShareCountsOverAGroupAndBurningPerKey() throws Exception {
        java.util.Set<String> burning = java.util.concurrent.ConcurrentHashMap.newKeySet();
        FairPlaces pool = new FairPlaces(8, 4, 100, burning::contains, now::get);
        FairPlaces.Permit other = pool.acquire("other", now.get());
        FairPlaces.Permit toA = pool.acquire("b", "b@a", now.get());
        burning.add("b@a");
        assertThat(pool.acquire("b", "b@a", now.get())).as("burning toward a").isNull();
        FairPlaces.Permit[] toC = new FairPlaces.Permit[3];
        for (int i = 0; i < 3; i++) {
            toC[i] = pool.acquire("b", "b@c", now.get());
            assertThat(toC[i]).as("not burning toward c").isNotNull();
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
    void aSlowGroupAloneHoldsItsShareOverAllItsKeys() throws Exception {
        // kills: the cap of a slow group alone counted per key (a binding slow toward three hosts took every place,
        // and a binding arriving beside it waited for them to end)
        FairPlaces pool = new FairPlaces(8, 4, 100, k -> false, now::get);
        pool.acquire("b", "b@a", now.get());
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(pool.slow("b@a")).isTrue();
        int taken = 1;
        for (String host : java.util.List.of("b@a", "b@c", "b@d")) {
            while (pool.acquire("b", host, now.get()) != null) {
                taken++;
            }
        }
        assertThat(taken).as("a slow group alone: its share over all its keys").isEqualTo(4);
        assertThat(pool.acquire("other", now.get())).as("a key arriving finds a place").isNotNull();
    }

    @Test
    void theShareOfLimitsIsAPercentOfThePlacesAndAtLeastOne() {
        assertThat(Limits.DEFAULTS.placesPerBinding(8)).isEqualTo(4);
        assertThat(Limits.DEFAULTS.placesPerBinding(1)).isEqualTo(1);
        assertThat(Limits.DEFAULTS.placesPerBinding(3)).isEqualTo(2);
        assertThat(FairPlaces.of(Limits.DEFAULTS, k -> false).perKey()).isEqualTo(4);
        assertThat(new FairPlaces(2, 5, 1, k -> false).perKey()).isEqualTo(2);
    }

    @Test
    void waitingCountsTheWaitersOfEveryKey() throws Exception {
        FairPlaces pool = new FairPlaces(1, 1, 1_000, k -> false);
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
