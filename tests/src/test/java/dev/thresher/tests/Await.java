package dev.thresher.tests;

import java.time.Duration;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The one way the whole-system tests wait: a probe polled until what it sees satisfies a condition, or until a
 * deadline, then a failure naming what was waited for and the last value seen (or the probe's last exception). The
 * assertion is on the condition, never on the time taken; a test never sleeps instead of waiting for what it needs.
 * (Sleeps that pace load or stand for time passing, a fault held so long, are not waits, and do not come here.)
 */
final class Await {
    /** How often a probe is polled unless told otherwise. */
    static final Duration EVERY = Duration.ofMillis(50);

    private Await() {}

    /** What a probe sees now; an exception counts as "not yet" and is kept as the last thing seen. */
    @FunctionalInterface
    interface Probe<T> {
        T get() throws Exception;
    }

    /**
     * How a wait ended: {@code reached} with the value that satisfied the condition, or not, with the last value seen
     * ({@code null} when the probe's last look threw {@code failure}).
     */
    record Polled<T>(boolean reached, T value, Exception failure) {
        /** The last thing seen, for a message: the value, or the exception the probe threw. */
        Object seen() {
            return failure != null ? failure : value;
        }
    }

    /** Polls {@code probe} until {@code done} holds of its value, and returns that value. */
    static <T> T until(String what, Duration timeout, Probe<T> probe, Predicate<? super T> done) {
        return until(what, timeout, EVERY, probe, done);
    }

    /** As {@link #until(String, Duration, Probe, Predicate)}, polling every {@code every}. */
    static <T> T until(String what, Duration timeout, Duration every, Probe<T> probe, Predicate<? super T> done) {
        return reached(what, timeout, poll(timeout, every, probe, done, null));
    }

    /** Polls {@code condition} until it holds. */
    static void until(String what, Duration timeout, BooleanSupplier condition) {
        until(what, timeout, EVERY, condition::getAsBoolean, Boolean::booleanValue);
    }

    /**
     * Polls {@code condition} until it holds while {@code work} (a call in flight that must bring it about) runs; when
     * the work ends first, its own failure is the failure, or else that it ended before the condition held.
     */
    static void until(String what, Duration timeout, BooleanSupplier condition, Future<?> work) {
        reached(what, timeout, poll(timeout, EVERY, condition::getAsBoolean, Boolean::booleanValue, work, what));
    }

    /**
     * Polls {@code condition} every {@code every} until it holds; {@code what} names what was waited for and what was
     * seen last (a description the condition's own probing keeps up to date), read once, when the wait fails.
     */
    static void until(Supplier<String> what, Duration timeout, Duration every, BooleanSupplier condition) {
        Polled<Boolean> p = poll(timeout, every, condition::getAsBoolean, Boolean::booleanValue, null);
        if (!p.reached()) {
            throw new AssertionError("waited " + timeout.toMillis() + " ms for " + what.get(), p.failure());
        }
    }

    /**
     * Polls {@code probe} until {@code done} holds of its value or {@code timeout} passes, and says which, with the
     * last value seen: for a caller that reports a miss itself (a fault suite's checker that records the outcome).
     */
    static <T> Polled<T> poll(Duration timeout, Duration every, Probe<T> probe, Predicate<? super T> done) {
        return poll(timeout, every, probe, done, null);
    }

    private static <T> T reached(String what, Duration timeout, Polled<T> p) {
        if (!p.reached()) {
            throw new AssertionError("waited " + timeout.toMillis() + " ms for " + what + "; last seen: " + p.seen(),
                    p.failure());
        }
        return p.value();
    }

    private static <T> Polled<T> poll(Duration timeout, Duration every, Probe<T> probe, Predicate<? super T> done,
                                      Future<?> work) {
        return poll(timeout, every, probe, done, work, "the condition");
    }

    private static <T> Polled<T> poll(Duration timeout, Duration every, Probe<T> probe, Predicate<? super T> done,
                                      Future<?> work, String what) {
        long until = System.nanoTime() + timeout.toNanos();
        T last = null;
        Exception failure = null;
        while (true) {
            try {
                T seen = probe.get();
                if (done.test(seen)) {
                    return new Polled<>(true, seen, null);
                }
                last = seen;
                failure = null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what, e);
            } catch (Exception e) {
                last = null;
                failure = e;
            }
            if (work != null && work.isDone()) {
                try {
                    work.get();
                } catch (Exception e) {
                    throw new AssertionError("what should have brought about " + what + " ended first: " + e, e);
                }
                throw new AssertionError("what should have brought about " + what + " ended first");
            }
            if (System.nanoTime() - until >= 0) {
                return new Polled<>(false, last, failure);
            }
            try {
                Thread.sleep(every);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what, e);
            }
        }
    }
}
