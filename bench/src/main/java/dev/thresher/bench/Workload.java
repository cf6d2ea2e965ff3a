package dev.thresher.bench;

import java.util.Arrays;
import java.util.Locale;

/** The workloads, by their {@code --workloads} names, in the order they run. */
enum Workload {
    /** The sample component under a binding whose selector matches no row: the fixed cost of a call over every partition. */
    NEAR_EMPTY("near-empty"),
    /** The sample binding: revenue and orders per region. */
    GROUPBY("groupby"),
    /** A guest whose partials fill the caps: 64 emits per shard run, 1,024 merged entries per call. */
    CAPS("caps"),
    /** The sample group-by at each of {@code --clients} closed-loop clients. */
    THROUGHPUT("throughput"),
    /** The sample group-by over one million rows (partitions of many batches each, read as a stream). */
    MILLION("million"),
    /** One million rows loaded: {@code thresher load}'s loader, COPY FROM STDIN through pgwire, and PostgreSQL's own COPY. */
    LOAD("load");

    static final int MILLION_ROWS = 1_000_000;

    final String id;

    Workload(String id) {
        this.id = id;
    }

    static Workload of(String id) {
        String s = id.trim().toLowerCase(Locale.ROOT);
        return Arrays.stream(values()).filter(w -> w.id.equals(s)).findFirst().orElseThrow(() ->
                new IllegalArgumentException("unknown workload '" + id + "'; the workloads are "
                        + String.join(", ", Arrays.stream(values()).map(w -> w.id).toList())));
    }
}
