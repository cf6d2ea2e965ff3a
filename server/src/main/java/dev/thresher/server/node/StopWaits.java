package dev.thresher.server.node;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * The bounded waits of a node's stop ({@link Node#close}): for a count of calls or shard runs in flight to reach zero,
 * and for the executors' tasks to end; each gives up at its bound and says what was left.
 */
final class StopWaits {
    /** After answers were handed to pgwire and HTTP, the time their event loops get to write them before the doors close. */
    private static final long POLL_MS = 10;

    private StopWaits() {
    }

    /** Waits until {@code count} reads zero, up to {@code boundMs}; returns the last count read. */
    static int awaitZero(IntSupplier count, long boundMs) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
        int n;
        while ((n = count.getAsInt()) > 0 && System.nanoTime() - until < 0) {
            if (!pause(POLL_MS)) {
                return count.getAsInt();
            }
        }
        return n;
    }

    /**
     * Shuts the executors down and waits for their tasks, up to {@code boundMs} in all; interrupts the tasks of those
     * still busy then. Returns how many were.
     */
    static int stopExecutors(long boundMs, ExecutorService... executors) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
        int unfinished = 0;
        for (ExecutorService e : executors) {
            if (e != null) {
                e.shutdown();
            }
        }
        for (ExecutorService e : executors) {
            if (e == null) {
                continue;
            }
            boolean done;
            try {
                done = e.awaitTermination(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                done = false;
            }
            if (!done) {
                e.shutdownNow();
                unfinished++;
            }
        }
        return unfinished;
    }

    /** Sleeps; false when interrupted (the interrupt is kept, and the caller stops waiting). */
    private static boolean pause(long ms) {
        if (Thread.currentThread().isInterrupted()) {
            return false;
        }
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    static long msSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
