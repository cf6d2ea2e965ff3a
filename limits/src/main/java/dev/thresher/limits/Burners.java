package dev.thresher.limits;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Which keys (bindings) burn what a pool's places stand for, for {@link FairPlaces}'s {@code burns}: one beside
 * others holds one place at most.
 *
 * <ul>
 *   <li>A leader counts the CPU time of each run's thread ({@link #start}): a run that has taken {@code slowAfter} of
 *       it, while still running or when it ended, makes its key a burner. CPU time, not the time a place was held: a
 *       binding whose runs waited for a core behind a spinning guest held its places long but burnt little, and must
 *       not be taken for the spinner (it would then hold one place, and queue behind its own callers).</li>
 *   <li>A coordinator tells it of a request that ran to its call's deadline ({@link #burnt}).</li>
 *   <li>A key stays a burner until ten times {@code slowAfter} after the last time it burnt. A quicker run does not
 *       end it: a burner's runs refused or waiting are quick too, and the next one would spin again.</li>
 * </ul>
 */
public final class Burners {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final long slowAfterNanos;
    private final LongSupplier clock;
    /** Keys that burnt, until when ({@link System#nanoTime()} time). */
    private final ConcurrentHashMap<String, Long> until = new ConcurrentHashMap<>();
    /** Runs going on now, by key. */
    private final ConcurrentHashMap<String, Set<Run>> running = new ConcurrentHashMap<>();

    public Burners(long slowAfterMs) {
        this(slowAfterMs, System::nanoTime);
    }

    Burners(long slowAfterMs, LongSupplier clock) {
        this.slowAfterNanos = TimeUnit.MILLISECONDS.toNanos(slowAfterMs);
        this.clock = clock;
    }

    /** One run of a key on one thread; {@link #close()} on that thread when it ends. */
    public final class Run implements AutoCloseable {
        private final String key;
        private final long threadId;
        private final long startCpu;

        private Run(String key, long threadId, long startCpu) {
            this.key = key;
            this.threadId = threadId;
            this.startCpu = startCpu;
        }

        /** CPU time the run's thread has taken since it started; -1 when not measured. */
        long cpuNanos() {
            if (startCpu < 0) {
                return -1;
            }
            long now = threadId == Thread.currentThread().threadId()
                    ? THREADS.getCurrentThreadCpuTime() : THREADS.getThreadCpuTime(threadId);
            return now < 0 ? -1 : now - startCpu;
        }

        @Override
        public void close() {
            Set<Run> runs = running.get(key);
            if (runs == null || !runs.remove(this)) {
                return;
            }
            running.computeIfPresent(key, (k, s) -> s.isEmpty() ? null : s);
            ran(key, cpuNanos());
        }
    }

    /**
     * A run of {@code key} starting on the calling thread (a platform thread: a virtual thread's CPU time is not
     * measured, and such a run is never judged).
     */
    public Run start(String key) {
        Thread t = Thread.currentThread();
        long cpu = !t.isVirtual() && THREADS.isCurrentThreadCpuTimeSupported() && THREADS.isThreadCpuTimeEnabled()
                ? THREADS.getCurrentThreadCpuTime() : -1;
        Run run = new Run(key, t.threadId(), cpu);
        running.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(run);
        return run;
    }

    /** A run of {@code key} ended having taken {@code cpuNanos} of CPU time (negative: unknown). */
    void ran(String key, long cpuNanos) {
        if (cpuNanos >= slowAfterNanos) {
            burnt(key);
        }
    }

    /** {@code key} burnt its place's worth (its work ran to its deadline): a burner for ten times {@code slowAfter}. */
    public void burnt(String key) {
        until.put(key, clock.getAsLong() + 10 * slowAfterNanos);
    }

    /** Whether {@code key} burns now: it burnt lately, or one of its runs has taken {@code slowAfter} of CPU so far. */
    public boolean burns(String key) {
        Set<Run> runs = running.get(key);
        if (runs != null) {
            for (Run r : runs) {
                if (r.cpuNanos() >= slowAfterNanos) {
                    burnt(key);
                    return true;
                }
            }
        }
        Long u = until.get(key);
        if (u == null) {
            return false;
        }
        if (clock.getAsLong() - u >= 0) {
            until.remove(key, u);
            return false;
        }
        return true;
    }
}
