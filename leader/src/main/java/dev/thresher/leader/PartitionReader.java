package dev.thresher.leader;

import dev.thresher.bindings.Selector;
import dev.thresher.limits.Deadline;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;

/** Reads one partition of the local shard database into a guest batch, bounded in rows and bytes. */
public interface PartitionReader {

    /**
     * @throws RuntimeException a {@code ThresherException} as {@link ShardReader#read} throws it
     *     ({@code BATCH_TOO_MANY_ROWS}, {@code BATCH_TOO_LARGE}, {@code DEADLINE_EXCEEDED}, ...)
     */
    ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline);

    /** The node's shard database. */
    static PartitionReader of(ShardReader reader) {
        return reader::read;
    }
}
