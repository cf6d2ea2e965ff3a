package dev.thresher.server;

import dev.thresher.wire.ShardRunHandler;
import dev.thresher.wire.WireMessage;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import java.util.concurrent.CompletableFuture;

/**
 * The shard runs the wire server hands this node, counted while in flight: a run counts until its
 * reply has been handed to the wire server (its completion callbacks ran, so the reply is queued on
 * its connection before the server can close it).
 */
final class ServedShardRuns implements ShardRunHandler {
    private final ShardRunHandler delegate;
    private final InFlight inFlight = new InFlight();

    ServedShardRuns(ShardRunHandler delegate) {
        this.delegate = delegate;
    }

    @Override
    public CompletableFuture<WireMessage> handle(ShardRunRequest request, long receivedNanos) {
        return inFlight.track(() -> delegate.handle(request, receivedNanos));
    }

    /** Shard runs received whose reply the wire server has not been handed yet. */
    int inFlight() {
        return inFlight.get();
    }
}
