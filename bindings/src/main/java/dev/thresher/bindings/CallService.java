package dev.thresher.bindings;

import java.util.concurrent.CompletableFuture;

/**
 * What a front door calls. The future completes with the published result, or exceptionally with a
 * {@code dev.thresher.errors.ThresherException} carrying the typed cause. Implementations never
 * block the calling thread.
 */
public interface CallService {
    CompletableFuture<CallResult> call(CallRequest request);
}
