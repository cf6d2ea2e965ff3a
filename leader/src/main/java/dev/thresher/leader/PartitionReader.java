package dev.thresher.leader;

import dev.thresher.bindings.Selector;
import dev.thresher.limits.Deadline;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardPages;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;

/** Reads one partition of the local shard database into guest batches, bounded in rows and bytes. */
public interface PartitionReader {

    /**
     * The partition as one batch (guest ABI v1).
     *
     * @throws RuntimeException a {@code ThresherException} as {@link ShardReader#read} throws it
     *     ({@code BATCH_TOO_MANY_ROWS}, {@code BATCH_TOO_LARGE}, {@code DEADLINE_EXCEEDED}, ...)
     */
    ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline);

    /**
     * The partition as a sequence of batches from one snapshot (guest ABI v2); the caller closes it.
     *
     * @throws RuntimeException a {@code ThresherException} as {@link ShardReader#openPages} throws it
     */
    Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline);

    /** An open paged read of one partition. */
    interface Pages extends AutoCloseable {
        /** The next batch, or null after the last; the first is always there, perhaps with no rows. */
        ShardBatch next();

        /** Ends the read; idempotent. */
        @Override
        void close();
    }

    /** The node's shard database. */
    static PartitionReader of(ShardReader reader) {
        return new PartitionReader() {
            @Override
            public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
                return reader.read(partition, selector, maxRows, maxBytes, deadline);
            }

            @Override
            public Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
                ShardPages pages = reader.openPages(partition, selector, maxRows, maxBytes, deadline);
                return new Pages() {
                    @Override
                    public ShardBatch next() {
                        return pages.next();
                    }

                    @Override
                    public void close() {
                        pages.close();
                    }
                };
            }
        };
    }
}
