/** Plans a call over the topology, dispatches shard runs, validates the slots, reduces and publishes; and runs shards sent here. */
package dev.thresher.coordinator;
