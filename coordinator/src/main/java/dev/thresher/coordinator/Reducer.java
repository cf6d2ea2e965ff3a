package dev.thresher.coordinator;

import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.ComponentCache;
import dev.thresher.cellhost.ReduceOutcome;
import dev.thresher.limits.Deadline;

/**
 * Runs a component's {@code reduce} on this node, blocking the calling thread, and tells a refusal
 * that provably came before any guest code (nothing to journal) from a guest's own failure (a
 * component outcome, journaled).
 */
public interface Reducer {

    /**
     * @param componentDigest the component the call's binding pins
     * @param partials the merged partials, in the partials encoding
     * @throws RuntimeException a {@code ThresherException} as {@link CellHost#reduce} throws it
     */
    ReduceOutcome reduce(String componentDigest, byte[] partials, String argumentsJson, Deadline deadline);

    /** Whether a failure of {@link #reduce} came before any guest code ran. */
    boolean refusedBeforeGuest(Throwable failure);

    /** The node's reduce cells, components loaded through its component cache. */
    static Reducer of(CellHost cells, ComponentCache components) {
        return new Reducer() {
            @Override
            public ReduceOutcome reduce(String componentDigest, byte[] partials, String argumentsJson,
                                        Deadline deadline) {
                return cells.reduce(components.get(componentDigest), partials, argumentsJson, deadline);
            }

            @Override
            public boolean refusedBeforeGuest(Throwable failure) {
                return CellHost.refusedBeforeGuest(failure);
            }
        };
    }
}
