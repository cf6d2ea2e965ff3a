package dev.thresher.store.control;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.topology.Host;
import dev.thresher.topology.Leadership;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Tiling;
import dev.thresher.topology.Topology;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The cluster's topology in the control database: the shard databases ({@code shards}), the nodes ({@code hosts}) and
 * the shards each is a candidate for ({@code host_shards}), the partitions' placement and epochs ({@code partitions}),
 * leadership ({@code partition_leases}), moves in progress ({@code partition_moves}) and the topology version. The one
 * writer of hosts, candidates, leases and epochs: a node's lease keeper takes and renews leadership here, and the
 * operator's changes (transfers, drains, splits, moves, shards added or removed) are written here too, each as one
 * statement or one transaction. The audit of those changes is {@link TopologyChanges}'. The rules of leadership and
 * the statement that applies them are {@link LeaseAcquisition}'s; the snapshot a node's cache reads is
 * {@link TopologySnapshot}'s.
 */
public final class TopologyStore {
    private final ControlSql sql;

    public TopologyStore(DataSource db) {
        this.sql = new ControlSql(db);
    }

    // ---- hosts and leadership ---------------------------------------------------------------------------------

    /**
     * Registers or re-registers a node with the shard databases it is a candidate for: its home shard
     * ({@code h.shardId()}) and {@code standbyShards}. A re-registration replaces the standby list; a node
     * that was draining stays draining (an operator undrains it).
     */
    public void registerHost(Host h, String pgwireAddress, String httpAddress, java.util.Collection<Integer> standbyShards) {
        sql.inTransaction(c -> {
            try (PreparedStatement ps = c.prepareStatement("""
                    INSERT INTO hosts (host_id, shard_id, wire_host, wire_port, pgwire_address, http_address)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (host_id) DO UPDATE SET shard_id = EXCLUDED.shard_id, wire_host = EXCLUDED.wire_host,
                      wire_port = EXCLUDED.wire_port, pgwire_address = EXCLUDED.pgwire_address,
                      http_address = EXCLUDED.http_address, started_at = now(), heartbeat_at = now(), live_since = now()""")) {
                ControlSql.bind(ps, h.hostId(), h.shardId(), h.wireHost(), h.wirePort(), pgwireAddress, httpAddress);
                ps.executeUpdate();
            }
            java.util.Set<Integer> standby = new java.util.TreeSet<>(standbyShards);
            standby.remove(h.shardId());
            Integer[] all = java.util.stream.Stream.concat(java.util.stream.Stream.of(h.shardId()), standby.stream())
                    .toArray(Integer[]::new);
            try (PreparedStatement ps = c.prepareStatement(
                    "DELETE FROM host_shards WHERE host_id = ? AND NOT (shard_id = ANY (?))")) {
                ps.setString(1, h.hostId());
                ps.setArray(2, c.createArrayOf("integer", all));
                ps.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement("""
                    INSERT INTO host_shards (host_id, shard_id, home) VALUES (?, ?, ?)
                    ON CONFLICT (host_id, shard_id) DO UPDATE SET home = EXCLUDED.home
                      WHERE host_shards.home IS DISTINCT FROM EXCLUDED.home""")) {
                for (Integer shard : all) {
                    ControlSql.bind(ps, h.hostId(), shard, shard == h.shardId());
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            return null;
        });
    }

    /** Registers or re-registers a node that is a candidate for its home shard only. */
    public void registerHost(Host h, String pgwireAddress, String httpAddress) {
        registerHost(h, pgwireAddress, httpAddress, List.of());
    }

    /**
     * One partition lease this host holds after {@link #acquireLeadership}.
     *
     * @param partition the partition as of the statement, with the epoch the lease was taken or renewed under
     */
    public record Held(Partition partition) {}

    /**
     * Takes or renews, in one statement (no lock is held across a round trip), the leadership of the
     * partitions on the shard databases this host is a candidate for, and refreshes its heartbeat, by the rules
     * {@link LeaseAcquisition} keeps: a lease whose last holder was another host is taken at a bumped epoch, and a
     * partition whose row another transaction holds is skipped this time, not waited for.
     *
     * @return the partitions the host leads afterwards, each at the epoch of its lease
     */
    public List<Held> acquireLeadership(String hostId, long leaseMs) {
        return sql.autoCommit(c -> LeaseAcquisition.take(c, hostId, leaseMs));
    }

    /**
     * Ends the host's leases of {@code partitionIds} now, after it stopped leading them locally (a transfer, a drain,
     * a failback): the next holder takes them at its next renewal instead of a lease later.
     */
    public void releaseLeases(String hostId, java.util.Collection<Integer> partitionIds) {
        if (partitionIds.isEmpty()) {
            return;
        }
        sql.autoCommit(c -> {
            try (PreparedStatement ps = c.prepareStatement("""
                    UPDATE partition_leases SET lease_until = now() - interval '1 millisecond'
                    WHERE host_id = ? AND partition_id = ANY (?) AND lease_until > now()""")) {
                ps.setString(1, hostId);
                ps.setArray(2, c.createArrayOf("integer", partitionIds.toArray()));
                return ps.executeUpdate();
            }
        });
    }

    /** {@link #acquireLeadership(String, long)}, answering the ids of the partitions led afterwards. */
    public List<Integer> acquireLeadership(String hostId, int shardId, long leaseMs) {
        return acquireLeadership(hostId, leaseMs).stream().map(h -> h.partition().id()).toList();
    }

    /**
     * Ends every lease the host holds (clean shutdown) so a successor need not wait for expiry. The rows
     * stay, naming the host as last holder: whoever takes a lease over bumps the partition's epoch.
     */
    public void releaseLeadership(String hostId) {
        // One statement: the leases end, and the host no longer counts as a live home candidate, so a standby takes
        // its partitions at once instead of a lease later.
        sql.update("""
                WITH gone AS (UPDATE hosts SET heartbeat_at = now() - interval '1 day' WHERE host_id = ? RETURNING host_id)
                UPDATE partition_leases SET lease_until = now() - interval '1 millisecond'
                WHERE host_id = ? AND lease_until > now() - interval '1 millisecond'""", hostId, hostId);
    }

    /** Reads partitions, live and expired leases and hosts in one snapshot, stamped with the database clock. */
    public Topology readTopology() {
        return sql.inTransaction(TopologySnapshot::read);
    }

    /**
     * The topology version (migration V4): bumped by every change to partitions and by every host
     * added, removed or moved (shard, wire address); heartbeats and lease renewals leave it.
     */
    public long readTopologyVersion() {
        return sql.queryOne("SELECT version FROM topology_version", rs -> rs.getLong(1)).orElse(0L);
    }

    /** Where a registered node answers: its pgwire and HTTP addresses, each null until it listens. */
    public record Addresses(String pgwire, String http) {}

    /** The addresses a node registered; empty until it has registered. */
    public Optional<Addresses> addresses(String hostId) {
        return sql.queryOne("SELECT pgwire_address, http_address FROM hosts WHERE host_id = ?",
                rs -> new Addresses(rs.getString(1), rs.getString(2)), hostId);
    }

    public boolean hostExists(String hostId) {
        return sql.queryOne("SELECT host_id FROM hosts WHERE host_id = ?", rs -> rs.getString(1), hostId).isPresent();
    }

    /** Every registered node, by id. */
    public List<String> hostIds() {
        return sql.queryList("SELECT host_id FROM hosts ORDER BY host_id", rs -> rs.getString(1));
    }

    /** The nodes registered besides {@code hostId}, as its connection budget counts them, read in one transaction. */
    public OtherNodes otherNodes(String hostId) {
        return sql.inTransaction(c -> {
            record Head(int count, String server) {}
            Head head = ControlSql.queryOne(c, "SELECT count(*), host(inet_server_addr()) || ':' || inet_server_port()"
                    + " FROM hosts WHERE host_id <> ?", rs -> new Head(rs.getInt(1), rs.getString(2)), hostId).orElseThrow();
            Map<Integer, Integer> candidates = new java.util.TreeMap<>();
            ControlSql.queryList(c, "SELECT shard_id, count(*) FROM host_shards WHERE host_id <> ? GROUP BY shard_id",
                    rs -> Map.entry(rs.getInt(1), rs.getInt(2)), hostId).forEach(e -> candidates.put(e.getKey(), e.getValue()));
            return new OtherNodes(head.count(), candidates, head.server());
        });
    }

    /** Marks a node draining (it takes and renews no lease) or not. */
    public void setDraining(String hostId, boolean draining) {
        sql.update("UPDATE hosts SET draining = ? WHERE host_id = ?", draining, hostId);
    }

    /**
     * The live (a heartbeat within {@code liveMs}), undrained candidate nodes of a shard but {@code except} (may be
     * null), home candidates first.
     */
    public List<String> liveCandidates(int shard, long liveMs, String except) {
        return sql.queryList("""
                SELECT h.host_id FROM host_shards hs JOIN hosts h ON h.host_id = hs.host_id
                WHERE hs.shard_id = ? AND NOT h.draining AND h.heartbeat_at > now() - make_interval(secs => ? / 1000.0)
                  AND h.host_id IS DISTINCT FROM ?
                ORDER BY NOT hs.home, h.host_id""", rs -> rs.getString(1), shard, liveMs, except);
    }

    /** The nodes whose home is {@code shard} with a heartbeat within {@code liveMs}, by id. */
    public List<String> liveHomeHosts(int shard, long liveMs) {
        return sql.queryList("""
                SELECT host_id FROM hosts WHERE shard_id = ?
                  AND heartbeat_at > now() - make_interval(secs => ? / 1000.0) ORDER BY host_id""",
                rs -> rs.getString(1), shard, liveMs);
    }

    /** Every node whose home is {@code shard}, live or not, by id. */
    public List<String> homeHosts(int shard) {
        return sql.queryList("SELECT host_id FROM hosts WHERE shard_id = ? ORDER BY host_id", rs -> rs.getString(1), shard);
    }

    // ---- leases -----------------------------------------------------------------------------------------------

    /**
     * A partition's lease row.
     *
     * @param host its holder, or last holder once it ended
     * @param live whether it has not ended, by the control database's clock
     * @param transferTo the node a transfer asked for names, or null
     */
    public record Lease(String host, long epoch, boolean live, String transferTo) {}

    public Optional<Lease> lease(int partitionId) {
        return sql.queryOne("""
                SELECT host_id, epoch, lease_until > now(), transfer_to FROM partition_leases WHERE partition_id = ?""",
                rs -> new Lease(rs.getString(1), rs.getLong(2), rs.getBoolean(3), rs.getString(4)), partitionId);
    }

    /**
     * Asks the leader of a partition to hand it to {@code toHost}: it stops renewing and ends its lease, and only
     * {@code toHost} takes the ended lease (see {@link #acquireLeadership}). A partition without a lease row gets an
     * ended one, under {@code epoch}, naming {@code toHost} as its holder and its transfer's target.
     */
    public void askTransfer(int partitionId, String toHost, long epoch) {
        sql.update("""
                INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until, transfer_to)
                VALUES (?, ?, ?, now() - interval '1 millisecond', ?)
                ON CONFLICT (partition_id) DO UPDATE SET transfer_to = EXCLUDED.transfer_to""",
                partitionId, toHost, epoch, toHost);
    }

    /** A partition a node leads, and its shard. */
    public record Led(int partitionId, int shardId) {}

    /** The partitions {@code hostId} holds a live lease of, by id. */
    public List<Led> ledBy(String hostId) {
        return sql.queryList("""
                SELECT l.partition_id, p.shard_id FROM partition_leases l JOIN partitions p USING (partition_id)
                WHERE l.host_id = ? AND l.lease_until > now() ORDER BY l.partition_id""",
                rs -> new Led(rs.getInt(1), rs.getInt(2)), hostId);
    }

    /** How many live leases {@code hostId} holds. */
    public long liveLeaseCount(String hostId) {
        return sql.queryOne("SELECT count(*) FROM partition_leases WHERE host_id = ? AND lease_until > now()",
                rs -> rs.getLong(1), hostId).orElseThrow();
    }

    /** How many of {@code partitionIds} have no live lease under their current epoch. */
    public long leaderless(List<Integer> partitionIds) {
        return sql.autoCommit(c -> ControlSql.queryOne(c, """
                SELECT count(*) FROM partitions p WHERE p.partition_id = ANY (?) AND NOT EXISTS (
                  SELECT 1 FROM partition_leases l WHERE l.partition_id = p.partition_id AND l.epoch = p.epoch
                    AND l.lease_until > now())""", rs -> rs.getLong(1),
                c.createArrayOf("integer", partitionIds.toArray())).orElseThrow());
    }

    /** How many partitions are not led by a home candidate of their shard under their current epoch (the dev cluster). */
    public long partitionsNotLedFromHome() {
        return sql.queryOne("""
                SELECT count(*) FROM partitions p WHERE NOT EXISTS (
                  SELECT 1 FROM partition_leases l JOIN host_shards hs ON hs.host_id = l.host_id AND hs.home
                  WHERE l.partition_id = p.partition_id AND l.epoch = p.epoch AND l.lease_until > now()
                    AND hs.shard_id = p.shard_id)""", rs -> rs.getLong(1)).orElseThrow();
    }

    // ---- partitions -------------------------------------------------------------------------------------------

    private static final String PARTITION_COLUMNS = "partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch";

    private static Partition partitionOf(ResultSet rs) throws SQLException {
        return new Partition(rs.getInt(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getInt(5), rs.getInt(6),
                rs.getLong(7));
    }

    public Optional<Partition> partition(int id) {
        return sql.queryOne("SELECT " + PARTITION_COLUMNS + " FROM partitions WHERE partition_id = ?",
                TopologyStore::partitionOf, id);
    }

    /** The partition's row, locked until the transaction ends; there is no partition {@code id}: INVALID_ARGUMENTS. */
    private static Partition lockPartition(Connection c, int id) throws SQLException {
        return ControlSql.queryOne(c, "SELECT " + PARTITION_COLUMNS + " FROM partitions WHERE partition_id = ? FOR UPDATE",
                TopologyStore::partitionOf, id)
                .orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no partition " + id));
    }

    public long partitionCount(String tenant, String table) {
        return sql.queryOne("SELECT count(*) FROM partitions WHERE tenant = ? AND table_name = ?", rs -> rs.getLong(1),
                tenant, table).orElseThrow();
    }

    public long partitionCountOnShard(int shardId) {
        return sql.queryOne("SELECT count(*) FROM partitions WHERE shard_id = ?", rs -> rs.getLong(1), shardId)
                .orElseThrow();
    }

    /**
     * Splits partition {@code planned.id()} at slot {@code first}, in one transaction: it keeps the slots below
     * {@code first}, a new partition (the next free id) takes the rest on the same shard, both at
     * {@code planned.epoch() + 1}; its leader's lease moves to the new epoch and covers the new partition too.
     *
     * @return the new partition's id
     * @throws ThresherException {@code TARGET_STALE} when the partition changed since {@code planned} was read;
     *     {@code PARTITIONS_DO_NOT_TILE} when the table would not tile afterwards (nothing is written then)
     */
    public int split(Partition planned, int first) {
        long epoch = planned.epoch() + 1;
        return sql.inTransaction(c -> {
            try (Statement s = c.createStatement()) {
                // partition ids are allocated max + 1: one allocation at a time
                s.execute("LOCK TABLE partitions IN SHARE ROW EXCLUSIVE MODE");
            }
            Partition locked = lockPartition(c, planned.id());
            if (locked.epoch() != planned.epoch() || locked.slotHi() != planned.slotHi()
                    || locked.slotLo() != planned.slotLo()) {
                throw new ThresherException(ErrorCode.TARGET_STALE, "partition " + planned.id()
                        + " changed while the split was planned; ask again");
            }
            int newId = ControlSql.queryOne(c, "SELECT coalesce(max(partition_id), -1) + 1 FROM partitions",
                    rs -> rs.getInt(1)).orElseThrow();
            ControlSql.update(c, "UPDATE partitions SET slot_hi = ?, epoch = ? WHERE partition_id = ?", first - 1, epoch,
                    planned.id());
            ControlSql.update(c, """
                    INSERT INTO partitions (partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch)
                    VALUES (?, ?, ?, ?, ?, ?, ?)""", newId, planned.tenant(), planned.table(), first, planned.slotHi(),
                    planned.shardId(), epoch);
            // Leadership carries over: the leader's lease moves to the new epoch and covers the new partition too.
            ControlSql.update(c, "UPDATE partition_leases SET epoch = ? WHERE partition_id = ? AND epoch = ?", epoch,
                    planned.id(), planned.epoch());
            ControlSql.update(c, """
                    INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until, pinned)
                    SELECT ?, host_id, epoch, lease_until, pinned FROM partition_leases WHERE partition_id = ?""",
                    newId, planned.id());
            List<Partition> after = ControlSql.queryList(c, """
                    SELECT partition_id, slot_lo, slot_hi, shard_id, epoch FROM partitions
                    WHERE tenant = ? AND table_name = ?""", rs -> new Partition(rs.getInt(1), planned.tenant(),
                    planned.table(), rs.getInt(2), rs.getInt(3), rs.getInt(4), rs.getLong(5)),
                    planned.tenant(), planned.table());
            Optional<String> problem = Tiling.problem(after);
            if (problem.isPresent()) {
                throw new ThresherException(ErrorCode.PARTITIONS_DO_NOT_TILE, "the split would leave " + planned.table()
                        + " not tiling: " + problem.get());
            }
            return newId;
        });
    }

    // ---- moves ------------------------------------------------------------------------------------------------

    /**
     * A move in progress, as recorded.
     *
     * @param phase {@code copy}, {@code verify}, {@code cutover} or {@code cleanup}
     * @param sourceEpoch the partition's epoch when the move started
     */
    public record Move(int partitionId, int fromShard, int toShard, String phase, long sourceEpoch) {}

    public Optional<Move> move(int partitionId) {
        return sql.queryOne("""
                SELECT partition_id, from_shard, to_shard, phase, source_epoch FROM partition_moves WHERE partition_id = ?""",
                rs -> new Move(rs.getInt(1), rs.getInt(2), rs.getInt(3), rs.getString(4), rs.getLong(5)), partitionId);
    }

    /** Records a move at phase copy, started by change {@code changeId}. */
    public void startMove(int partitionId, int fromShard, int toShard, long sourceEpoch, long changeId) {
        sql.update("""
                INSERT INTO partition_moves (partition_id, from_shard, to_shard, phase, source_epoch, change_id)
                VALUES (?, ?, ?, 'copy', ?, ?)""", partitionId, fromShard, toShard, sourceEpoch, changeId);
    }

    /** Makes change {@code changeId} the one carrying a move on (it resumes it). */
    public void resumeMove(int partitionId, long changeId) {
        sql.update("UPDATE partition_moves SET change_id = ? WHERE partition_id = ?", changeId, partitionId);
    }

    public void setMovePhase(int partitionId, String phase) {
        sql.update("UPDATE partition_moves SET phase = ?, updated_at = now() WHERE partition_id = ?", phase, partitionId);
    }

    /** Records a move's copy as verified (its row count and checksum), at phase cutover. */
    public void moveVerified(int partitionId, long rows, String checksum) {
        sql.update("UPDATE partition_moves SET phase = 'cutover', row_count = ?, checksum = ?, updated_at = now()"
                + " WHERE partition_id = ?", rows, checksum, partitionId);
    }

    /** Forgets a finished move. */
    public void endMove(int partitionId) {
        sql.update("DELETE FROM partition_moves WHERE partition_id = ?", partitionId);
    }

    /** How many moves from or to {@code shardId} are unfinished. */
    public long movesOfShard(int shardId) {
        return sql.queryOne("SELECT count(*) FROM partition_moves WHERE from_shard = ? OR to_shard = ?",
                rs -> rs.getLong(1), shardId, shardId).orElseThrow();
    }

    /**
     * The cutover of a move, one transaction: the partition on its new shard at a new epoch, its lease ended (a
     * candidate of the new shard takes it), the move at phase cleanup. A partition no longer on the move's source
     * shard (an earlier cutover committed) keeps its epoch; the move goes to phase cleanup all the same.
     *
     * @param beforeCommit runs after the last statement, before the commit (a test's crash in the phase)
     * @return the partition's epoch afterwards
     */
    public long cutover(Move m, Runnable beforeCommit) {
        return sql.inTransaction(c -> {
            Partition locked = lockPartition(c, m.partitionId());
            long epoch = locked.epoch() + 1;
            if (locked.shardId() == m.fromShard()) {
                ControlSql.update(c, "UPDATE partitions SET shard_id = ?, epoch = ? WHERE partition_id = ?", m.toShard(),
                        epoch, m.partitionId());
                ControlSql.update(c, "DELETE FROM partition_leases WHERE partition_id = ?", m.partitionId());
            } else {
                epoch = locked.epoch();
            }
            ControlSql.update(c, "UPDATE partition_moves SET phase = 'cleanup', updated_at = now() WHERE partition_id = ?",
                    m.partitionId());
            beforeCommit.run();
            return epoch;
        });
    }

    // ---- shards -----------------------------------------------------------------------------------------------

    /** The shard databases: id to JDBC URL, in id order. */
    public Map<Integer, String> shardUrls() {
        return byShard("SELECT shard_id, jdbc_url FROM shards ORDER BY shard_id");
    }

    /** The shard databases' names, by id in id order. */
    public Map<Integer, String> shardNames() {
        return byShard("SELECT shard_id, name FROM shards ORDER BY shard_id");
    }

    private Map<Integer, String> byShard(String query) {
        Map<Integer, String> out = new java.util.TreeMap<>();
        sql.queryList(query, rs -> Map.entry(rs.getInt(1), rs.getString(2))).forEach(e -> out.put(e.getKey(), e.getValue()));
        return out;
    }

    /** Registers a shard database as {@code shard-<id>}, or changes its URL. */
    public void putShard(int shardId, String jdbcUrl) {
        sql.update("INSERT INTO shards (shard_id, jdbc_url, name) VALUES (?, ?, 'shard-' || ?) ON CONFLICT (shard_id)"
                + " DO UPDATE SET jdbc_url = EXCLUDED.jdbc_url", shardId, jdbcUrl, shardId);
    }

    /** Registers a shard database under a name. */
    public void addShard(int shardId, String jdbcUrl, String name) {
        sql.update("INSERT INTO shards (shard_id, jdbc_url, name) VALUES (?, ?, ?)", shardId, jdbcUrl, name);
    }

    public Optional<Integer> shardWithUrl(String jdbcUrl) {
        return sql.queryOne("SELECT shard_id FROM shards WHERE jdbc_url = ?", rs -> rs.getInt(1), jdbcUrl);
    }

    public Optional<Integer> shardNamed(String name) {
        return sql.queryOne("SELECT shard_id FROM shards WHERE name = ?", rs -> rs.getInt(1), name);
    }

    /** The shard named {@code shard}, or else whose id it is. */
    public Optional<Integer> shardByNameOrId(String shard) {
        return sql.queryOne("SELECT shard_id FROM shards WHERE name = ? OR shard_id::text = ?", rs -> rs.getInt(1),
                shard, shard);
    }

    /** The id a new shard gets: one past the highest. */
    public int nextShardId() {
        return sql.queryOne("SELECT coalesce(max(shard_id), 0) + 1 FROM shards", rs -> rs.getInt(1)).orElseThrow();
    }

    /** Every shard as {@code id (name)}, in id order. */
    public List<String> shardLabels() {
        return sql.queryList("SELECT shard_id || ' (' || name || ')' FROM shards ORDER BY shard_id", rs -> rs.getString(1));
    }

    /**
     * Removes a shard database, in one transaction: its nodes (their ended leases first; they are forgotten with it),
     * the candidacies for it, its migration status, and the shard. Its rows stay in its database.
     */
    public void removeShard(int shardId) {
        sql.inTransaction(c -> {
            ControlSql.update(c, """
                    DELETE FROM partition_leases WHERE lease_until < now()
                      AND host_id IN (SELECT host_id FROM hosts WHERE shard_id = ?)""", shardId);
            ControlSql.update(c, "DELETE FROM hosts WHERE shard_id = ?", shardId);
            ControlSql.update(c, "DELETE FROM host_shards WHERE shard_id = ?", shardId);
            ControlSql.update(c, "DELETE FROM table_migration_shards WHERE shard_id = ?", shardId);
            ControlSql.update(c, "DELETE FROM shards WHERE shard_id = ?", shardId);
            return null;
        });
    }

    /**
     * Deletes the leases of a table's partitions, inside the transaction that drops the table ({@link
     * TableCatalog#dropTable}, which has locked the partitions' rows, so no lease is taken meanwhile).
     */
    static void endLeasesOfTable(java.sql.Connection c, String tenant, String table) throws java.sql.SQLException {
        ControlSql.update(c, """
                DELETE FROM partition_leases WHERE partition_id IN
                  (SELECT partition_id FROM partitions WHERE tenant = ? AND table_name = ?)""", tenant, table);
    }
}
