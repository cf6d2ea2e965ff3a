package dev.thresher.coordinator;

import dev.thresher.store.control.ControlStore;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes coordination state (journal, slots, reduce leases, finished invocations) once it is
 * older than {@code limits.coordinationRetentionMs}. Every node runs one; the deletes are idempotent.
 */
public final class CoordinationJanitor implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(CoordinationJanitor.class);

    private final ControlStore control;
    private final long retentionMs;
    private final ScheduledExecutorService timer;

    public CoordinationJanitor(ControlStore control, String hostId, long retentionMs) {
        this.control = control;
        this.retentionMs = retentionMs;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "janitor-" + hostId);
            t.setDaemon(true);
            return t;
        });
    }

    /** Sweeps every tenth of the retention, between once a second and once a minute. */
    public void start() {
        long period = Math.clamp(retentionMs / 10, 1_000, 60_000);
        timer.scheduleWithFixedDelay(this::sweepQuietly, period, period, TimeUnit.MILLISECONDS);
    }

    /** Sweeps now; returns rows deleted. */
    public int sweep() {
        return control.cleanup(retentionMs);
    }

    private void sweepQuietly() {
        try {
            int n = sweep();
            if (n > 0) {
                log.debug("deleted {} rows of coordination state older than {} ms", n, retentionMs);
            }
        } catch (RuntimeException e) {
            log.warn("coordination cleanup failed: {}", e.toString());
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
