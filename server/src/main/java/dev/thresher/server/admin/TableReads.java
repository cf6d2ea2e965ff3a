package dev.thresher.server.admin;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.TableService.PartitionBatches;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardPages;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A table's partitions read as a leader's shard runs read them for a selector (its columns and filter, one read-only
 * snapshot per partition), through the admin's shard pools: the rows {@code thresher component test --table} runs a
 * component over. One answer carries at most {@link #MAX_BYTES} bytes of batches.
 */
public final class TableReads {
    /** The most bytes of batches one read answers: the rows a component test holds in memory at once. */
    public static final long MAX_BYTES = 64L << 20;

    private final TableAdmin admin;
    private final Limits limits;

    public TableReads(TableAdmin admin, Limits limits) {
        this.admin = admin;
        this.limits = limits;
    }

    /**
     * Every partition of {@code table}; a partition that cannot be read is answered with its failure, so the test
     * shows what a call would meet.
     *
     * @throws ThresherException {@link ErrorCode#UNKNOWN_TABLE}, {@link ErrorCode#INVALID_SELECTOR},
     *     {@link ErrorCode#RESULT_TOO_LARGE} past {@link #MAX_BYTES}
     */
    public List<PartitionBatches> read(String tenant, String table, String selectorSql, int abiVersion) {
        if (abiVersion != 1 && abiVersion != 2) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "guest ABI " + abiVersion + " is not 1 or 2");
        }
        Selector selector = Selector.parse(selectorSql);
        Selector reading = Selector.parse("SELECT " + String.join(", ", selector.columns()) + " FROM " + table
                + selector.where().map(w -> " WHERE " + w).orElse(""));
        List<Partition> partitions = admin.control().readTopology().partitionsOf(tenant, table);
        if (partitions.isEmpty()) {
            throw new ThresherException(ErrorCode.UNKNOWN_TABLE, "there is no table " + dev.thresher.errors.Quoted.of(table)
                    + " on this cluster");
        }
        Map<Integer, String> urls = admin.shardUrls();
        Deadline deadline = Deadline.afterMillis(System.nanoTime(), limits.callDeadlineMs());
        List<PartitionBatches> out = new ArrayList<>();
        long bytes = 0;
        for (Partition p : partitions) {
            ShardReader reader = new ShardReader(admin.shardPool(urls.get(p.shardId())));
            List<byte[]> batches = new ArrayList<>();
            int rows = 0;
            try {
                if (abiVersion == 1) {
                    ShardBatch b = reader.read(p, reading, limits.rowsPerBatch(), limits.batchMaxBytes(), deadline);
                    batches.add(b.bytes());
                    rows = b.rowCount();
                    bytes = counted(bytes, b.bytes().length, table);
                } else {
                    try (ShardPages pages = reader.openPages(p, reading, limits.rowsPerBatch(), limits.batchMaxBytes(),
                            deadline)) {
                        for (ShardBatch b = pages.next(); b != null; b = pages.next()) {
                            bytes = counted(bytes, b.bytes().length, table);
                            batches.add(b.bytes());
                            rows += b.rowCount();
                        }
                    }
                }
                out.add(new PartitionBatches(p.id(), rows, batches, null));
            } catch (ThresherException e) {
                if (e.code() == ErrorCode.RESULT_TOO_LARGE) {
                    throw e;
                }
                out.add(new PartitionBatches(p.id(), 0, List.of(), e));
            }
        }
        return out;
    }

    private static long counted(long bytes, int more, String table) {
        if (bytes + more > MAX_BYTES) {
            throw new ThresherException(ErrorCode.RESULT_TOO_LARGE, "the rows of " + table + " the selector reads are over "
                    + (MAX_BYTES >> 20) + " MiB, more than a component test holds; narrow the selector's filter, or test"
                    + " with --csv");
        }
        return bytes + more;
    }
}
