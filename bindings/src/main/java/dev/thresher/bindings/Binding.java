package dev.thresher.bindings;

import java.util.Objects;

/**
 * An immutable binding version: a name a caller invokes, pinned to one component by digest and to
 * one fixed selector.
 *
 * @param tenant the owning tenant
 * @param name the name callers use
 * @param version the binding version; a change of component or selector is a new version
 * @param componentDigest {@code sha256:<hex>} of the component's wasm bytes
 * @param selector the fixed selector
 * @param budgets what its guest may use, from its manifest ({@link Budgets#NONE}: the node's limits)
 */
public record Binding(String tenant, String name, int version, String componentDigest, Selector selector,
                      Budgets budgets) {
    /** A binding version with no budgets of its own. */
    public Binding(String tenant, String name, int version, String componentDigest, Selector selector) {
        this(tenant, name, version, componentDigest, selector, Budgets.NONE);
    }

    public Binding {
        Objects.requireNonNull(budgets, "budgets");
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(componentDigest, "componentDigest");
        Objects.requireNonNull(selector, "selector");
        if (version < 1) {
            throw new IllegalArgumentException("binding versions start at 1");
        }
        if (!componentDigest.matches("sha256:[0-9a-f]{64}")) {
            throw new IllegalArgumentException("component digest must read sha256:<64 lowercase hex>, was " + componentDigest);
        }
    }
}
