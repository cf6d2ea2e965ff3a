package dev.thresher.server.node;

import dev.thresher.limits.InFlight;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What pgwire and HTTP call: the coordinator, until the node stops admitting calls. A call counts as
 * in flight until its answer has been handed to the front door that took it (its completion
 * callbacks ran), so a stopping node closes a front door only after the door has its answers.
 */
final class FrontDoorCalls implements CallService {
    private final String hostId;
    private final CallService delegate;
    private final AtomicBoolean admitting = new AtomicBoolean(true);
    private final InFlight inFlight = new InFlight();

    FrontDoorCalls(String hostId, CallService delegate) {
        this.hostId = hostId;
        this.delegate = delegate;
    }

    @Override
    public CompletableFuture<CallResult> call(CallRequest request) {
        // Counted before the check, so a call admitted here is always seen by a drain that follows.
        return inFlight.track(() -> {
            if (!admitting.get()) {
                return CompletableFuture.failedFuture(new ThresherException(ErrorCode.HOST_UNREACHABLE,
                        "node " + hostId + " is stopping and takes no new calls; call another node"));
            }
            try {
                return delegate.call(request);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        });
    }

    /** From now on every call is refused with {@code HOST_UNREACHABLE} (retryable: nothing ran). */
    void stopAdmitting() {
        admitting.set(false);
    }

    /** Calls admitted whose answer the front door has not been handed yet. */
    int inFlight() {
        return inFlight.get();
    }
}
