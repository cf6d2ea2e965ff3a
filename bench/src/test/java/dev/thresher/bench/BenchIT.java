package dev.thresher.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the bench for real on a tiny configuration — the dev clusters (with leader replicas, and without for
 * {@code thresher-sql}), PostgreSQL, the Hazelcast cluster and every peer, two workloads, one second per
 * measurement — and reads the report it writes.
 */
class BenchIT {
    private static final List<String> WORKLOADS = List.of("near-empty", "groupby");

    @Test
    void aQuickRunChecksEveryPeerAndMeasuresEach(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("benchmarks.md");
        int code = BenchMain.run("--quick", "--duration", "1s", "--warmup", "0.3s", "--prime", "0.5s", "--open-loop-rate", "0",
                "--workloads", String.join(",", WORKLOADS), "--out", out.toString(), "--work-dir", dir.resolve("work").toString());

        assertThat(code).as("exit code (0: every answer agreed)").isZero();
        String md = Files.readString(out);
        List<String> lines = Arrays.asList(md.split("\n"));
        assertThat(md).contains("## Answers checked", "## Targets", "### The row-read floor", "## Thresher: where a call's time goes", "fsync = ",
                "synchronous_commit = ", "## Leader replicas: in memory against read-through-SQL");
        // where the partition reads were served: thresher from its leader replicas, thresher-sql (replicas off) through SQL
        List<String> replicas = section(lines, "## Leader replicas: in memory against read-through-SQL");
        String withReplicas = replicas.stream().filter(l -> l.startsWith("| groupby | `thresher` | closed | 1 |")).findFirst()
                .orElseThrow(() -> new AssertionError("no reads row for thresher:\n" + md));
        assertThat(withReplicas).as("thresher's group-by reads").matches(".*\\| [1-9][0-9,]* from memory, .*");
        String withoutReplicas = replicas.stream().filter(l -> l.startsWith("| groupby | `thresher-sql` | closed | 1 |")).findFirst()
                .orElseThrow(() -> new AssertionError("no reads row for thresher-sql:\n" + md));
        assertThat(withoutReplicas).as("thresher-sql's group-by reads").contains("| 0 from memory, ").contains(" replicas off)");
        for (String workload : WORKLOADS) {
            for (String peer : Bench.PEERS) {
                assertThat(lines).as("the check of %s on %s", peer, workload)
                        .anyMatch(l -> l.startsWith("| " + workload + " | `" + peer + "` |") && l.endsWith("| yes |"));
                String row = section(lines, "## " + workload).stream()
                        .filter(l -> l.startsWith("| `" + peer + "` | closed | 1 |")).findFirst()
                        .orElseThrow(() -> new AssertionError("no row for " + peer + " in " + workload + ":\n" + md));
                String[] cells = row.split("\\|");
                assertThat(Double.parseDouble(cells[5].trim().replace(",", ""))).as("calls/s of %s on %s", peer, workload)
                        .isPositive();
                assertThat(cells[11].trim()).as("errors of %s on %s", peer, workload).isEqualTo("0");
            }
        }
    }

    private static List<String> section(List<String> lines, String heading) {
        int from = lines.indexOf(heading);
        assertThat(from).as("section %s", heading).isNotNegative();
        int to = from + 1;
        while (to < lines.size() && !lines.get(to).startsWith("## ")) {
            to++;
        }
        return lines.subList(from, to);
    }
}
