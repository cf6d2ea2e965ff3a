package dev.thresher.store.replica;

import dev.thresher.topology.Partition;

/** One partition in memory, and what of the replica budget its rows hold ({@link #account}). */
final class HeldPartition {
    final Partition partition;
    final TableReplica table;
    final PartitionRows rows;
    volatile boolean evicted;
    volatile String reason = "";
    long accounted;
    boolean touched;

    HeldPartition(Partition partition, TableReplica table) {
        this.partition = partition;
        this.table = table;
        this.rows = table.ineligible == null ? new PartitionRows(table.columns, table.identity) : null;
    }

    void evict(String why) {
        evicted = true;
        reason = why;
        if (rows != null) {
            rows.clear();
        }
    }

    /** Reserves what the rows hold now; one that does not fit is dropped from memory. */
    void account(ReplicaBudget budget) {
        if (evicted) {
            return;
        }
        long bytes = rows.bytes();
        if (budget.tryReserve(bytes - accounted)) {
            accounted = bytes;
        } else {
            budget.release(accounted);
            accounted = 0;
            evict("over limits.replicaMemoryBytes");
        }
    }
}
