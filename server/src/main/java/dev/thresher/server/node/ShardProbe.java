package dev.thresher.server.node;

import com.zaxxer.hikari.HikariDataSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The probe behind a node's {@code /readyz} for its shard databases: every {@value #SHARD_PROBE_MS} ms each shard
 * database the node reads is asked whether it answers, and one that has not answered for three probes makes the node
 * not ready ({@link Node#unreadiness}).
 */
final class ShardProbe implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Node.class);

    /** How often each shard database this node reads is probed; {@code /readyz} fails after three misses. */
    static final long SHARD_PROBE_MS = 1_000;

    private final String hostId;
    private final Map<Integer, HikariDataSource> shards;
    private final Map<Integer, Long> answeredNanos = new ConcurrentHashMap<>();
    private final ScheduledExecutorService probe;

    /** Probes the shard databases once, so the node reads ready only after they answered, then every second. */
    ShardProbe(String hostId, Map<Integer, HikariDataSource> shards) {
        this.hostId = hostId;
        this.shards = shards;
        this.probe = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name(hostId + "-shard-probe").daemon().factory());
        probeShards(); // once before the node reads ready
        probe.scheduleWithFixedDelay(this::probeShards, SHARD_PROBE_MS, SHARD_PROBE_MS, TimeUnit.MILLISECONDS);
    }

    private void probeShards() {
        shards.forEach((shard, pool) -> {
            try (java.sql.Connection c = pool.getConnection()) {
                if (c.isValid(2)) {
                    answeredNanos.put(shard, System.nanoTime());
                }
            } catch (java.sql.SQLException | RuntimeException e) {
                log.debug("node {}: shard database {} does not answer: {}", hostId, shard, e.toString());
            }
        });
    }

    /** Why each shard database that has not answered for three probes keeps the node from being ready; empty when all answer. */
    List<String> down() {
        long now = System.nanoTime();
        List<String> down = new ArrayList<>();
        for (int shard : shards.keySet()) {
            Long answered = answeredNanos.get(shard);
            if (answered == null || now - answered > TimeUnit.MILLISECONDS.toNanos(3 * SHARD_PROBE_MS + 2_000)) {
                down.add("shard database " + shard + " does not answer");
            }
        }
        return down;
    }

    @Override
    public void close() {
        probe.shutdownNow();
    }
}
