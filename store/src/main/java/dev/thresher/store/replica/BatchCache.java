package dev.thresher.store.replica;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * The finished batches of one {@link PartitionRows}, a few of them, least recently used out first, each for
 * the version of the rows it was built from. Safe for concurrent readers: one of them builds a missing
 * batch, the others asking for the same one meanwhile wait for it rather than build it again.
 */
final class BatchCache {
    /** How many finished batches are kept. */
    static final int ENTRIES = 4;

    /** What a batch is cached under. */
    record Key(long version, int partitionId, String selectorSql, int maxRows, int maxBytes) {}

    /** A finished batch, or the typed refusal building it ended in. */
    record Built(byte[] bytes, int rows, ErrorCode error, String message) {
        static Built of(byte[] bytes, int rows) {
            return new Built(bytes, rows, null, null);
        }

        static Built refused(ThresherException e) {
            return new Built(null, 0, e.code(), e.getMessage());
        }

        long heapBytes() {
            return 48 + (bytes == null ? 2L * message.length() : ColumnVector.arrayHeap(bytes.length));
        }
    }

    private final Map<Key, CompletableFuture<Built>> entries = new LinkedHashMap<>(8, 0.75f, true);

    /**
     * The batch under the key, built by {@code build} when missing (a {@link ThresherException} it throws is
     * kept as the outcome; anything else is thrown and nothing is kept).
     */
    Built get(Key key, Supplier<Built> build) {
        CompletableFuture<Built> future;
        boolean mine = false;
        synchronized (this) {
            future = entries.get(key);
            if (future == null) {
                future = new CompletableFuture<>();
                entries.put(key, future);
                mine = true;
                evict(key.version());
            }
        }
        if (mine) {
            Built built;
            try {
                built = build.get();
            } catch (ThresherException e) {
                built = Built.refused(e);
            } catch (RuntimeException | Error e) {
                synchronized (this) {
                    entries.remove(key, future);
                }
                future.completeExceptionally(e);
                throw e;
            }
            future.complete(built);
            return built;
        }
        try {
            return future.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw e;
        }
    }

    /** Drops every batch (the rows changed). */
    synchronized void clear() {
        entries.clear();
    }

    synchronized boolean isEmpty() {
        return entries.isEmpty();
    }

    /** Heap bytes of the finished batches kept. */
    synchronized long bytes() {
        long n = 0;
        for (CompletableFuture<Built> f : entries.values()) {
            Built b = f.getNow(null);
            n += 64 + (b == null ? 0 : b.heapBytes());
        }
        return n;
    }

    private void evict(long version) {
        Iterator<Map.Entry<Key, CompletableFuture<Built>>> it = entries.entrySet().iterator();
        int size = entries.size();
        while (it.hasNext()) { // least recently used first
            if (it.next().getKey().version() != version || size > ENTRIES) {
                it.remove();
                size--;
            }
        }
    }
}
