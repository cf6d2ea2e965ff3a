package dev.thresher.store.control;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Consumer;

/**
 * The current version of each binding of one kind as a {@link ControlCache} keeps it (or its absence), until a
 * notification or the poll drops it. A miss reads through once for every caller missing the same key at once
 * ({@link SharedReads}); a read that straddles an invalidation is answered but not kept.
 *
 * @param <V> what a current version is read as
 */
final class CurrentVersions<V> {
    private record Key(String tenant, String name) {}

    /** A cached current version (or its absence); a class, not a record: removal is by identity. */
    private static final class Entry<V> {
        final Optional<V> value;

        Entry(Optional<V> value) {
            this.value = value;
        }
    }

    /** A read in flight; it is joined only while younger than the wait bound (an older one may hang). */
    private record Load<V>(long generation, long startNanos, CompletableFuture<Optional<V>> result) {}

    private final String what;
    private final BiFunction<String, String, Optional<V>> read;
    private final Consumer<V> onRead;
    private final Runnable counted;
    private final SharedReads reads;
    private final long loadWaitNanos;
    private final ConcurrentHashMap<Key, Entry<V>> current = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Key, Load<V>> loads = new ConcurrentHashMap<>();
    /** Bumped by every invalidation; a read that straddles one is not kept. */
    private final AtomicLong generation = new AtomicLong();

    /**
     * @param what names a key's read in messages ("binding", "HTTP handler")
     * @param read reads a current version from the control database
     * @param onRead told of each version read (the immutable versions' cache keeps it)
     * @param counted counts a read of the control database
     */
    CurrentVersions(String what, BiFunction<String, String, Optional<V>> read, Consumer<V> onRead, Runnable counted,
                    SharedReads reads, long loadWaitNanos) {
        this.what = what;
        this.read = read;
        this.onRead = onRead;
        this.counted = counted;
        this.reads = reads;
        this.loadWaitNanos = loadWaitNanos;
    }

    /** The current version (or its absence), cached; a miss reads through. */
    Optional<V> get(String tenant, String name) {
        Key k = new Key(tenant, name);
        Entry<V> hit = current.get(k);
        return hit != null ? hit.value : load(k);
    }

    private Optional<V> load(Key k) {
        long now = System.nanoTime();
        long gen = generation.get();
        Load<V> mine = new Load<>(gen, now, new CompletableFuture<>());
        // Join a read that began after every invalidation we know of (and is not hung), else start one.
        Load<V> running = loads.compute(k, (key, cur) ->
                cur != null && cur.generation() >= gen && reads.young(cur.startNanos(), now) ? cur : mine);
        if (running == mine) {
            reads.read(mine.result(), () -> {
                try {
                    Entry<V> hit = current.get(k);
                    if (hit != null) {
                        return hit.value;
                    }
                    counted.run();
                    Optional<V> v = read.apply(k.tenant(), k.name());
                    Entry<V> entry = new Entry<>(v);
                    // Kept only if no invalidation came since the read began; atomic with a concurrent remove.
                    current.compute(k, (key, cur) -> generation.get() == gen ? entry : cur);
                    v.ifPresent(onRead);
                    return v;
                } finally {
                    loads.remove(k, mine);
                }
            });
        }
        return reads.await(running.result(), now + loadWaitNanos, what + " " + k.tenant() + "/" + k.name());
    }

    /** Drops one binding's current version. */
    void invalidate(String tenant, String name) {
        generation.incrementAndGet();
        current.remove(new Key(tenant, name));
    }

    /** Drops every binding whose {@code tenant/name} is spelled {@code qualified} (a '/' inside a tenant or a name). */
    void invalidateSpelled(String qualified) {
        generation.incrementAndGet();
        current.keySet().removeIf(k -> (k.tenant() + "/" + k.name()).equals(qualified));
    }

    /** Drops every current version. */
    void invalidateAll() {
        generation.incrementAndGet();
        current.clear();
    }
}
