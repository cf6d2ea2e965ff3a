package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Eight clients call {@code revenue_by_region} continuously for {@code thresher.soak.seconds}
 * (60 by default) over all three nodes, with plain and prepared statements. Every result must
 * equal the SQL reference over the same rows, and every call must have published exactly one
 * result under its own identity.
 */
class SoakIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void eightClientsCallingContinuouslyGetOnlyCorrectResultsPublishedOnce() throws Exception {
        DevCluster cluster = Cluster.get();
        Map<String, double[]> reference = Cluster.sqlReference();
        long seconds = Long.getLong("thresher.soak.seconds", 60);
        Instant started = Instant.now();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        AtomicLong calls = new AtomicLong();
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        ExecutorService clients = Executors.newFixedThreadPool(8);
        List<Future<?>> running = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            int client = i;
            running.add(clients.submit(() -> {
                try (Connection c = Cluster.connect(client % 3); Statement plain = c.createStatement();
                     PreparedStatement prepared = c.prepareStatement("CALL BINDING revenue_by_region(?)")) {
                    for (long n = 0; System.nanoTime() < end; n++) {
                        String json;
                        if (n % 2 == 0) {
                            try (ResultSet rs = plain.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                                rs.next();
                                json = rs.getString(1);
                            }
                        } else {
                            prepared.setString(1, "{\"client\": " + client + "}");
                            try (ResultSet rs = prepared.executeQuery()) {
                                rs.next();
                                json = rs.getString(1);
                            }
                        }
                        calls.incrementAndGet();
                        String problem = Cluster.differs(JSON.readTree(json), reference);
                        if (problem != null) {
                            wrong.add("client " + client + ": " + problem);
                        }
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : running) {
            f.get(seconds + 120, TimeUnit.SECONDS);
        }
        clients.shutdown();
        assertThat(wrong).as("results that differ from the SQL reference").isEmpty();
        assertThat(calls.get()).isPositive();

        try (Connection c = DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD);
             PreparedStatement ps = c.prepareStatement("""
                     SELECT count(*) FILTER (WHERE state = 'succeeded'),
                            count(*) FILTER (WHERE state <> 'succeeded'),
                            (SELECT count(*) FROM journal j JOIN invocations x USING (call_id)
                              WHERE j.kind = 'reduce' AND x.created_at >= ? AND x.binding_name = 'revenue_by_region'),
                            (SELECT count(*) FROM (SELECT call_id FROM shard_runs s JOIN invocations x USING (call_id)
                              WHERE x.created_at >= ? AND x.binding_name = 'revenue_by_region'
                              GROUP BY call_id HAVING count(*) <> 16) partial)
                     FROM invocations WHERE created_at >= ? AND binding_name = 'revenue_by_region'""")) {
            Timestamp since = Timestamp.from(started);
            ps.setTimestamp(1, since);
            ps.setTimestamp(2, since);
            ps.setTimestamp(3, since);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getLong(1)).as("one published result per call").isEqualTo(calls.get());
                assertThat(rs.getLong(2)).as("calls not succeeded").isZero();
                assertThat(rs.getLong(3)).as("one journaled reduction per call").isEqualTo(calls.get());
                assertThat(rs.getLong(4)).as("calls without exactly 16 slots").isZero();
            }
        }
        System.out.printf("soak: %d calls in %d s by 8 clients (%.1f calls/s)%n", calls.get(), seconds,
                calls.get() / (double) seconds);
    }
}
