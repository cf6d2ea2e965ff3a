package dev.thresher.wire;

import dev.thresher.wire.WireMessage.HostRunReply;
import dev.thresher.wire.WireMessage.HostRunRequest;
import java.util.concurrent.CompletableFuture;

/**
 * Runs the slots of one host request for {@link WireServer}. The server calls {@link #handle} on a
 * dispatch thread of its own (a virtual thread), never on a Netty event loop, and writes the reply
 * when the returned future completes; the handler does the work on its own executor.
 *
 * <p>Deadline: the request carries only the budget left when the coordinator built the frame.
 * The handler's local monotonic deadline is
 * {@code receivedNanos + request.remainingBudgetMicros() * 1000}, compared against
 * {@link System#nanoTime()}; wall-clock time plays no part.
 *
 * <p>Reply: the future completes with a {@link HostRunReply} for the same {@code requestId}, one
 * outcome per slot of the request. The server turns anything else into a reply failing every slot:
 * an exceptional future (or a thrown exception) with the
 * {@link dev.thresher.errors.ThresherException}'s code, {@code INTERNAL_ERROR} for any other
 * exception, with {@code guestStarted} false only for retryable codes; a {@code null} future, a
 * reply to another request id or with other slots than the request's becomes {@code INTERNAL_ERROR}
 * with {@code guestStarted} true.
 */
@FunctionalInterface
public interface HostRunHandler {
    /**
     * @param request the decoded request
     * @param receivedNanos {@link System#nanoTime()} taken on the event loop as soon as the
     *     request's frame was decoded, before any queueing
     */
    CompletableFuture<HostRunReply> handle(HostRunRequest request, long receivedNanos);
}
