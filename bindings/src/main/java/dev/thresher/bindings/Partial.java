package dev.thresher.bindings;

import java.util.Objects;

/**
 * One numeric partial, as {@code emit(key, value)} produced it. The record itself accepts any
 * double; validation of finiteness and bounds belongs to the coordinator, which reports each
 * violation with its own code.
 */
public record Partial(String key, double value) implements Comparable<Partial> {
    public Partial {
        Objects.requireNonNull(key, "key");
    }

    /** Orders by key (UTF-16 code unit order of the Java string), then by value. */
    @Override
    public int compareTo(Partial o) {
        int c = key.compareTo(o.key);
        return c != 0 ? c : Double.compare(value, o.value);
    }
}
