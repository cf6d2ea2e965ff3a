package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.server.dev.DevCluster;
import dev.thresher.tests.FaultCheckers.Check;
import dev.thresher.tests.FaultCheckers.FaultRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The control database as production runs it, highly available: a primary with a synchronous streaming standby, the
 * nodes reaching both through one multi-host URL ({@code targetServerType=primary}). Under calls the primary stops as a
 * crash would stop it and the standby is promoted; the nodes follow it, and the fault suite's checkers read the
 * promoted database: no wrong result, no acknowledged result lost (synchronous replication), every invocation ends,
 * calls succeed again soon after the promotion (docs/reliability.md, "The control database fails over").
 */
class ControlFailoverIT {
    private static final long DEADLINE_MS = 4_000;
    private static final int CLIENTS = 4;

    @Test
    void theNodesFollowAPromotedStandbyOfTheControlDatabaseAndNoAcknowledgedResultIsLost() throws Exception {
        Path dir = Files.createTempDirectory("thresher-control-failover-");
        try (DevCluster cluster = DevCluster.start(DevCluster.Options.defaults(dir).withPgwirePort(0).withRows(20_000)
                .withControlStandby())) {
            assertThat(cluster.controlUrl()).contains(",127.0.0.1:", "targetServerType=primary");
            Map<String, double[]> reference = Cluster.sqlReference(cluster);
            Timestamp windowStart = FaultCheckers.controlNow(cluster, 30_000);
            FaultRun run;
            long promotedAfterMs;
            try (FaultCalls calls = new FaultCalls(p -> {
                p.setProperty("user", DevCluster.USER);
                p.setProperty("password", DevCluster.PASSWORD);
                return DriverManager.getConnection("jdbc:postgresql://" + cluster.nodes().get(0).pgwireAddress()
                        + "/thresher", p);
            }, CLIENTS, DEADLINE_MS, reference)) {
                boolean flowing = calls.awaitSuccesses(2 * CLIENTS, 60_000);
                long inject = System.nanoTime();
                cluster.failOverControl();
                long heal = System.nanoTime();
                promotedAfterMs = TimeUnit.NANOSECONDS.toMillis(heal - inject);
                calls.awaitSuccessesSince(heal, CLIENTS, FaultCheckers.RECOVERY_BOUND_MS + DEADLINE_MS + 1_000);
                Thread.sleep(Math.max(0, 15_000 - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - heal)));
                List<FaultCalls.Call> done = calls.stop();
                run = new FaultRun("control-failover", "the control database's primary stopped as a crash would (SIGQUIT:"
                        + " an immediate shutdown), its synchronous standby promoted (pg_promote)", DEADLINE_MS,
                        promotedAfterMs, 0, done, calls.connectFailures(), inject, heal, windowStart, flowing, false, "");
            }
            try (Connection c = FaultCheckers.control(cluster); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery(), current_setting('port')")) {
                rs.next();
                assertThat(rs.getBoolean(1)).as("the checkers read the promoted standby, now a primary").isFalse();
            }
            List<Check> checks = FaultCheckers.check(run, cluster, reference);
            String summary = "control-failover: " + run.calls().size() + " calls, " + run.successes() + " succeeded, "
                    + "failures " + run.failures() + ", max answer " + run.maxLatencyMs() + " ms, primary stopped and"
                    + " standby promoted in " + promotedAfterMs + " ms, first success " + run.recoveryMs()
                    + " ms after the promotion";
            StringBuilder b = new StringBuilder(summary);
            checks.forEach(c -> b.append("\n  ").append(c.number()).append(' ').append(c.verdict()).append(' ')
                    .append(c.name()).append(": ").append(c.detail()));
            System.out.println(b);
            assertThat(checks.stream().filter(c -> !c.passed()).map(c -> c.number() + ". " + c.name() + ": " + c.detail()))
                    .as(b.toString()).isEmpty();
            // the nodes write to the promoted database: a call after it is journaled there
            assertThat(run.successes()).isPositive();
        }
    }
}
