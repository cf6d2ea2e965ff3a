package dev.thresher.coordinator;

import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import java.util.concurrent.CompletableFuture;

/**
 * The leader hosts of a call, as the coordinator reaches them: one host request, answered by one reply,
 * and the one-way stop of a call. Failures follow {@link WireClient}: {@code HOST_UNREACHABLE} proves the
 * request never left; any other failure after it was written is {@code TRANSPORT_OUTCOME_UNKNOWN}.
 */
public interface Leaders {

    /** Sends one host request; the future fails with a {@code ThresherException} when no reply comes. */
    CompletableFuture<HostReply> send(String host, int port, HostRequest request);

    /** Tells the host that {@code callId} stopped (best effort, nothing answers it). */
    CompletableFuture<Void> stop(String host, int port, String callId);

    /** The node's wire client. */
    static Leaders of(WireClient wire) {
        return new Leaders() {
            @Override
            public CompletableFuture<HostReply> send(String host, int port, HostRequest request) {
                return wire.send(host, port, request);
            }

            @Override
            public CompletableFuture<Void> stop(String host, int port, String callId) {
                return wire.stop(host, port, callId);
            }
        };
    }
}
