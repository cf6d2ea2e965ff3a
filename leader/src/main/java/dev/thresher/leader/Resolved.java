package dev.thresher.leader;

import dev.thresher.bindings.Binding;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.wire.WireMessage.HostRequest;

/** The binding and component of a request, resolved once, on the first slot that needs them. */
final class Resolved {
    private final HostRequest request;
    private Binding binding;
    private boolean loaded;
    private int abiVersion;

    private final BindingVersions catalog;
    private final GuestRunner cells;

    Resolved(HostRequest request, BindingVersions catalog, GuestRunner cells) {
        this.request = request;
        this.catalog = catalog;
        this.cells = cells;
    }

    /**
     * The binding version the call was planned with. Versions are immutable, so caching them is
     * safe; a version that does not exist here, or that pins another component than the request
     * names, is a stale target (nothing ran).
     */
    Binding binding() {
        if (binding == null) {
            Binding b = catalog.binding(request.tenant(), request.bindingName(), request.bindingVersion())
                    .orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE, "binding "
                            + request.bindingName() + " version " + request.bindingVersion() + " is not known here"));
            java.util.OptionalInt newest = catalog.currentVersion(request.tenant(), request.bindingName());
            if (newest.isPresent() && newest.getAsInt() > request.bindingVersion()) {
                // The call could not publish (publication needs its version to be current): no guest runs for it.
                throw new ThresherException(ErrorCode.TARGET_STALE, "binding " + request.bindingName() + " has version "
                        + newest.getAsInt() + ", newer than the call's version " + request.bindingVersion()
                        + "; refused before any guest code");
            }
            if (!b.componentDigest().equals(request.componentDigest())) {
                throw new ThresherException(ErrorCode.TARGET_STALE, "binding " + request.bindingName() + " version "
                        + request.bindingVersion() + " pins " + b.componentDigest() + ", not "
                        + request.componentDigest());
            }
            binding = b;
        }
        return binding;
    }

    /** The binding's component, loaded once per request; returns its digest. */
    String component() {
        if (!loaded) {
            abiVersion = cells.load(binding().componentDigest());
            loaded = true;
        }
        return binding().componentDigest();
    }

    /** The guest ABI version of the component; after {@link #component()}. */
    int abiVersion() {
        return abiVersion;
    }
}
