package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Components by digest, the {@value #ENTRIES} used last: one per node, shared by its coordinating and
 * its leader side. Packages are immutable, so an entry never goes stale; one dropped is read again
 * from the package store when next needed.
 */
public final class ComponentCache {
    static final int ENTRIES = 64;

    private final Function<String, Optional<byte[]>> packages;
    private final Map<String, Component> byDigest = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Component> eldest) {
            return size() > ENTRIES;
        }
    });

    /** @param packages reads a package's wasm bytes by digest (the control database's package store) */
    public ComponentCache(Function<String, Optional<byte[]>> packages) {
        this.packages = Objects.requireNonNull(packages, "packages");
    }

    /**
     * @throws ThresherException {@link ErrorCode#TARGET_STALE} when the package store has no such digest
     */
    public Component get(String digest) {
        Component c = byDigest.get(digest);
        if (c != null) {
            return c;
        }
        byte[] wasm = packages.apply(digest).orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE,
                "component " + digest + " is not in the package store"));
        Component loaded = new Component(digest, wasm);
        byDigest.putIfAbsent(digest, loaded);
        return loaded;
    }
}
