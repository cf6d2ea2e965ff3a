package dev.thresher.failpoints;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * The failpoints of one node. A disabled instance (production) answers every {@link #hit} with one
 * read of a final field and cannot be armed. An enabled instance (tests) counts hits and applies
 * the action armed at a point to the hits its filter selects, a bounded number of times.
 *
 * <pre>
 * failpoints.arm(Failpoint.BEFORE_GUEST_START, site -&gt; site.partitionId() == 3, 1, Action.fail(ErrorCode.TARGET_STALE));
 * </pre>
 */
public final class Failpoints {
    /** What an armed failpoint does to the hits it selects. */
    public sealed interface Action {
        /** Waits, then proceeds. */
        record Delay(Duration duration) implements Action {}

        /** Waits {@code after}, then throws a {@link ThresherException} with this code. */
        record Fail(ErrorCode code, Duration after) implements Action {}

        /** Tells the caller to drop what it was doing (a wire message, a connection). */
        record Drop() implements Action {}

        /**
         * Blocks until {@link Failpoints#release} or a safety bound of 60 s, then proceeds, or throws a
         * {@link ThresherException} with {@code then} when it is not null.
         */
        record Halt(CountDownLatch released, ErrorCode then) implements Action {}

        public static Action delay(Duration d) {
            return new Delay(d);
        }

        public static Action fail(ErrorCode code) {
            return new Fail(code, Duration.ZERO);
        }

        public static Action failAfter(Duration after, ErrorCode code) {
            return new Fail(code, after);
        }

        public static Action drop() {
            return new Drop();
        }

        public static Action halt() {
            return new Halt(new CountDownLatch(1), null);
        }

        /** Held like {@link #halt()}; once released, fails with {@code code} instead of proceeding. */
        public static Action haltThenFail(ErrorCode code) {
            return new Halt(new CountDownLatch(1), java.util.Objects.requireNonNull(code));
        }
    }

    /** The caller's next step after a hit. */
    public enum Outcome { PROCEED, DROP }

    private record Armed(Predicate<Site> filter, AtomicInteger remaining, Action action) {}

    private static final long HALT_BOUND_SECONDS = 60;
    private static final Failpoints DISABLED = new Failpoints(false);

    private final boolean enabled;
    private final Map<Failpoint, List<Armed>> armed = new EnumMap<>(Failpoint.class);
    /** Halt actions armed at each point, kept after they are used up so disarming still releases their hits. */
    private final Map<Failpoint, List<Action.Halt>> halts = new EnumMap<>(Failpoint.class);
    private final Map<Failpoint, AtomicLong> hits = new EnumMap<>(Failpoint.class);
    private final Map<Failpoint, AtomicLong> fired = new EnumMap<>(Failpoint.class);

    private Failpoints(boolean enabled) {
        this.enabled = enabled;
        for (Failpoint f : Failpoint.values()) {
            hits.put(f, new AtomicLong());
            fired.put(f, new AtomicLong());
        }
    }

    /** The production instance: never armed, free to hit. */
    public static Failpoints disabled() {
        return DISABLED;
    }

    /** A fresh armable instance, for tests. */
    public static Failpoints enabled() {
        return new Failpoints(true);
    }

    public boolean isEnabled() {
        return enabled;
    }

    /** The point is reached: counts the hit and applies an armed action that selects it. */
    public Outcome hit(Failpoint point, Site site) {
        if (!enabled) {
            return Outcome.PROCEED;
        }
        hits.get(point).incrementAndGet();
        Armed a = null;
        synchronized (armed) {
            List<Armed> list = armed.getOrDefault(point, List.of());
            for (Armed candidate : list) {
                if (candidate.remaining().get() != 0 && candidate.filter().test(site)) {
                    a = candidate;
                    break;
                }
            }
            if (a == null) {
                return Outcome.PROCEED;
            }
            if (a.remaining().decrementAndGet() == 0) {
                list.remove(a);
            }
        }
        fired.get(point).incrementAndGet();
        return switch (a.action()) {
            case Action.Delay d -> {
                sleep(d.duration());
                yield Outcome.PROCEED;
            }
            case Action.Fail f -> {
                sleep(f.after());
                throw new ThresherException(f.code(), "failpoint " + point.id() + " fired at " + site);
            }
            case Action.Drop d -> Outcome.DROP;
            case Action.Halt h -> {
                try {
                    h.released().await(HALT_BOUND_SECONDS, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                if (h.then() != null) {
                    throw new ThresherException(h.then(), "failpoint " + point.id() + " fired at " + site + " (released)");
                }
                yield Outcome.PROCEED;
            }
        };
    }

    /**
     * Arms a point; the action fires at most {@code times} times (a negative count: until
     * disarmed) on the hits its filter selects. Several actions may be armed at one point; a hit
     * takes the first, in arming order, that selects it.
     *
     * @throws IllegalStateException on a disabled instance
     */
    public void arm(Failpoint point, Predicate<Site> filter, int times, Action action) {
        if (!enabled) {
            throw new IllegalStateException("failpoints are disabled on this node");
        }
        synchronized (armed) {
            armed.computeIfAbsent(point, p -> new ArrayList<>()).add(new Armed(filter, new AtomicInteger(times), action));
            if (action instanceof Action.Halt h) {
                halts.computeIfAbsent(point, p -> new ArrayList<>()).add(h);
            }
        }
    }

    public void arm(Failpoint point, int times, Action action) {
        arm(point, s -> true, times, action);
    }

    /** Disarms every action at a point and releases whatever they halted. */
    public void disarm(Failpoint point) {
        List<Action.Halt> held;
        synchronized (armed) {
            armed.remove(point);
            held = halts.remove(point);
        }
        if (held != null) {
            held.forEach(h -> h.released().countDown());
        }
    }

    public void disarmAll() {
        for (Failpoint f : Failpoint.values()) {
            disarm(f);
        }
    }

    /**
     * Disarms every point, releases what they halted and zeroes the counts, so that what one
     * test armed and counted cannot leak into the next one on the same node.
     */
    public void reset() {
        disarmAll();
        hits.values().forEach(c -> c.set(0));
        fired.values().forEach(c -> c.set(0));
    }

    /** Releases the hits a halt action holds at that point, without disarming it. */
    public void release(Action halt) {
        if (halt instanceof Action.Halt h) {
            h.released().countDown();
        }
    }

    /** Times the point was reached since this instance was made or last reset. */
    public long hits(Failpoint point) {
        return hits.get(point).get();
    }

    /** Times an armed action fired at the point since this instance was made or last reset. */
    public long fired(Failpoint point) {
        return fired.get(point).get();
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
