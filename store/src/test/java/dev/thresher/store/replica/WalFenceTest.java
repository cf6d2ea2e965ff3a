package dev.thresher.store.replica;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.limits.Deadline;
import dev.thresher.store.TestPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
    void itsFingerprintLooksUpEachPartitionByKeyNotByScanningTheCatalog() throws Exception {
        // kills: joining pg_class with the partition tree, planned as a hash join over all of pg_class (0.1 ms of a
        // 0.15 ms statement in a fresh database, more as the catalog grows), on every read of a replica
        String url = TestPostgres.newDatabase();
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE t (a int, b text) PARTITION BY RANGE (a)");
            s.execute("CREATE TABLE t_1 PARTITION OF t FOR VALUES FROM (0) TO (10)");
            String plan = TestPostgres.genericPlan(s, WalFence.FINGERPRINT);
            assertThat(plan).as(plan).doesNotContain("Seq Scan on pg_class").contains("pg_class_oid_index");
        }
    }

    /** A read asked with {@code asked}, on another thread: it waits for statements out for up to a minute. */
    private static CompletableFuture<WalFence.Round> readLater(WalFence fence, long asked, Deadline deadline) {
        return CompletableFuture.supplyAsync(() -> fence.position(asked, Deadline.afterMillis(asked, 60_000), deadline, "{}"));
    }

    @Test
    void aReadTakesTheAnswerOfACoveringStatementInFlightAndSendsNoneOfItsOwn() throws Exception {
        // kills: a read sending a statement of its own while one sent after its start is still out
        String url = TestPostgres.newDatabase();
        try (WalFence fence = new WalFence(url, "postgres", null)) {
            long asked = System.nanoTime();
            CompletableFuture<WalFence.Round> out = fence.holdInFlight(asked + 1);
            Deadline deadline = Deadline.afterMillis(asked, 120_000);
            CompletableFuture<WalFence.Round> read = readLater(fence, asked, deadline);
            WalFence.Round answer = new WalFence.Round(asked + 1, 4242, "{}", "");
            out.complete(answer);
            assertThat(read.get(30, TimeUnit.SECONDS)).as("the statement in flight's answer").isSameAs(answer);
        }
    }

    @Test
    void readsArrivingWhileAnOlderStatementIsOutTakeAPositionReadAfterItNeverItsAnswer() throws Exception {
        // kills: a read taking the answer of a statement sent before it started (an older position than its start's)
        String url = TestPostgres.newDatabase();
        try (WalFence fence = new WalFence(url, "postgres", null)) {
            long before = System.nanoTime();
            CompletableFuture<WalFence.Round> out = fence.holdInFlight(before);
            long asked = System.nanoTime() + 1;
            Deadline deadline = Deadline.afterMillis(asked, 120_000);
            List<CompletableFuture<WalFence.Round>> reads = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                reads.add(readLater(fence, asked, deadline));
            }
            out.complete(new WalFence.Round(before, 1, "{}", ""));
            for (CompletableFuture<WalFence.Round> read : reads) {
                WalFence.Round r = read.get(30, TimeUnit.SECONDS);
                assertThat(r.position()).as("a position read after the older statement answered").isGreaterThan(1);
                assertThat(r.sentNanos() - asked).as("sent after the read started").isNotNegative();
            }
            WalFence.Round newest = fence.position(asked, deadline, "{}");
            assertThat(newest.position()).as("the older answer never stands over a newer").isGreaterThan(1);
        }
    }

    @Test
    void aStatementThatDoesNotAnswerByTheReadsBoundIsNotWaitedForLonger() throws Exception {
        // kills: the wait for a statement in flight bounded by the deadline (a statement slow to answer held every read
        // of the shard behind it up to its deadline) instead of the caller's bound
        String url = TestPostgres.newDatabase();
        try (WalFence fence = new WalFence(url, "postgres", null)) {
            long asked = System.nanoTime();
            CompletableFuture<WalFence.Round> covering = fence.holdInFlight(asked + 1);
            Deadline deadline = Deadline.afterMillis(asked, 120_000);
            WalFence.Round r = fence.position(asked, Deadline.afterMillis(asked, 25), deadline, "{}");
            assertThat(r.position()).as("its own statement, on another connection, past its bound").isPositive();
            assertThat(deadline.passed()).isFalse();
            assertThat(covering).isNotDone();

            long later = System.nanoTime() + 1;
            CompletableFuture<WalFence.Round> older = fence.holdInFlight(later - 1);
            WalFence.Round own = fence.position(later, Deadline.afterMillis(later, 25), deadline, "{}");
            assertThat(own.sentNanos() - later).as("a statement out that cannot cover it, stuck: its own").isNotNegative();
            assertThat(older).isNotDone();
            covering.completeExceptionally(new ReplicaUnavailable("gone"));
            older.completeExceptionally(new ReplicaUnavailable("gone"));
        }
    }

    @Test
    void withEveryConnectionOutAReadIsRefusedAtItsBoundNotItsDeadline() throws Exception {
        String url = TestPostgres.newDatabase();
        try (WalFence fence = new WalFence(url, "postgres", null)) {
            long asked = System.nanoTime();
            List<CompletableFuture<WalFence.Round>> out = new ArrayList<>();
            for (int i = 0; i < WalFence.CONNECTIONS; i++) {
                out.add(fence.holdInFlight(asked - 1_000_000)); // sent before the read started: none covers it
            }
            Deadline deadline = Deadline.afterMillis(asked, 120_000);
            assertThatThrownBy(() -> fence.position(asked, Deadline.afterMillis(asked, 25), deadline, "{}"))
                    .isInstanceOf(ReplicaUnavailable.class).hasMessageContaining("did not answer in time");
            assertThat(deadline.passed()).as("refused at its own bound, long before the deadline").isFalse();
            // the newest statement out fails, and its connection is free again: the waiting read sends its own on it
            CompletableFuture<WalFence.Round> read = readLater(fence, System.nanoTime(), deadline);
            out.get(out.size() - 1).completeExceptionally(new ReplicaUnavailable("gone"));
            assertThat(read.get(30, TimeUnit.SECONDS).position()).isPositive();
            out.forEach(f -> f.completeExceptionally(new ReplicaUnavailable("gone")));
        }
    }

    @Test
    void aServerThatAcceptsAndNeverAnswersHoldsAReadOnlyToItsDeadline() throws Exception {
        // kills: the fence's login or its statement's wait unbounded (a frozen server held the read, and its thread,
        // for good)
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            List<java.net.Socket> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();
            Thread acceptor = Thread.ofPlatform().daemon().start(() -> {
                try {
                    while (true) {
                        accepted.add(silent.accept()); // and never a byte back
                    }
                } catch (java.io.IOException e) {
                    // closed
                }
            });
            String url = "jdbc:postgresql://127.0.0.1:" + silent.getLocalPort() + "/nothing";
            try (WalFence fence = new WalFence(url, "postgres", null)) {
                long asked = System.nanoTime();
                Deadline deadline = Deadline.afterMillis(asked, 300);
                CompletableFuture<Object> read = CompletableFuture.supplyAsync(() -> {
                    try {
                        return fence.position(asked, deadline, "{}");
                    } catch (ReplicaUnavailable e) {
                        return e;
                    }
                });
                assertThat(read.get(30, TimeUnit.SECONDS)).as("refused, not held")
                        .isInstanceOf(ReplicaUnavailable.class);
            } finally {
                silent.close();
                acceptor.join(TimeUnit.SECONDS.toMillis(10));
                for (java.net.Socket s : accepted) {
                    s.close();
                }
            }
        }
    }
}
