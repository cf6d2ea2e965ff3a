package dev.thresher.coordinator;

import dev.thresher.store.control.CallJournal;
import dev.thresher.store.control.ControlStore;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes coordination state (journal, slots, reduce leases, finished invocations) once it is
 * older than {@code limits.coordinationRetentionMs}, and every second ends the invocations left running
 * that can no longer finish ({@link CallJournal#reconcileInvocations}: {@value #RECONCILE_GRACE_MS} ms
 * past their deadline, or their coordinator restarted). Every node runs one; both are idempotent.
 */
public final class CoordinationJanitor implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(CoordinationJanitor.class);

    /** How long after its deadline a running invocation is left to its coordinator to record, before any node does. */
    public static final long RECONCILE_GRACE_MS = 2_000;
    private static final long RECONCILE_PERIOD_MS = 1_000;

    private final CallJournal calls;
    private final String hostId;
    private final long retentionMs;
    private final ScheduledExecutorService timer;

    /** A janitor over the call journal of {@code control}. */
    public CoordinationJanitor(ControlStore control, String hostId, long retentionMs) {
        this(control.calls(), hostId, retentionMs);
    }

    public CoordinationJanitor(CallJournal calls, String hostId, long retentionMs) {
        this.calls = calls;
        this.hostId = hostId;
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
        timer.scheduleWithFixedDelay(this::reconcileQuietly, RECONCILE_PERIOD_MS, RECONCILE_PERIOD_MS,
                TimeUnit.MILLISECONDS);
    }

    /** Ends the invocations that can no longer finish now; returns how many. */
    public int reconcile() {
        return calls.reconcileInvocations(hostId, RECONCILE_GRACE_MS);
    }

    private void reconcileQuietly() {
        try {
            int n = reconcile();
            if (n > 0) {
                log.info("{} ended {} invocation(s) left running past their deadline or by a restarted coordinator",
                        hostId, n);
            }
        } catch (RuntimeException e) {
            log.debug("reconciling invocations failed: {}", e.toString());
        }
    }

    /** Sweeps now; returns rows deleted. */
    public int sweep() {
        return calls.cleanup(retentionMs);
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
