package dev.thresher.topology;

import java.util.Objects;

/**
 * A slot range of one table on one shard database.
 *
 * @param id the partition's cluster-wide id
 * @param tenant the owning tenant
 * @param table the table's name
 * @param slotLo first slot, inclusive
 * @param slotHi last slot, inclusive
 * @param shardId the shard database holding the rows
 * @param epoch bumped by every change to this partition (move, split, leadership)
 */
public record Partition(int id, String tenant, String table, int slotLo, int slotHi, int shardId, long epoch) {
    public Partition {
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(table, "table");
        if (slotLo < 0 || slotHi >= Slots.COUNT || slotLo > slotHi) {
            throw new IllegalArgumentException("bad slot range [" + slotLo + ", " + slotHi + "] of partition " + id);
        }
    }

    public boolean contains(int slot) {
        return slot >= slotLo && slot <= slotHi;
    }
}
