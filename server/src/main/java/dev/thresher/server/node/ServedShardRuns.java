package dev.thresher.server.node;

import dev.thresher.limits.InFlight;
import dev.thresher.wire.HostRunHandler;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import java.util.concurrent.CompletableFuture;

/**
 * The host runs the wire server hands this node, counted while in flight: a run counts until its
 * reply has been handed to the wire server (its completion callbacks ran, so the reply is queued on
 * its connection before the server can close it).
 */
final class ServedShardRuns implements HostRunHandler {
    private final HostRunHandler delegate;
    private final InFlight inFlight = new InFlight();

    ServedShardRuns(HostRunHandler delegate) {
        this.delegate = delegate;
    }

    @Override
    public CompletableFuture<HostReply> handle(HostRequest request, long receivedNanos) {
        return inFlight.track(() -> delegate.handle(request, receivedNanos));
    }

    @Override
    public void stop(String callId) {
        delegate.stop(callId);
    }

    /** Host runs received whose reply the wire server has not been handed yet. */
    int inFlight() {
        return inFlight.get();
    }
}
