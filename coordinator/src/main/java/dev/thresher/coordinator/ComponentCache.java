package dev.thresher.coordinator;

import dev.thresher.cellhost.Component;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.ControlStore;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Components by digest, the {@value #ENTRIES} used last. Packages are immutable, so an entry never
 * goes stale; one dropped is read again from the package store when next needed.
 */
final class ComponentCache {
    static final int ENTRIES = 64;

    private final ControlStore control;
    private final Map<String, Component> byDigest = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Component> eldest) {
            return size() > ENTRIES;
        }
    });

    ComponentCache(ControlStore control) {
        this.control = control;
    }

    Component get(String digest) {
        Component c = byDigest.get(digest);
        if (c != null) {
            return c;
        }
        byte[] wasm = control.packageBytes(digest).orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE,
                "component " + digest + " is not in the package store"));
        Component loaded = new Component(digest, wasm);
        byDigest.putIfAbsent(digest, loaded);
        return loaded;
    }
}
