package dev.thresher.leader;

import dev.thresher.bindings.Binding;
import dev.thresher.store.control.ControlCache;
import java.util.Optional;

/** Immutable binding versions, as a leader looks up the one a host request pins. */
public interface BindingVersions {

    /** One version of a binding, current or not; empty when it does not exist. */
    Optional<Binding> binding(String tenant, String name, int version);

    /**
     * The newest version of a binding this node knows of (its cache may be behind the control database, never
     * ahead of it); empty when it knows none.
     */
    default java.util.OptionalInt currentVersion(String tenant, String name) {
        return java.util.OptionalInt.empty();
    }

    /** The node's cache (which asks the control database for a version it does not hold). */
    static BindingVersions of(ControlCache cache) {
        return new BindingVersions() {
            @Override
            public Optional<Binding> binding(String tenant, String name, int version) {
                return cache.binding(tenant, name, version);
            }

            @Override
            public java.util.OptionalInt currentVersion(String tenant, String name) {
                return cache.currentBinding(tenant, name).map(b -> java.util.OptionalInt.of(b.version()))
                        .orElse(java.util.OptionalInt.empty());
            }
        };
    }
}
