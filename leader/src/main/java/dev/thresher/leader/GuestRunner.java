package dev.thresher.leader;

import dev.thresher.bindings.Budgets;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.ComponentCache;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;

/**
 * Runs a component's {@code run} over a partition's batches on this node, blocking the calling thread, and tells a
 * refusal that provably came before any guest code (retryable when its code is) from a guest's own
 * failure (a component outcome, journaled).
 */
public interface GuestRunner {

    /**
     * Makes sure the component can be run, before its partition is read.
     *
     * @return the guest ABI version its {@code run} is typed for: 1 takes one batch, 2 a stream of them
     * @throws ThresherException {@code TARGET_STALE} when the package store does not hold it
     */
    int load(String componentDigest);

    /**
     * Runs the component's {@code run} (one batch for ABI v1, the stream for v2) within its binding's budgets;
     * throws a {@code ThresherException} as {@link CellHost#run(Component, RowBatchStream, String, Deadline, Budgets)} does.
     */
    RunOutcome run(String componentDigest, RowBatchStream batches, String argumentsJson, Deadline deadline,
                   Budgets budgets);

    /** Whether a failure of {@link #run} came before any guest code ran. */
    boolean refusedBeforeGuest(Throwable failure);

    /**
     * Pins the component's run cell on this node until closed (at most {@code limits.activationLeaseMs}):
     * {@link CellHost#demand}.
     */
    CellHost.Demand demand(String componentDigest);

    /** The node's run cells, components loaded through its component cache. */
    static GuestRunner of(CellHost cells, ComponentCache components) {
        return new GuestRunner() {
            /** Marks a component that could not be loaded in {@link #run}: no guest code ran. */
            private static final RuntimeException NOT_LOADED = new RuntimeException("component not loaded", null,
                    false, false) {};

            @Override
            public int load(String componentDigest) {
                return cells.abiVersion(components.get(componentDigest));
            }

            @Override
            public RunOutcome run(String componentDigest, RowBatchStream batches, String argumentsJson, Deadline deadline,
                                  Budgets budgets) {
                Component c;
                try {
                    c = components.get(componentDigest);
                } catch (RuntimeException e) {
                    ThresherException te = ThresherException.of(e);
                    throw new ThresherException(te.code(), te.getMessage(), NOT_LOADED);
                }
                return cells.run(c, batches, argumentsJson, deadline, budgets);
            }

            @Override
            public CellHost.Demand demand(String componentDigest) {
                return cells.demand(componentDigest);
            }

            @Override
            public boolean refusedBeforeGuest(Throwable failure) {
                if (CellHost.refusedBeforeGuest(failure)) {
                    return true;
                }
                for (Throwable t = failure; t != null; t = t.getCause()) {
                    if (t == NOT_LOADED) {
                        return true;
                    }
                }
                return false;
            }
        };
    }
}
