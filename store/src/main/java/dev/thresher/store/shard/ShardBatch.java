package dev.thresher.store.shard;

/**
 * One partition's rows in the guest batch encoding.
 *
 * @param bytes the encoded batch
 * @param rowCount rows in it
 * @param readNanos time spent reading and encoding
 */
public record ShardBatch(byte[] bytes, int rowCount, long readNanos) {}
