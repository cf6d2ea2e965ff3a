package dev.thresher.wire;

import dev.thresher.wire.WireMessage.ShardRunRequest;
import java.util.concurrent.CompletableFuture;

/**
 * Runs one shard for {@link WireServer}. The server calls {@link #handle} on a dispatch thread of
 * its own (a virtual thread), never on a Netty event loop, and writes the reply when the returned
 * future completes; the handler does the work on its own executor.
 *
 * <p>Deadline: the request carries only the budget left when the coordinator built the frame.
 * The handler's local monotonic deadline is
 * {@code receivedNanos + request.remainingBudgetMicros() * 1000}, compared against
 * {@link System#nanoTime()}; wall-clock time plays no part.
 *
 * <p>Reply: the future completes with a {@link WireMessage.ShardRunResult} or a
 * {@link WireMessage.ShardRunFailure} for the same {@code requestId}. The server turns anything
 * else into a failure: an exceptional future (or a thrown exception) becomes a failure with the
 * {@link dev.thresher.errors.ThresherException}'s code, {@code INTERNAL_ERROR} for any other
 * exception, with {@code guestStarted} false only for retryable codes; a {@code null} future or
 * another message (or another request's id) becomes {@code INTERNAL_ERROR} with {@code guestStarted} true.
 */
@FunctionalInterface
public interface ShardRunHandler {
    /**
     * @param request the decoded request
     * @param receivedNanos {@link System#nanoTime()} taken on the event loop as soon as the
     *     request's frame was decoded, before any queueing
     */
    CompletableFuture<WireMessage> handle(ShardRunRequest request, long receivedNanos);
}
