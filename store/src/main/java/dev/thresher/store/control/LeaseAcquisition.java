package dev.thresher.store.control;

import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * How a node takes and renews partition leadership: the rules of who may hold a partition's lease (its own renewed,
 * a free one taken by a home candidate, the host a transfer names, or a standby while no home candidate is live;
 * failback once the home node has settled), applied by one statement of {@link TopologyStore#acquireLeadership}.
 */
final class LeaseAcquisition {
    private LeaseAcquisition() {
    }

    /**
     * Takes or renews, in one statement (no lock is held across a round trip), the leadership of the
     * partitions on the shard databases this host is a candidate for, and refreshes its heartbeat:
     * <ul>
     *   <li>its own lease under the partition's current epoch is renewed, unless the host is draining, the
     *       lease is being transferred, or the host is a standby and a home candidate of the shard has been live
     *       for two leases without a gap (failback: leadership returns home once the home node has settled, not
     *       to a node that keeps freezing) and the lease was not taken through a transfer (an operator's placement
     *       stays);</li>
     *   <li>a lease that is free (none, ended, or its own of an older epoch) is taken by a home candidate, by the
     *       host a transfer names, or by a standby while no home candidate of the shard is live and not
     *       draining, once the standby itself has been live for a lease without a gap (after an outage of the
     *       control database every heartbeat is stale: the home nodes renew their own leases first instead of
     *       standbys taking them and handing them back) and, for a partition never led, once it is two leases old
     *       (a home node starting a moment later keeps its own); a draining host takes none;</li>
     *   <li>taking a lease whose last holder was another host bumps the partition's epoch, so the old
     *       holder's runs can never publish.</li>
     * </ul>
     * A partition whose row another transaction holds (a cutover, a split, a table drop) is skipped this
     * time, not waited for.
     *
     * @return the partitions the host leads afterwards, each at the epoch of its lease
     */
    static List<TopologyStore.Held> take(Connection c, String hostId, long leaseMs) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                WITH me AS (
                  UPDATE hosts SET heartbeat_at = now(),
                    live_since = CASE WHEN heartbeat_at > now() - make_interval(secs => ? / 1000.0) THEN live_since
                                      ELSE now() END
                  WHERE host_id = ? RETURNING draining, live_since),
                homes AS (
                  SELECT o.shard_id, o.host_id, oh.live_since < now() - make_interval(secs => ? / 1000.0) AS settled
                  FROM host_shards o JOIN hosts oh ON oh.host_id = o.host_id
                  WHERE o.home AND NOT oh.draining AND oh.heartbeat_at > now() - make_interval(secs => ? / 1000.0)),
                eligible AS (
                  SELECT p.partition_id, p.epoch, l.host_id AS holder,
                    coalesce(l.transfer_to = hs.host_id OR (l.pinned AND l.host_id = hs.host_id), false) AS pinned
                  FROM partitions p
                  JOIN host_shards hs ON hs.host_id = ? AND hs.shard_id = p.shard_id
                  JOIN me ON NOT me.draining
                  LEFT JOIN partition_leases l ON l.partition_id = p.partition_id
                  WHERE (l.host_id = hs.host_id AND l.epoch = p.epoch AND l.transfer_to IS NULL
                         AND (hs.home OR l.pinned OR NOT EXISTS (SELECT 1 FROM homes h WHERE h.shard_id = p.shard_id
                                                       AND h.host_id <> hs.host_id AND h.settled)))
                     OR ((l.partition_id IS NULL OR l.lease_until < now() OR (l.epoch <> p.epoch AND l.host_id = hs.host_id))
                         AND (l.transfer_to = hs.host_id
                              OR ((l.transfer_to IS NULL OR NOT EXISTS (
                                     SELECT 1 FROM hosts t JOIN host_shards ts ON ts.host_id = t.host_id
                                     WHERE t.host_id = l.transfer_to AND ts.shard_id = p.shard_id
                                       AND NOT t.draining AND t.heartbeat_at > now() - make_interval(secs => ? / 1000.0)))
                                  AND (hs.home
                                       OR (NOT EXISTS (SELECT 1 FROM homes h WHERE h.shard_id = p.shard_id
                                                         AND h.host_id <> hs.host_id)
                                           AND (l.partition_id IS NOT NULL
                                                OR p.created_at < now() - make_interval(secs => ? / 1000.0))
                                           AND me.live_since < now() - make_interval(secs => ? / 1000.0))))))
                  ORDER BY p.partition_id
                  FOR NO KEY UPDATE OF p SKIP LOCKED),
                bumped AS (
                  UPDATE partitions p SET epoch = p.epoch + 1 FROM eligible e
                  WHERE p.partition_id = e.partition_id AND e.holder IS NOT NULL AND e.holder <> ?
                  RETURNING p.partition_id, p.epoch),
                taken AS (
                  INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until, transfer_to, pinned)
                  SELECT e.partition_id, ?, coalesce(b.epoch, e.epoch), now() + make_interval(secs => ? / 1000.0), NULL,
                    e.pinned
                  FROM eligible e LEFT JOIN bumped b ON b.partition_id = e.partition_id
                  ORDER BY e.partition_id
                  ON CONFLICT (partition_id) DO UPDATE
                    SET host_id = EXCLUDED.host_id, epoch = EXCLUDED.epoch, lease_until = EXCLUDED.lease_until,
                        -- a transfer asked for since this statement's snapshot stays asked for
                        transfer_to = CASE WHEN partition_leases.host_id = EXCLUDED.host_id
                                           THEN partition_leases.transfer_to END,
                        pinned = EXCLUDED.pinned
                    WHERE partition_leases.host_id = EXCLUDED.host_id OR partition_leases.lease_until < now()
                  RETURNING partition_id, epoch)
                SELECT p.partition_id, p.tenant, p.table_name, p.slot_lo, p.slot_hi, p.shard_id, t.epoch
                FROM taken t JOIN partitions p ON p.partition_id = t.partition_id""")) {
            ControlSql.bind(ps, leaseMs, hostId, 2 * leaseMs, leaseMs, hostId, leaseMs, 2 * leaseMs, leaseMs, hostId, hostId,
                    leaseMs);
            List<TopologyStore.Held> held = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    held.add(new TopologyStore.Held(new Partition(rs.getInt(1), rs.getString(2), rs.getString(3),
                            rs.getInt(4), rs.getInt(5), rs.getInt(6), rs.getLong(7))));
                }
            }
            return held;
        }
    }
}
