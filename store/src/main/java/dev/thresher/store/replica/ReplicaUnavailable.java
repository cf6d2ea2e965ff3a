package dev.thresher.store.replica;

/**
 * Why a replica did not serve a read; the read goes through SQL instead. Never reaches a caller: it is a
 * reason for the node's counters and logs, not an error of the call.
 */
final class ReplicaUnavailable extends RuntimeException {
    ReplicaUnavailable(String reason) {
        super(reason, null, false, false);
    }
}
