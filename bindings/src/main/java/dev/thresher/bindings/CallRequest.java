package dev.thresher.bindings;

import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One direct call of a binding, as a front door (pgwire, HTTP) hands it to the coordinator.
 *
 * @param tenant the tenant whose binding is called
 * @param principal the authenticated caller
 * @param bindingName the binding's name
 * @param argumentsJson the caller's JSON arguments, unparsed; the coordinator validates them
 * @param deadlineMs the deadline the caller asks for, or empty for the configured default
 * @param onRecorded told the call id as soon as the invocation is recorded in the control database, before
 *     any shard runs (on the coordinator's thread; it must not block), so a front door can hand the id to
 *     a caller who may lose the connection before the answer; a call planned again (a partition split under
 *     it) is recorded again under a new id, and told again
 * @param pinnedVersion the binding version the caller requires (an HTTP handler's {@code name@version}), or empty
 *     for whatever version is current; a call pinning a version that is not the current one is refused
 *     {@code TARGET_STALE} before anything runs
 */
public record CallRequest(String tenant, String principal, String bindingName, String argumentsJson,
                          Optional<Long> deadlineMs, Consumer<String> onRecorded, Optional<Integer> pinnedVersion) {
    public CallRequest {
        Objects.requireNonNull(pinnedVersion, "pinnedVersion");
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(principal, "principal");
        Objects.requireNonNull(bindingName, "bindingName");
        Objects.requireNonNull(argumentsJson, "argumentsJson");
        Objects.requireNonNull(deadlineMs, "deadlineMs");
        Objects.requireNonNull(onRecorded, "onRecorded");
    }

    public CallRequest(String tenant, String principal, String bindingName, String argumentsJson,
                       Optional<Long> deadlineMs, Consumer<String> onRecorded) {
        this(tenant, principal, bindingName, argumentsJson, deadlineMs, onRecorded, Optional.empty());
    }

    public CallRequest(String tenant, String principal, String bindingName, String argumentsJson,
                       Optional<Long> deadlineMs) {
        this(tenant, principal, bindingName, argumentsJson, deadlineMs, id -> { });
    }

    /** The same request, telling {@code listener} the call id once the invocation is recorded. */
    public CallRequest onRecorded(Consumer<String> listener) {
        return new CallRequest(tenant, principal, bindingName, argumentsJson, deadlineMs, listener, pinnedVersion);
    }

    /** The same request, refused unless {@code version} is the binding's current version. */
    public CallRequest pinned(int version) {
        return new CallRequest(tenant, principal, bindingName, argumentsJson, deadlineMs, onRecorded, Optional.of(version));
    }

    public static CallRequest of(String tenant, String principal, String bindingName, String argumentsJson) {
        return new CallRequest(tenant, principal, bindingName, argumentsJson, Optional.empty());
    }
}
