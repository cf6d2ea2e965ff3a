/** A node's local replica: reads one partition's rows straight into the guest batch encoding. */
package dev.thresher.store.shard;
