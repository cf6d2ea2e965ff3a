package dev.thresher.cellhost;

import dev.thresher.limits.Deadline;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Stops guests at their deadline. One timer thread serves every cell of a host: at the deadline it
 * interrupts the sandbox, and keeps interrupting every {@link #RETRY_NANOS} until the invocation disarms
 * its watch (an interrupt that lands before the guest entered is lost, so one shot is not enough). A guest
 * that still runs {@link #CANCEL_AFTER_NANOS} after its deadline has its sandbox cancelled for good.
 */
final class Watchdog implements AutoCloseable {
    static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    static final long CANCEL_AFTER_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final ScheduledThreadPoolExecutor timer;

    Watchdog() {
        timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "thresher-cell-watchdog");
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
    }

    /** Starts watching; the caller must {@link Watch#disarm()} when the guest returns, however it returns. */
    Watch arm(Deadline deadline, WasmEngine.WasmSandbox sandbox) {
        Watch w = new Watch(deadline, sandbox);
        synchronized (w) {
            w.future = timer.schedule(w::fire, Math.max(0, deadline.remainingNanos()), TimeUnit.NANOSECONDS);
        }
        return w;
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    final class Watch {
        private final Deadline deadline;
        private final WasmEngine.WasmSandbox sandbox;
        private ScheduledFuture<?> future;
        private boolean disarmed;
        private boolean fired;

        private Watch(Deadline deadline, WasmEngine.WasmSandbox sandbox) {
            this.deadline = deadline;
            this.sandbox = sandbox;
        }

        // Runs on the timer thread and holds the monitor while interrupting, so that disarm() returns
        // only once no interrupt is in flight: the next invocation on this sandbox cannot be hit by it.
        private synchronized void fire() {
            if (disarmed) {
                return;
            }
            fired = true;
            if (-deadline.remainingNanos() > CANCEL_AFTER_NANOS) {
                sandbox.cancel();
            } else {
                sandbox.interrupt();
            }
            if (!disarmed && !timer.isShutdown()) {
                future = timer.schedule(this::fire, RETRY_NANOS, TimeUnit.NANOSECONDS);
            }
        }

        /** Stops watching. @return whether the deadline fired (the guest was, or may have been, interrupted) */
        synchronized boolean disarm() {
            disarmed = true;
            if (future != null) {
                future.cancel(false);
            }
            return fired;
        }
    }
}
