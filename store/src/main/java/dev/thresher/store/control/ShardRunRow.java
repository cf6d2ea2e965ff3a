package dev.thresher.store.control;

/**
 * A published shard slot as the coordinator reads it before reduce.
 *
 * @param leaseLive whether the slot's lease had not ended when read (by the database clock)
 * @param currentEpoch the partition's epoch when read, to tell a slot produced against a superseded topology
 */
public record ShardRunRow(int runIndex, int partitionId, long epoch, String wireId, String hostId, int rowCount,
                      int emitCount, int entryCount, byte[] partials, boolean leaseLive, long currentEpoch) {}
