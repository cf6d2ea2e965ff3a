package dev.thresher.leader;

import dev.thresher.bindings.Selector;
import dev.thresher.limits.Deadline;
import dev.thresher.store.replica.ShardReplica;
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
     * The partition as one batch, at least as fresh as a query issued at {@code freshAsOfNanos} (this node's
     * {@code System.nanoTime()} when the shard run started): a reader serving from a replica waits until the
     * replica has applied everything the shard database had committed by then, or reads through SQL. A reader
     * that always reads through SQL is that fresh already.
     */
    default ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline,
                            long freshAsOfNanos) {
        return read(partition, selector, maxRows, maxBytes, deadline);
    }

    /**
     * The partition as a sequence of batches from one snapshot (guest ABI v2); the caller closes it.
     *
     * @throws RuntimeException a {@code ThresherException} as {@link ShardReader#openPages} throws it
     */
    Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline);

    /**
     * The partition as a sequence of batches, at least as fresh as a query issued at {@code freshAsOfNanos} (as
     * {@link #read(Partition, Selector, int, int, Deadline, long)}).
     */
    default Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline,
                       long freshAsOfNanos) {
        return open(partition, selector, maxRows, maxBytes, deadline);
    }

    /**
     * Gets ready for reads of {@code partition}'s shard as fresh as {@code freshAsOfNanos}, which follow shortly: a
     * reader serving from a replica reads the shard database's WAL position now and has its stream catch up while
     * the caller does other work. Blocks at most for that position's statement; never fails. Does nothing by
     * default.
     */
    default void prepare(Partition partition, long freshAsOfNanos, Deadline deadline) {
    }

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
        return of(partition -> reader);
    }

    /**
     * The shard databases a node is a candidate for, by id: a partition is read from its own shard; one
     * on a shard the node does not read is a stale target (nothing ran).
     */
    static PartitionReader of(java.util.Map<Integer, ShardReader> byShard) {
        java.util.Map<Integer, ShardReader> readers = java.util.Map.copyOf(byShard);
        return of(partition -> {
            ShardReader r = readers.get(partition.shardId());
            if (r == null) {
                throw new dev.thresher.errors.ThresherException(dev.thresher.errors.ErrorCode.TARGET_STALE,
                        "partition " + partition.id() + " is on shard " + partition.shardId()
                                + ", which this node does not read (it reads " + new java.util.TreeSet<>(readers.keySet()) + ")");
            }
            return r;
        });
    }

    /**
     * Reads from the shard's leader replica when it can serve the read as fresh as asked, through {@code sql}
     * otherwise (docs/architecture.md, "Leader replicas"), paged reads (guest ABI v2) included.
     */
    static PartitionReader withReplicas(PartitionReader sql, java.util.Map<Integer, ShardReplica> replicas) {
        if (replicas.isEmpty()) {
            return sql;
        }
        java.util.Map<Integer, ShardReplica> byShard = java.util.Map.copyOf(replicas);
        return new PartitionReader() {
            @Override
            public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
                return read(partition, selector, maxRows, maxBytes, deadline, System.nanoTime());
            }

            @Override
            public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline,
                                   long freshAsOfNanos) {
                return served(partition, r -> r.read(partition, selector, maxRows, maxBytes, deadline, freshAsOfNanos),
                        () -> sql.read(partition, selector, maxRows, maxBytes, deadline, freshAsOfNanos));
            }

            @Override
            public void prepare(Partition partition, long freshAsOfNanos, Deadline deadline) {
                ShardReplica replica = byShard.get(partition.shardId());
                if (replica != null) {
                    replica.prepare(freshAsOfNanos, deadline);
                }
            }

            @Override
            public Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
                return open(partition, selector, maxRows, maxBytes, deadline, System.nanoTime());
            }

            @Override
            public Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline,
                              long freshAsOfNanos) {
                return served(partition, r -> {
                    java.util.List<ShardBatch> pages = r.pages(partition, selector, maxRows, maxBytes, deadline, freshAsOfNanos);
                    return pages == null ? null : inMemory(pages);
                }, () -> sql.open(partition, selector, maxRows, maxBytes, deadline, freshAsOfNanos));
            }

            /** What the partition's replica serves, when it has one and serves the read; else the SQL read. */
            private <T> T served(Partition partition, java.util.function.Function<ShardReplica, T> fromMemory,
                                 java.util.function.Supplier<T> throughSql) {
                ShardReplica replica = byShard.get(partition.shardId());
                T served = replica == null ? null : fromMemory.apply(replica);
                return served != null ? served : throughSql.get();
            }

            private static Pages inMemory(java.util.List<ShardBatch> pages) {
                java.util.Iterator<ShardBatch> next = pages.iterator();
                return new Pages() {
                    @Override
                    public ShardBatch next() {
                        return next.hasNext() ? next.next() : null;
                    }

                    @Override
                    public void close() {
                    }
                };
            }
        };
    }

    private static PartitionReader of(java.util.function.Function<Partition, ShardReader> readerOf) {
        return new PartitionReader() {
            @Override
            public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
                return readerOf.apply(partition).read(partition, selector, maxRows, maxBytes, deadline);
            }

            @Override
            public Pages open(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
                ShardPages pages = readerOf.apply(partition).openPages(partition, selector, maxRows, maxBytes, deadline);
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
