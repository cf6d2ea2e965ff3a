package dev.thresher.store.control;

import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.store.control.CallJournal.ShardRunFence;
import dev.thresher.store.control.CallJournal.ShardRunPublication;
import dev.thresher.store.control.CallJournal.ShardRunPublished;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The fenced publication of a host request's shard outcomes ({@link CallJournal#publishShardOutcomes}, whose javadoc is
 * the contract): the one statement that journals them and publishes their slots under the partition lease and the
 * call's deadline, and the transaction that publishes the slots of outcomes an earlier writer journaled.
 */
final class ShardRunPublisher {
    private final ControlSql sql;

    ShardRunPublisher(ControlSql sql) {
        this.sql = sql;
    }

    List<ShardRunPublished> publish(List<ShardRunPublication> publications, String hostId, long leaseMs) {
        if (publications.isEmpty()) {
            return List.of();
        }
        // What the one statement did per wire id: whether it journaled it, and whether it published its slot.
        Map<String, boolean[]> done = sql.autoCommit(c -> {
            try (PreparedStatement ps = c.prepareStatement(journalAndPublishShardRunsSql(publications.size()))) {
                int i = 1;
                for (ShardRunPublication p : publications) {
                    JournalEntry e = p.outcome();
                    Object[] row = {e.tenant(), e.wireId(), e.callId(), e.kind(), e.hostId(), e.partitionId(), e.epoch(),
                            e.succeeded(), e.errorCode(), ControlSql.storable(e.errorMessage()), e.rowCount(), e.emitCount(),
                            e.payload(), e.guestMicros(), p.runIndex(),
                            e.succeeded() ? PartialsCodec.count(e.payload()) : 0, e.guestStartedAtMicros(),
                            p.attempt(), p.readMicros()};
                    for (Object v : row) {
                        ps.setObject(i++, v);
                    }
                }
                ControlSql.bindFrom(ps, i, hostId, leaseMs, hostId);
                Map<String, boolean[]> out = new HashMap<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.put(rs.getString(1), new boolean[] {rs.getBoolean(2), rs.getBoolean(3), rs.getBoolean(4)});
                    }
                }
                return out;
            }
        });
        List<ShardRunPublication> earlier = new ArrayList<>();
        for (ShardRunPublication p : publications) {
            if (!done.get(p.outcome().wireId())[0]) {
                earlier.add(p);
            }
        }
        // An outcome that met an earlier writer's (a redelivery, or a race) stands as that writer's; those
        // slots are published from the standing entries, in a transaction of their own.
        Map<String, ShardRunPublished> fromEarlier = earlier.isEmpty() ? Map.of() : publishStanding(earlier, hostId, leaseMs);
        List<ShardRunPublished> out = new ArrayList<>(publications.size());
        for (ShardRunPublication p : publications) {
            JournalEntry e = p.outcome();
            boolean[] d = done.get(e.wireId());
            out.add(d[0] ? new ShardRunPublished(e, !e.succeeded() || d[1] ? ShardRunFence.PUBLISHED
                    : d[2] ? ShardRunFence.DEADLINE_PASSED : ShardRunFence.NOT_LEADER) : fromEarlier.get(e.wireId()));
        }
        return out;
    }

    /**
     * One statement for a host request's outcomes: journal them (first writer wins) and publish the slot of
     * each successful one this statement journaled, fenced by the partition lease (the lease rows locked
     * {@code FOR SHARE} in partition order, as lease renewals lock them, so the two never deadlock; judged by
     * {@code clock_timestamp()}) and by the call's deadline as stored (judged by the same clock); it answers, per
     * wire id, whether it journaled the outcome, whether it published the slot and whether the call's deadline had
     * passed. Parameters: 19 per outcome (the journal columns, the slot index, the partial count, the guest's
     * start in microseconds on the control database's clock or 0, the attempt or 0, the read's microseconds), then
     * host id, lease ms, host id. Each call's stored deadline is looked up by key, one subquery per outcome, never
     * a join: a plan made while {@code invocations} was small would otherwise scan all of it on every publication
     * once it has grown. Package-private for the test that checks its plan.
     */
    static String journalAndPublishShardRunsSql(int outcomes) {
        StringBuilder values = new StringBuilder();
        for (int i = 0; i < outcomes; i++) {
            values.append(i == 0 ? "" : ",\n  ").append("(?::text, ?::text, ?::uuid, ?::text, ?::text, ?::int, ?::bigint,"
                    + " ?::boolean, ?::int, ?::text, ?::int, ?::int, ?::bytea, ?::bigint, ?::int, ?::int, ?::bigint,"
                    + " ?::int, ?::bigint)");
        }
        return "WITH v (tenant, " + CallJournal.JOURNAL_COLUMNS + ", run_index, entry_count, started_us, attempt, read_us) AS (VALUES\n  "
                + values + """
                ),
                ins AS (
                  INSERT INTO journal (tenant, %1$s, guest_started_at, run_index, attempt, read_micros)
                  SELECT tenant, %1$s, CASE WHEN started_us > 0 THEN to_timestamp(started_us / 1000000.0) END, run_index,
                    NULLIF(attempt, 0), CASE WHEN attempt > 0 THEN read_us END FROM v
                  ON CONFLICT (tenant, wire_id) DO NOTHING
                  RETURNING wire_id),
                late AS (
                  SELECT DISTINCT v.call_id FROM v
                  WHERE (SELECT i.deadline_at < clock_timestamp() FROM invocations i WHERE i.call_id = v.call_id)),
                locked AS MATERIALIZED (
                  SELECT l.partition_id, l.host_id, l.epoch, l.lease_until FROM partition_leases l
                  WHERE l.partition_id IN (SELECT partition_id FROM v)
                  ORDER BY l.partition_id FOR SHARE),
                pub AS (
                  INSERT INTO shard_runs (call_id, run_index, tenant, partition_id, epoch, wire_id, host_id,
                    row_count, emit_count, entry_count, lease_until)
                  SELECT v.call_id, v.run_index, v.tenant, v.partition_id, v.epoch, v.wire_id, ?, v.row_count, v.emit_count,
                    v.entry_count, clock_timestamp() + make_interval(secs => ? / 1000.0)
                  FROM v JOIN ins ON ins.wire_id = v.wire_id
                  WHERE v.succeeded AND EXISTS (SELECT 1 FROM locked l WHERE l.partition_id = v.partition_id
                    AND l.host_id = ? AND l.epoch = v.epoch AND l.lease_until > clock_timestamp())
                    AND v.call_id NOT IN (SELECT call_id FROM late)
                  ON CONFLICT (call_id, run_index) DO UPDATE SET lease_until = EXCLUDED.lease_until
                    WHERE shard_runs.wire_id = EXCLUDED.wire_id
                  RETURNING wire_id)
                SELECT v.wire_id, ins.wire_id IS NOT NULL, pub.wire_id IS NOT NULL, v.call_id IN (SELECT call_id FROM late)
                FROM v LEFT JOIN ins ON ins.wire_id = v.wire_id LEFT JOIN pub ON pub.wire_id = v.wire_id""".formatted(
                        CallJournal.JOURNAL_COLUMNS.replace("\n", " "));
    }

    /** Publishes, fenced, the standing (earlier writers') outcomes of wire ids already journaled, in one transaction. */
    private Map<String, ShardRunPublished> publishStanding(List<ShardRunPublication> publications, String hostId, long leaseMs) {
        return sql.inTransaction(c -> {
            Map<String, JournalEntry> standing = CallJournal.journaled(c, publications.get(0).outcome().tenant(),
                    publications.stream().map(p -> p.outcome().wireId()).toList());
            List<ShardRunPublication> toPublish = new ArrayList<>();
            for (ShardRunPublication p : publications) {
                if (standing.get(p.outcome().wireId()).succeeded()) {
                    toPublish.add(p);
                }
            }
            // lease rows are locked in partition order, as renewals lock them
            toPublish.sort(java.util.Comparator.comparing(p -> standing.get(p.outcome().wireId()).partitionId(),
                    java.util.Comparator.nullsFirst(java.util.Comparator.naturalOrder())));
            Map<String, ShardRunFence> fences = new HashMap<>();
            if (!toPublish.isEmpty()) {
                try (PreparedStatement ps = c.prepareStatement("""
                        INSERT INTO shard_runs (call_id, run_index, tenant, partition_id, epoch, wire_id, host_id,
                          row_count, emit_count, entry_count, lease_until)
                        SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, clock_timestamp() + make_interval(secs => ? / 1000.0)
                        WHERE EXISTS (SELECT 1 FROM partition_leases l WHERE l.partition_id = ? AND l.host_id = ?
                                      AND l.epoch = ? AND l.lease_until > clock_timestamp() FOR SHARE)
                          AND NOT EXISTS (SELECT 1 FROM invocations i WHERE i.call_id = ?
                                          AND i.deadline_at < clock_timestamp())
                        ON CONFLICT (call_id, run_index) DO UPDATE SET lease_until = EXCLUDED.lease_until
                          WHERE shard_runs.wire_id = EXCLUDED.wire_id""")) {
                    for (ShardRunPublication p : toPublish) {
                        JournalEntry s = standing.get(p.outcome().wireId());
                        ControlSql.bind(ps, s.callId(), p.runIndex(), s.tenant(), s.partitionId(), s.epoch(), s.wireId(), hostId,
                                s.rowCount(), s.emitCount(), PartialsCodec.count(s.payload()), leaseMs, s.partitionId(),
                                hostId, s.epoch(), s.callId());
                        ps.addBatch();
                    }
                    int[] counts = ps.executeBatch();
                    for (int i = 0; i < counts.length; i++) {
                        fences.put(toPublish.get(i).outcome().wireId(), counts[i] == 1 ? ShardRunFence.PUBLISHED
                                : ShardRunFence.NOT_LEADER);
                    }
                }
            }
            Map<String, ShardRunPublished> out = new HashMap<>();
            for (ShardRunPublication p : publications) {
                String w = p.outcome().wireId();
                out.put(w, new ShardRunPublished(standing.get(w), fences.getOrDefault(w, ShardRunFence.PUBLISHED)));
            }
            return out;
        });
    }
}
