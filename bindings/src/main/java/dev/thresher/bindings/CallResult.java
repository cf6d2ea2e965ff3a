package dev.thresher.bindings;

import java.util.Objects;

/**
 * The published result of one call.
 *
 * @param callId the call's base identity
 * @param resultJson the reduced JSON exactly as published
 */
public record CallResult(String callId, String resultJson) {
    public CallResult {
        Objects.requireNonNull(callId, "callId");
        Objects.requireNonNull(resultJson, "resultJson");
    }
}
