/**
 * {@code ./thresher bench}: Thresher over pgwire, with its leader replicas and without ({@code thresher-sql}, a
 * dev cluster of its own with {@code limits.replicaMemoryBytes=0}), against PostgreSQL's own GROUP BY (fanned
 * out over the shard databases, and on one database holding every row), an embedded three-member Hazelcast
 * cluster (IMap aggregation and Hazelcast SQL) and a plain Java loop, all in one process on the same rows.
 * Closed- and open-loop latency (HdrHistogram), throughput, Thresher's per-phase timers and where its partition
 * reads were served (memory or SQL), and a regenerated {@code docs/benchmarks.md}. Nothing depends on this
 * module; see {@code bench/README.md}.
 */
package dev.thresher.bench;
