package dev.thresher.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.coordinator.CallPhases;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/** The leader replicas' figures in the report: where reads were served, the targets against the native fan-out, the section. */
class ReportTest {
    private static final int PARTITIONS = 16;

    @Test
    void readsNotServedFromMemoryAreCountedThroughSqlWithTheirReason() {
        Report r = report();
        assertThat(r.readsCell(thresher("groupby", 1, 5.0, 10, new ThresherPeer.ReplicaReads(true, 150, Map.of("lagging", 10L)))))
                .isEqualTo("150 from memory, 10 through SQL (10 lagging)");
        // reads the replicas were never offered (none counted them) are shown as such
        assertThat(r.readsCell(thresher("million", 1, 400, 2, new ThresherPeer.ReplicaReads(true, 0, Map.of()))))
                .isEqualTo("0 from memory, 32 through SQL (32 uncounted)");
        assertThat(r.readsCell(result("groupby", ThresherPeer.SQL_NAME, 1, 6.0, 10, new ThresherPeer.ReplicaReads(false, 0, Map.of()))))
                .isEqualTo("0 from memory, 160 through SQL (160 replicas off)");
        assertThat(r.readsCell(thresher("groupby", 1, 5.0, 10, new ThresherPeer.ReplicaReads(true, 160, Map.of()))))
                .isEqualTo("160 from memory, 0 through SQL");
        // reads of calls at the measurement's edges counted by the replicas: through SQL is never less than counted
        assertThat(r.readsCell(thresher("million", 1, 25, 10, new ThresherPeer.ReplicaReads(true, 159, Map.of("lagging", 24L)))))
                .isEqualTo("159 from memory, 24 through SQL (24 lagging)");
        assertThat(r.readsCell(result("groupby", "pg-fanout", 1, 5.0, 0, null))).isEqualTo("—");
    }

    @Test
    void replicaTargetsHoldEachThresherPeerAgainstTheNativeFanOut() {
        Report r = report();
        ThresherPeer.ReplicaReads all = new ThresherPeer.ReplicaReads(true, 160, Map.of());
        ThresherPeer.ReplicaReads off = new ThresherPeer.ReplicaReads(false, 0, Map.of());
        r.results.add(thresher("groupby", 1, 4.0, 10, all));
        r.results.add(result("groupby", ThresherPeer.SQL_NAME, 1, 12.0, 10, off));
        r.results.add(result("groupby", "pg-fanout", 1, 5.0, 0, null));
        r.results.add(thresher("throughput", 8, 20.0, 10, all));
        r.results.add(result("throughput", "pg-fanout", 8, 10.0, 0, null));

        List<Report.Target> t = r.replicaTargets();
        assertThat(t).extracting(Report.Target::text).containsExactly(
                "`thresher` group-by (50,000 rows, 16 partitions) p50 ≤ 1.0 × native fan-out p50 (closed loop, 1 client)",
                "`thresher` million (1,000,000 rows, 16 partitions) p50 ≤ 1.0 × native fan-out p50 (closed loop, 1 client)",
                "`thresher` throughput at 8 clients ≥ 1.0 × native fan-out's queries/s",
                "`thresher-sql` group-by (50,000 rows, 16 partitions) p50 ≤ 1.0 × native fan-out p50 (closed loop, 1 client)",
                "`thresher-sql` million (1,000,000 rows, 16 partitions) p50 ≤ 1.0 × native fan-out p50 (closed loop, 1 client)",
                "`thresher-sql` throughput at 8 clients ≥ 1.0 × native fan-out's queries/s");
        assertThat(t).extracting(Report.Target::met).containsExactly(true, null, false, false, null, null);
        assertThat(t.get(0).measured()).isEqualTo("4.00 ms vs 5.00 ms = 0.80 ×; reads 160 from memory, 0 through SQL");
        assertThat(t.get(3).measured()).isEqualTo("12.0 ms vs 5.00 ms = 2.40 ×; reads 0 from memory, 160 through SQL (160 replicas off)");
        // a closed loop of 8 clients each taking 20 ms answers 400 calls/s against pg-fanout's 800
        assertThat(t.get(2).measured()).startsWith("400 vs 800 calls/s = 0.50 ×");
        assertThat(r.targets()).containsAll(t);

        String md = r.markdown();
        assertThat(md).contains("## Leader replicas: in memory against read-through-SQL",
                "| groupby | p50 ms, 1 client | 4.00 | 12.0 | 5.00 | 0.80 | 2.40 |",
                "| throughput | calls/s, 8 clients | 400 | — | 800 | 0.50 | — |",
                "| groupby | `thresher-sql` | closed | 1 | 10 | 160 | 0 from memory, 160 through SQL (160 replicas off) |",
                "| target (leader replicas) | measured | |");
    }

    private static Report report() {
        Report r = new Report();
        r.command = "./thresher bench";
        r.started = Instant.parse("2026-01-01T00:00:00Z");
        r.rows = 50_000;
        r.partitions = PARTITIONS;
        r.shards = 3;
        r.clients = List.of(1, 8);
        r.wasmEngine = "test";
        r.peers.put(ThresherPeer.NAME, "with replicas");
        r.peers.put(ThresherPeer.SQL_NAME, "without");
        r.peers.put("pg-fanout", "native");
        return r;
    }

    private static Result thresher(String workload, int clients, double ms, long calls, ThresherPeer.ReplicaReads reads) {
        return result(workload, ThresherPeer.NAME, clients, ms, calls, reads);
    }

    /** A closed-loop measurement of {@code clients} clients, each call taking {@code ms}, over one second. */
    private static Result result(String workload, String peer, int clients, double ms, long calls, ThresherPeer.ReplicaReads reads) {
        Histogram h = new Histogram(60_000_000_000L, 3);
        long n = Math.round(clients * 1000 / ms);
        h.recordValueWithCount(Math.round(ms * 1e6), n);
        CallPhases.Snapshot phases = reads == null ? null : new CallPhases.Snapshot(calls, new java.util.EnumMap<>(CallPhases.Phase.class));
        return new Result(workload, peer, Result.Mode.CLOSED, clients, 0, n, 0, 0, 1.0, h, null, phases, reads, 0);
    }
}
