package dev.thresher.bindings;

import java.time.Instant;
import java.util.Objects;
import java.util.UUID;

/**
 * What the control database holds about one call (one invocation): a caller who lost its connection
 * before the answer looks its outcome up by the call id it was told when the invocation was recorded.
 *
 * @param callId the call's base identity
 * @param bindingName the binding called
 * @param state {@code running}, {@code succeeded} or {@code failed}
 * @param errorCode the Thresher error code of a failed call ({@code dev.thresher.errors.ErrorCode#code()}), else null
 * @param errorMessage the error message of a failed call, else null
 * @param resultJson the published result of a succeeded call, exactly as published, else null
 * @param createdAt when the invocation was recorded
 * @param finishedAt when it succeeded or failed, null while running
 * @param deadlineAt the call's absolute deadline
 */
public record CallOutcome(UUID callId, String bindingName, String state, Integer errorCode, String errorMessage,
                          String resultJson, Instant createdAt, Instant finishedAt, Instant deadlineAt) {
    public CallOutcome {
        Objects.requireNonNull(callId, "callId");
        Objects.requireNonNull(bindingName, "bindingName");
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(createdAt, "createdAt");
        Objects.requireNonNull(deadlineAt, "deadlineAt");
    }
}
