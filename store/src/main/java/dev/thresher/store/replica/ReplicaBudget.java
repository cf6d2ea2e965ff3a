package dev.thresher.store.replica;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The heap one node gives all its leader replicas ({@code limits.replicaMemoryBytes}). Partitions reserve what
 * they hold as they are copied and as changes grow them; one that would pass the budget is dropped from memory
 * and read through SQL. Thread-safe.
 */
public final class ReplicaBudget {
    private final long limitBytes;
    private final AtomicLong used = new AtomicLong();

    public ReplicaBudget(long limitBytes) {
        if (limitBytes < 0) {
            throw new IllegalArgumentException("a replica budget is 0 or more bytes, was " + limitBytes);
        }
        this.limitBytes = limitBytes;
    }

    /** Reserves {@code bytes} more if they fit; nothing is reserved otherwise. */
    public boolean tryReserve(long bytes) {
        if (bytes <= 0) {
            release(-bytes);
            return true;
        }
        while (true) {
            long now = used.get();
            if (now + bytes > limitBytes) {
                return false;
            }
            if (used.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    public void release(long bytes) {
        if (bytes > 0) {
            used.addAndGet(-bytes);
        }
    }

    public long limitBytes() {
        return limitBytes;
    }

    public long usedBytes() {
        return used.get();
    }

    /** Whether replicas are kept at all. */
    public boolean enabled() {
        return limitBytes > 0;
    }
}
