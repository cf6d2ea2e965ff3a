package dev.thresher.coordinator;

import dev.thresher.cellhost.Component;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.ControlStore;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Components by digest. Packages are immutable, so an entry never goes stale. */
final class ComponentCache {
    private final ControlStore control;
    private final Map<String, Component> byDigest = new ConcurrentHashMap<>();

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
