package dev.thresher.cellhost;

import dev.thresher.errors.ThresherException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;

/**
 * The row batches of one partition, handed to a guest one after another within one {@code run}
 * (guest ABI v2, {@code docs/guest-abi.md} section 4a). The host pulls the next batch only when the
 * guest has read the previous one, so a partition of any size goes through a bounded amount of memory.
 * Used by one thread.
 */
public interface RowBatchStream {

    /**
     * The next batch (row batch v1 encoding, at most {@code limits.rowsPerBatch} rows and
     * {@code limits.batchMaxBytes} bytes), or null when the partition has no more rows.
     *
     * @throws ThresherException when the next batch cannot be read: the run fails with it, even though its
     *     guest had started
     */
    byte[] next();

    /** A stream over batches already in memory. */
    static RowBatchStream of(byte[]... batches) {
        Deque<byte[]> left = new ArrayDeque<>(Arrays.asList(batches));
        return left::pollFirst;
    }
}
