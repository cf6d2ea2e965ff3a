package dev.thresher.bindings;

import java.util.Objects;
import java.util.Optional;

/**
 * One direct call of a binding, as a front door (pgwire, HTTP) hands it to the coordinator.
 *
 * @param tenant the tenant whose binding is called
 * @param principal the authenticated caller
 * @param bindingName the binding's name
 * @param argumentsJson the caller's JSON arguments, unparsed; the coordinator validates them
 * @param deadlineMs the deadline the caller asks for, or empty for the configured default
 */
public record CallRequest(String tenant, String principal, String bindingName, String argumentsJson,
                          Optional<Long> deadlineMs) {
    public CallRequest {
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(principal, "principal");
        Objects.requireNonNull(bindingName, "bindingName");
        Objects.requireNonNull(argumentsJson, "argumentsJson");
        Objects.requireNonNull(deadlineMs, "deadlineMs");
    }

    public static CallRequest of(String tenant, String principal, String bindingName, String argumentsJson) {
        return new CallRequest(tenant, principal, bindingName, argumentsJson, Optional.empty());
    }
}
