/**
 * {@code ./thresher bench}: Thresher over pgwire against PostgreSQL's own GROUP BY (fanned out over the shard
 * databases, and on one database holding every row), an embedded three-member Hazelcast cluster (IMap
 * aggregation and Hazelcast SQL) and a plain Java loop, all in one process on the same rows. Closed- and
 * open-loop latency (HdrHistogram), throughput, Thresher's per-phase timers, and a regenerated
 * {@code docs/benchmarks.md}. Nothing depends on this module; see {@code bench/README.md}.
 */
package dev.thresher.bench;
