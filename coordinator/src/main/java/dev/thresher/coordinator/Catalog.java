package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import dev.thresher.store.control.ControlCache;
import dev.thresher.topology.Topology;
import java.util.Optional;

/**
 * Bindings and topology as the coordinator reads them: from the node's cache ({@link ControlCache}),
 * which may be behind; every fence that matters is in the control database, so a stale read costs a
 * re-resolution, never a wrong answer.
 */
public interface Catalog {

    /** The binding's current version as cached, loading it when absent. */
    Optional<Binding> currentBinding(String tenant, String name);

    /** Drops the cached current version, so the next {@link #currentBinding} reads the database. */
    void invalidateBinding(String tenant, String name);

    /** The cached topology. */
    Topology topology();

    /** The topology read again from the control database (and cached). */
    Topology refreshTopology();

    /** The node's cache. */
    static Catalog of(ControlCache cache) {
        return new Catalog() {
            @Override
            public Optional<Binding> currentBinding(String tenant, String name) {
                return cache.currentBinding(tenant, name);
            }

            @Override
            public void invalidateBinding(String tenant, String name) {
                cache.invalidateBinding(tenant, name);
            }

            @Override
            public Topology topology() {
                return cache.topology();
            }

            @Override
            public Topology refreshTopology() {
                return cache.refreshTopology();
            }
        };
    }
}
