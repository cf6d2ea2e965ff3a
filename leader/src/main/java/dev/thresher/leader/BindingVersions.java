package dev.thresher.leader;

import dev.thresher.bindings.Binding;
import dev.thresher.store.control.ControlCache;
import java.util.Optional;

/** Immutable binding versions, as a leader looks up the one a host request pins. */
public interface BindingVersions {

    /** One version of a binding, current or not; empty when it does not exist. */
    Optional<Binding> binding(String tenant, String name, int version);

    /** The node's cache (which asks the control database for a version it does not hold). */
    static BindingVersions of(ControlCache cache) {
        return cache::binding;
    }
}
