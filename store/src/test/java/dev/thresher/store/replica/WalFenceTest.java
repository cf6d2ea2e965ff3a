package dev.thresher.store.replica;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.limits.Deadline;
import dev.thresher.store.TestPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WalFenceTest {
    @Test
    void itsStatementIsPlannedOnceHoweverOftenItRuns() throws Exception {
        String url = TestPostgres.newDatabase();
        long oid;
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
            s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            s.execute("CREATE TABLE t (a int, b text) PARTITION BY RANGE (a)");
            s.execute("CREATE TABLE t_1 PARTITION OF t FOR VALUES FROM (0) TO (10)");
            try (ResultSet rs = s.executeQuery("SELECT 't'::regclass::oid")) {
                rs.next();
                oid = rs.getLong(1);
            }
        }
        int runs = 20;
        String first = null;
        try (WalFence fence = new WalFence(url, "postgres", null)) {
            for (int i = 0; i < runs; i++) {
                WalFence.Round r = fence.position(System.nanoTime(), Deadline.afterMillis(System.nanoTime(), 10_000),
                        "{" + oid + "}");
                assertThat(r.position()).isPositive();
                assertThat(r.fingerprint()).startsWith(oid + "=");
                first = first == null ? r.fingerprint() : first;
                assertThat(r.fingerprint()).as("the same tables, unchanged").isEqualTo(first);
            }
        }
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("""
                     SELECT coalesce(sum(calls), 0), coalesce(sum(plans), 0) FROM pg_stat_statements s
                     JOIN pg_database d ON d.oid = s.dbid
                     WHERE d.datname = current_database() AND s.query LIKE 'WITH p AS MATERIALIZED%'""")) {
            rs.next();
            assertThat(rs.getLong(1)).as("runs of the fence's statement").isEqualTo(runs);
            // Planned anew on every run, the catalog joins cost more to plan than to run (about 0.5 against 0.3 ms).
            assertThat(rs.getLong(2)).as("plans of the fence's statement").isLessThanOrEqualTo(1);
        }
    }

    @Test
    void aReadWaitsForAnotherReadsStatementOnlyUntilItsOwnBoundNotItsDeadline() throws Exception {
        // kills: the wait for a statement in flight bounded by the deadline (a slow statement held every read of the
        // shard behind it up to its deadline) instead of the caller's bound
        String url = TestPostgres.newDatabase();
        try (WalFence fence = new WalFence(url, "postgres", null)) {
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Thread inFlight = Thread.ofPlatform().start(() -> {
                fence.lock.lock(); // as while another read's statement is out
                try {
                    held.countDown();
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    fence.lock.unlock();
                }
            });
            assertThat(held.await(30, TimeUnit.SECONDS)).isTrue();
            long asked = System.nanoTime();
            Deadline deadline = Deadline.afterMillis(asked, 120_000);
            assertThatThrownBy(() -> fence.position(asked, Deadline.afterMillis(asked, 25), deadline, "{}"))
                    .isInstanceOf(ReplicaUnavailable.class).hasMessageContaining("did not answer in time");
            assertThat(deadline.passed()).as("refused at its own bound, long before the deadline").isFalse();
            release.countDown();
            inFlight.join(TimeUnit.SECONDS.toMillis(30));
            WalFence.Round r = fence.position(System.nanoTime(), Deadline.afterMillis(System.nanoTime(), 25), deadline, "{}");
            assertThat(r.position()).as("with nothing in flight, its own statement, bounded by the deadline").isPositive();
        }
    }
}
