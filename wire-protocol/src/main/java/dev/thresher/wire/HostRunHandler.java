package dev.thresher.wire;

import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
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
 * <p>Reply: the future completes with a {@link HostReply} for the same {@code requestId}, one
 * outcome per slot of the request. The server turns anything else into a reply failing every slot:
 * an exceptional future (or a thrown exception) with the
 * {@link dev.thresher.errors.ThresherException}'s code, {@code INTERNAL_ERROR} for any other
 * exception, with {@code guestStarted} false only for retryable codes; a {@code null} future, a
 * reply to another request id or with other slots than the request's becomes {@code INTERNAL_ERROR}
 * with {@code guestStarted} true.
 *
 * <p>Stop: a {@link WireMessage.CallStop} from a coordinator becomes one {@link #stop} call, also on
 * a dispatch thread, made only once {@link #handle} has been called for every request that arrived
 * before the stop on the same connection; nothing is written back.
 */
@FunctionalInterface
public interface HostRunHandler {
    /**
     * @param request the decoded request
     * @param receivedNanos {@link System#nanoTime()} taken on the event loop as soon as the
     *     request's frame was decoded, before any queueing
     */
    CompletableFuture<HostReply> handle(HostRequest request, long receivedNanos);

    /**
     * The coordinator of {@code callId} stopped admitting: slots of that call not yet started here
     * are not run. Each request of the call is still answered with one outcome per slot (a slot
     * skipped is a failure with {@code guestStarted = false}); a slot already started runs to its end.
     *
     * <p>Must not block: implementations only record the id, and the slots consult it before they
     * start. It may come more than once for a call, for a call with nothing left here, or for one
     * this node never saw. A thrown exception is logged and otherwise ignored. The default does
     * nothing: every slot runs.
     *
     * @param callId the call, as in {@link HostRequest#callId()}
     */
    default void stop(String callId) {}
}
