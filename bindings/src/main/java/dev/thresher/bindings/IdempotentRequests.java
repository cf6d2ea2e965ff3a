package dev.thresher.bindings;

import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Outer requests journaled under a caller's {@code Idempotency-Key}: per (tenant, key), the request runs once and
 * its outer response is kept for {@code limits.coordinationRetentionMs}; a repeat with the same request gets that
 * response back without running anything, one with a different request is refused
 * ({@code IDEMPOTENCY_KEY_REUSED}), and one arriving while the first runs waits for its response (within its own
 * deadline). Successes and failures that would fail the same way again are kept; a failure a retry could get past
 * (a retryable or ambiguous one: nothing was published) releases the key, so the same key runs again.
 */
public interface IdempotentRequests {
    /** An outer response: HTTP status and body. */
    record Response(int status, String body) {}

    /**
     * What running the request came to.
     *
     * @param keep whether the response is journaled under the key (else the key is released)
     */
    record Outcome(Response response, boolean keep) {}

    /**
     * What the request runs with.
     *
     * @param previousCall the call recorded by an earlier owner of the key that died before recording its response;
     *     the request should answer from that call's outcome when it succeeded rather than call again
     * @param onRecorded to be told the id of the nested call once it is recorded (so a later owner knows it)
     */
    record Run(Optional<UUID> previousCall, Consumer<String> onRecorded) {}

    /**
     * A journaled response.
     *
     * @param replayed whether it was journaled by an earlier request (nothing ran for this one)
     */
    record Answer(Response response, boolean replayed) {}

    /**
     * Runs {@code execute} once for (tenant, key), or answers what it answered.
     *
     * @param fingerprint a digest of what makes two requests the same request (route, body)
     * @param deadlineMs how long this request may take, waiting for a running duplicate included
     * @return the response; completes exceptionally with a typed failure of the key itself
     *     ({@code IDEMPOTENCY_KEY_REUSED}, {@code DEADLINE_EXCEEDED} waiting for a duplicate,
     *     {@code STORE_UNAVAILABLE})
     */
    CompletableFuture<Answer> once(String tenant, String key, byte[] fingerprint, long deadlineMs,
                                   Function<Run, CompletableFuture<Outcome>> execute);
}
