package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code thresher dev} killed with {@code kill -9} leaves its embedded PostgreSQL running, orphaned, and its data
 * directory behind; the next {@code thresher dev} in the same directory stops that PostgreSQL, says so in one line
 * without a stack trace, recreates the databases and answers calls.
 */
class DevRecoveryIT {
    @Test
    void devStartsAgainAfterKill9StoppingTheOrphanedPostgres() throws Exception {
        Path root = Files.createTempDirectory("thresher-dev-recovery-");
        Path dir = root.resolve("dev");
        int port = DevLaunch.freePortRun();
        long orphan = -1;
        Process first = DevLaunch.start(dir, port, root.resolve("first.log"));
        Process second = null;
        try {
            DevLaunch.awaitUp(first, dir, root.resolve("first.log"));
            orphan = DevLaunch.postmasterPid(dir).orElseThrow();
            assertThat(DevLaunch.alive(orphan)).as("the first dev cluster's PostgreSQL").isTrue();

            first.destroyForcibly();
            assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(DevLaunch.alive(orphan)).as("PostgreSQL outlives a dev process killed with kill -9").isTrue();

            Path log = root.resolve("second.log");
            second = DevLaunch.start(dir, port, log);
            JsonNode endpoints = DevLaunch.awaitUp(second, dir, log);
            String out = Files.readString(log);
            // one line per PostgreSQL: the shard databases' and (leader replicas on) the control database's
            List<String> recovered = out.lines().filter(l -> l.contains("did not stop cleanly")).toList();
            assertThat(recovered).hasSize(2).allSatisfy(l -> assertThat(l).contains("still running", "recreating"));
            String orphanLine = "stopped its shard databases' PostgreSQL still running (pid " + orphan;
            assertThat(recovered).filteredOn(l -> l.contains(orphanLine)).hasSize(1);
            assertThat(recovered).filteredOn(l -> l.contains("stopped its control database's PostgreSQL")).hasSize(1);
            assertThat(out).as("recovered without a stack trace").doesNotContain("\tat ").doesNotContain("initdb");
            assertThat(DevLaunch.awaitGone(orphan, 10)).as("the orphaned PostgreSQL is gone").isTrue();
            long orphanPid = orphan;
            assertThat(DevLaunch.postmasterPid(dir)).as("a new PostgreSQL").hasValueSatisfying(
                    pid -> assertThat(pid).isNotEqualTo(orphanPid));
            assertThat(endpoints.get("pgwire").get(0).asText()).isEqualTo("127.0.0.1:" + port);

            JsonNode result = DevLaunch.call("127.0.0.1:" + port);
            assertThat(result.size()).isEqualTo(8);
            assertThat(DevLaunch.rows(result)).isEqualTo(5000);
        } finally {
            first.destroyForcibly();
            if (second != null) {
                DevLaunch.stop(second);
            }
            if (orphan > 0 && DevLaunch.alive(orphan)) {
                ProcessHandle.of(orphan).ifPresent(ProcessHandle::destroyForcibly); // the code under test did not
            }
        }
        assertThat(second.exitValue()).isIn(0, 143);
    }
}
