package dev.thresher.leader;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Which bindings' host requests burn a core: one whose request took {@code slowAfter} or more of its shard thread's CPU
 * time (its guests' code, spinning to their deadline) is a hog until ten times that after its last such request (a
 * quicker request does not end it: a hog's requests refused or waiting are quick too). CPU time, not the time a place
 * was held: a binding whose runs waited for a core behind a hog held its place long but burnt little, and must not be
 * taken for one (it would then queue behind the hog for the cores hogs share).
 */
final class CpuHogs {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final long slowAfterNanos;
    private final LongSupplier clock;
    /** Keys that are hogs, until when ({@link System#nanoTime()} time). */
    private final ConcurrentHashMap<String, Long> until = new ConcurrentHashMap<>();

    CpuHogs(long slowAfterMs) {
        this(slowAfterMs, System::nanoTime);
    }

    CpuHogs(long slowAfterMs, LongSupplier clock) {
        this.slowAfterNanos = TimeUnit.MILLISECONDS.toNanos(slowAfterMs);
        this.clock = clock;
    }

    /** The CPU time of the calling thread so far, for {@link #ran}; -1 where the JVM does not measure it. */
    static long threadCpuNanos() {
        return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
    }

    /** A request of {@code key} ended having used {@code cpuNanos} of its thread's CPU time (negative: unknown). */
    void ran(String key, long cpuNanos) {
        if (cpuNanos < 0) {
            return;
        }
        // A quick request does not clear it: a hog's requests refused or waiting (for a place, its cell, the deadline)
        // are quick too, and the next one would spin unbounded again.
        if (cpuNanos >= slowAfterNanos) {
            until.put(key, clock.getAsLong() + 10 * slowAfterNanos);
        }
    }

    /** Whether {@code key} burns a core now. */
    boolean hog(String key) {
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
