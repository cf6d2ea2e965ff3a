package dev.thresher.server;

import dev.thresher.bindings.TopologyService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Tiling;
import java.io.IOException;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.postgresql.PGConnection;

/**
 * The topology changes of {@link TopologyService} against the control database and the shard databases: leader
 * transfers, drains, splits, moves and shard databases added or removed. Each is checked first, planned only on a
 * dry run, and audited in {@code topology_changes} (docs/operations.md, "Changing the topology").
 *
 * <p>A move runs in phases recorded in {@code partition_moves}, each safe to run again: <b>copy</b> (the source
 * table locked {@code SHARE}, so writers wait, and the slot range copied into the target, whatever an earlier
 * attempt left there removed first), <b>verify</b> (row count and a content checksum of both sides, under the same
 * lock), <b>cutover</b> (one control-database transaction: the partition's shard and a new epoch, its lease ended),
 * <b>cleanup</b> (the source rows removed). Asking for the move again resumes it at its recorded phase.
 */
public final class TopologyAdmin implements TopologyService {
    /** Names a phase after which a move stops the process at once, as a crash would (tests only). */
    static final String HALT_PROPERTY = "thresher.move.haltAfter";
    private static final Pattern SHARD_NAME = Pattern.compile("[a-z_][a-z0-9_-]{0,62}");

    private final TableAdmin tables;
    private final DataSource control;
    private final long leaseMs;
    private final int partitionsPerCall;
    private final PrintStream out;

    /**
     * @param limits the nodes' limits: {@code partitionLeaseMs} (how long a change waits for the nodes to act on it is
     *     counted in leases) and {@code coordinationSlots} (a split that would leave a table with more partitions
     *     than one call may cover is refused)
     * @param out progress, one line per step as it happens (the command line prints it; a node discards it)
     */
    public TopologyAdmin(TableAdmin tables, dev.thresher.limits.Limits limits, PrintStream out) {
        this.tables = tables;
        this.control = tables.controlDb();
        this.leaseMs = limits.partitionLeaseMs();
        this.partitionsPerCall = limits.coordinationSlots();
        this.out = out;
    }

    // ---- the audit -----------------------------------------------------------------------------------------

    /** The steps of one change, printed as they happen. */
    private final class Steps {
        final List<String> lines = new ArrayList<>();
        /** The change's row in the audit. */
        long changeId;

        void add(String line) {
            lines.add(line);
            out.println(line);
            out.flush();
        }
    }

    private interface Work {
        void run(Steps steps) throws SQLException, IOException, InterruptedException;
    }

    private Change audited(String requestedBy, String command, boolean dryRun, Work work) {
        long id;
        Instant at;
        try (Connection c = control.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO topology_changes (requested_by, command, dry_run, outcome) VALUES (?, ?, ?, 'running')
                RETURNING change_id, requested_at""")) {
            ps.setString(1, requestedBy);
            ps.setString(2, command);
            ps.setBoolean(3, dryRun);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                id = rs.getLong(1);
                at = rs.getTimestamp(2).toInstant();
            }
        } catch (SQLException e) {
            throw store("control database", e);
        }
        Steps steps = new Steps();
        steps.changeId = id;
        String outcome = "failed";
        try {
            work.run(steps);
            outcome = dryRun ? "planned" : "succeeded";
            return new Change(id, command, dryRun, outcome, List.copyOf(steps.lines), requestedBy, at);
        } catch (ThresherException e) {
            outcome = e.code() == ErrorCode.TOPOLOGY_CHANGE_REFUSED || e.code() == ErrorCode.INVALID_ARGUMENTS
                    ? "refused" : "failed";
            steps.lines.add(outcome + ": " + e.getMessage());
            throw e;
        } catch (SQLException | IOException e) {
            ThresherException te = store("a database", e);
            steps.lines.add("failed: " + te.getMessage());
            throw te;
        } catch (RuntimeException e) {
            steps.lines.add("failed: " + e);
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            steps.lines.add("failed: interrupted");
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted", e);
        } finally {
            try (Connection c = control.getConnection(); PreparedStatement ps = c.prepareStatement("""
                    UPDATE topology_changes SET outcome = ?, detail = ?, finished_at = now() WHERE change_id = ?""")) {
                ps.setString(1, outcome);
                ps.setString(2, String.join("\n", steps.lines));
                ps.setLong(3, id);
                ps.executeUpdate();
            } catch (SQLException e) {
                out.println("could not record the outcome of change " + id + ": " + e.getMessage());
            }
        }
    }

    @Override
    public List<Change> changes(int limit) {
        List<Change> out = new ArrayList<>();
        try (Connection c = control.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT change_id, command, dry_run, outcome, detail, requested_by, requested_at FROM topology_changes
                ORDER BY change_id DESC LIMIT ?""")) {
            ps.setInt(1, Math.max(1, Math.min(limit, 10_000)));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String detail = rs.getString(5);
                    out.add(new Change(rs.getLong(1), rs.getString(2), rs.getBoolean(3), rs.getString(4),
                            detail == null || detail.isEmpty() ? List.of() : List.of(detail.split("\n")), rs.getString(6),
                            rs.getTimestamp(7).toInstant()));
                }
            }
        } catch (SQLException e) {
            throw store("control database", e);
        }
        return out;
    }

    // ---- leader transfer -------------------------------------------------------------------------------------

    @Override
    public Change transferLeader(String requestedBy, int partitionId, String toHost, boolean dryRun) {
        return audited(requestedBy, "leader transfer " + partitionId + " --to " + toHost + dryRunFlag(dryRun), dryRun,
                steps -> {
                    Partition p = partition(partitionId);
                    Lease lease = lease(partitionId).orElse(null);
                    requireCandidate(toHost, p.shardId(), "lead partition " + partitionId);
                    if (lease != null && lease.live() && lease.host().equals(toHost) && lease.epoch() == p.epoch()) {
                        steps.add("partition " + partitionId + " is led by " + toHost + " already (epoch " + p.epoch() + ")");
                        return;
                    }
                    steps.add("partition " + partitionId + " (shard " + p.shardId() + ", epoch " + p.epoch() + ") is led by "
                            + (lease != null && lease.live() ? lease.host() : "nobody") + "; " + toHost
                            + " is a live candidate of shard " + p.shardId());
                    if (dryRun) {
                        steps.add("would ask the leader to hand partition " + partitionId + " to " + toHost
                                + " (it stops renewing, ends its lease, and " + toHost + " takes it at a new epoch)");
                        return;
                    }
                    update("""
                            INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until, transfer_to)
                            VALUES (?, ?, ?, now() - interval '1 millisecond', ?)
                            ON CONFLICT (partition_id) DO UPDATE SET transfer_to = EXCLUDED.transfer_to""",
                            partitionId, toHost, p.epoch(), toHost);
                    steps.add("asked: transfer of partition " + partitionId + " to " + toHost);
                    long started = System.nanoTime();
                    Lease now = awaitLease(partitionId, l -> l.live() && l.host().equals(toHost) && l.transferTo() == null,
                            3 * leaseMs + 5_000);
                    if (now == null) {
                        throw new ThresherException(ErrorCode.INTERNAL_ERROR, toHost + " has not taken partition "
                                + partitionId + " within " + (3 * leaseMs + 5_000) + " ms; the transfer stays asked for");
                    }
                    steps.add("partition " + partitionId + " is led by " + toHost + " at epoch " + now.epoch() + " after "
                            + msSince(started) + " ms");
                });
    }

    // ---- drain ---------------------------------------------------------------------------------------------

    @Override
    public Change drainNode(String requestedBy, String hostId, boolean dryRun) {
        return audited(requestedBy, "node drain " + hostId + dryRunFlag(dryRun), dryRun, steps -> {
            requireHost(hostId);
            List<int[]> led = query("""
                    SELECT l.partition_id, p.shard_id FROM partition_leases l JOIN partitions p USING (partition_id)
                    WHERE l.host_id = ? AND l.lease_until > now() ORDER BY l.partition_id""",
                    rs -> new int[] {rs.getInt(1), rs.getInt(2)}, hostId);
            List<String> orphans = new ArrayList<>();
            for (int[] pl : led) {
                List<String> others = liveCandidates(pl[1], hostId);
                if (others.isEmpty()) {
                    orphans.add(Integer.toString(pl[0]));
                } else {
                    steps.add("partition " + pl[0] + " (shard " + pl[1] + ") passes to one of " + others);
                }
            }
            if (!orphans.isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "draining " + hostId + " would leave "
                        + (orphans.size() == 1 ? "partition " : "partitions ") + String.join(", ", orphans)
                        + " without a live candidate: start a node standing by for their shard first");
            }
            if (led.isEmpty()) {
                steps.add(hostId + " leads no partition");
            }
            if (dryRun) {
                steps.add("would drain " + hostId + ": it takes and renews no lease, and its " + led.size()
                        + " partitions pass to the candidates above");
                return;
            }
            update("UPDATE hosts SET draining = true WHERE host_id = ?", hostId);
            steps.add("asked: " + hostId + " drains");
            long started = System.nanoTime();
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * leaseMs + 5_000);
            while (true) {
                long still = count("SELECT count(*) FROM partition_leases WHERE host_id = ? AND lease_until > now()", hostId);
                long leaderless = count("""
                        SELECT count(*) FROM partitions p WHERE p.partition_id = ANY (?) AND NOT EXISTS (
                          SELECT 1 FROM partition_leases l WHERE l.partition_id = p.partition_id AND l.epoch = p.epoch
                            AND l.lease_until > now())""", (Object) led.stream().map(pl -> pl[0]).toArray(Integer[]::new));
                if (still == 0 && leaderless == 0) {
                    break;
                }
                if (System.nanoTime() - until > 0) {
                    throw new ThresherException(ErrorCode.INTERNAL_ERROR, hostId + " still leads " + still + " and "
                            + leaderless + " of its partitions have no leader after " + msSince(started)
                            + " ms; it stays draining");
                }
                Thread.sleep(100);
            }
            for (int[] pl : led) {
                Lease l = lease(pl[0]).orElseThrow();
                steps.add("partition " + pl[0] + " is led by " + l.host() + " at epoch " + l.epoch());
            }
            steps.add(hostId + " drained in " + msSince(started) + " ms; it still coordinates calls until stopped");
        });
    }

    @Override
    public Change undrainNode(String requestedBy, String hostId, boolean dryRun) {
        return audited(requestedBy, "node undrain " + hostId + dryRunFlag(dryRun), dryRun, steps -> {
            requireHost(hostId);
            if (dryRun) {
                steps.add("would let " + hostId + " lead again; its home shard's partitions return to it once it is settled");
                return;
            }
            update("UPDATE hosts SET draining = false WHERE host_id = ?", hostId);
            steps.add(hostId + " may lead again; its home shard's partitions return to it once it has been live for two"
                    + " leases");
        });
    }

    // ---- split ---------------------------------------------------------------------------------------------

    @Override
    public Change splitPartition(String requestedBy, int partitionId, OptionalInt at, boolean dryRun) {
        return audited(requestedBy, "partition split " + partitionId + (at.isPresent() ? " --at " + at.getAsInt() : "")
                + dryRunFlag(dryRun), dryRun, steps -> {
            Partition p = partition(partitionId);
            if (p.slotLo() == p.slotHi()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                        + " holds one slot (" + p.slotLo() + "); it cannot be split");
            }
            int first = at.orElse(p.slotLo() + (p.slotHi() - p.slotLo() + 1) / 2);
            if (first <= p.slotLo() || first > p.slotHi()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "--at is the first slot of the new partition: "
                        + (p.slotLo() + 1) + ".." + p.slotHi() + " for partition " + partitionId + ", was " + first);
            }
            requireNoMove(partitionId);
            long partitions = count("SELECT count(*) FROM partitions WHERE tenant = ? AND table_name = ?", p.tenant(),
                    p.table());
            if (partitions + 1 > partitionsPerCall) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "table " + p.table() + " has " + partitions
                        + " partitions; one more would be more than a call may cover (limits.coordinationSlots, "
                        + partitionsPerCall + ")");
            }
            long epoch = p.epoch() + 1;
            if (dryRun) {
                steps.add("would split partition " + partitionId + " (slots " + p.slotLo() + ".." + p.slotHi() + ", shard "
                        + p.shardId() + ", epoch " + p.epoch() + ") into " + partitionId + " (slots " + p.slotLo() + ".."
                        + (first - 1) + ") and a new partition (slots " + first + ".." + p.slotHi() + "), both at epoch "
                        + epoch + ", led by the same node; no row moves");
                return;
            }
            int newId;
            try (Connection c = control.getConnection()) {
                c.setAutoCommit(false);
                try {
                    try (Statement s = c.createStatement()) {
                        // partition ids are allocated max + 1: one allocation at a time
                        s.execute("LOCK TABLE partitions IN SHARE ROW EXCLUSIVE MODE");
                    }
                    Partition locked = lockPartition(c, partitionId);
                    if (locked.epoch() != p.epoch() || locked.slotHi() != p.slotHi() || locked.slotLo() != p.slotLo()) {
                        throw new ThresherException(ErrorCode.TARGET_STALE, "partition " + partitionId
                                + " changed while the split was planned; ask again");
                    }
                    try (Statement s = c.createStatement();
                         ResultSet rs = s.executeQuery("SELECT coalesce(max(partition_id), -1) + 1 FROM partitions")) {
                        rs.next();
                        newId = rs.getInt(1);
                    }
                    exec(c, "UPDATE partitions SET slot_hi = ?, epoch = ? WHERE partition_id = ?", first - 1, epoch, partitionId);
                    exec(c, """
                            INSERT INTO partitions (partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch)
                            VALUES (?, ?, ?, ?, ?, ?, ?)""", newId, p.tenant(), p.table(), first, p.slotHi(), p.shardId(), epoch);
                    // Leadership carries over: the leader's lease moves to the new epoch and covers the new partition too.
                    exec(c, "UPDATE partition_leases SET epoch = ? WHERE partition_id = ? AND epoch = ?", epoch, partitionId,
                            p.epoch());
                    exec(c, """
                            INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until, pinned)
                            SELECT ?, host_id, epoch, lease_until, pinned FROM partition_leases WHERE partition_id = ?""",
                            newId, partitionId);
                    List<Partition> after = new ArrayList<>();
                    try (PreparedStatement ps = c.prepareStatement("""
                            SELECT partition_id, slot_lo, slot_hi, shard_id, epoch FROM partitions
                            WHERE tenant = ? AND table_name = ?""")) {
                        ps.setString(1, p.tenant());
                        ps.setString(2, p.table());
                        try (ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                after.add(new Partition(rs.getInt(1), p.tenant(), p.table(), rs.getInt(2), rs.getInt(3),
                                        rs.getInt(4), rs.getLong(5)));
                            }
                        }
                    }
                    Optional<String> problem = Tiling.problem(after);
                    if (problem.isPresent()) {
                        throw new ThresherException(ErrorCode.PARTITIONS_DO_NOT_TILE, "the split would leave " + p.table()
                                + " not tiling: " + problem.get());
                    }
                    c.commit();
                } catch (SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                }
            }
            steps.add("split: partition " + partitionId + " is slots " + p.slotLo() + ".." + (first - 1) + ", partition "
                    + newId + " is slots " + first + ".." + p.slotHi() + ", both on shard " + p.shardId() + " at epoch "
                    + epoch);
        });
    }

    // ---- move ----------------------------------------------------------------------------------------------

    private record Move(int partitionId, int fromShard, int toShard, String phase, long sourceEpoch) {}

    @Override
    public Change movePartition(String requestedBy, int partitionId, String toShard, boolean dryRun) {
        return audited(requestedBy, "partition move " + partitionId + " --to " + toShard + dryRunFlag(dryRun), dryRun,
                steps -> move(steps, partitionId, toShard, dryRun));
    }

    private void move(Steps steps, int partitionId, String toShardArg, boolean dryRun)
            throws SQLException, IOException, InterruptedException {
        Partition p = partition(partitionId);
        int to = shardId(toShardArg);
        Map<Integer, String> urls = tables.shardUrls();
        Optional<Move> recorded = recordedMove(partitionId);
        if (recorded.isPresent() && recorded.get().toShard() != to) {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                    + " is being moved to shard " + recorded.get().toShard() + " (phase " + recorded.get().phase()
                    + "); ask for that move again to resume it");
        }
        if (recorded.isEmpty()) {
            if (p.shardId() == to) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                        + " is on shard " + to + " already");
            }
            checkResidency(p, to);
            tables.checkWritable(to, urls.get(to));
            steps.add("partition " + partitionId + " of " + p.table() + " (slots " + p.slotLo() + ".." + p.slotHi()
                    + ", epoch " + p.epoch() + ") is on shard " + p.shardId() + "; shard " + to + " is reachable and writable");
            if (dryRun) {
                long rows = rowsAndChecksum(urls.get(p.shardId()), p).rows();
                steps.add("would copy " + rows + " rows from shard " + p.shardId() + " to shard " + to
                        + " (writes to " + p.table() + " on shard " + p.shardId() + " wait meanwhile), verify their count and"
                        + " checksum, cut over to epoch " + (p.epoch() + 1) + " and remove them from shard " + p.shardId());
                return;
            }
            update("""
                    INSERT INTO partition_moves (partition_id, from_shard, to_shard, phase, source_epoch, change_id)
                    VALUES (?, ?, ?, 'copy', ?, ?)""", partitionId, p.shardId(), to, p.epoch(), steps.changeId);
            recorded = recordedMove(partitionId);
        } else {
            steps.add("resuming the move of partition " + partitionId + " from shard " + recorded.get().fromShard()
                    + " to shard " + to + " at phase " + recorded.get().phase());
            if (dryRun) {
                steps.add("would resume it at phase " + recorded.get().phase());
                return;
            }
            // the change that started it (or last resumed it) ended without saying so: it was interrupted
            update("""
                    UPDATE topology_changes SET outcome = 'failed', finished_at = now(),
                      detail = coalesce(detail || E'\n', '') || 'interrupted; resumed by change ' || ?
                    WHERE change_id = (SELECT change_id FROM partition_moves WHERE partition_id = ?) AND outcome = 'running'""",
                    steps.changeId, partitionId);
            update("UPDATE partition_moves SET change_id = ? WHERE partition_id = ?", steps.changeId, partitionId);
        }
        Move m = recorded.orElseThrow();
        String sourceUrl = urls.get(m.fromShard());
        String targetUrl = urls.get(m.toShard());
        String phase = m.phase();
        if (!phase.equals("cleanup")) {
            // Writers of the table on the source wait from the copy until the cutover: no row can land behind the copy.
            try (Connection source = tables.shardConnection(sourceUrl)) {
                source.setAutoCommit(false);
                try (Statement s = source.createStatement()) {
                    s.execute("SET LOCAL lock_timeout = '30s'");
                    s.execute("LOCK TABLE " + p.table() + " IN SHARE MODE");
                }
                for (int attempt = 1; !phase.equals("cleanup"); ) {
                    switch (phase) {
                        case "copy" -> {
                            long copied = copy(source, targetUrl, p);
                            halt("copy");
                            setPhase(partitionId, "verify");
                            steps.add("copied " + copied + " rows of partition " + partitionId + " to shard " + m.toShard());
                            phase = "verify";
                        }
                        case "verify" -> {
                            Checked src = rowsAndChecksum(source, p);
                            Checked dst;
                            try (Connection target = tables.shardConnection(targetUrl)) {
                                dst = rowsAndChecksum(target, p);
                            }
                            if (!src.equals(dst)) {
                                if (attempt++ >= 2) {
                                    throw new ThresherException(ErrorCode.INTERNAL_ERROR, "partition " + partitionId
                                            + ": shard " + m.toShard() + " holds " + dst + " after copying " + src
                                            + " twice; the move stays at phase copy");
                                }
                                steps.add("verify: shard " + m.toShard() + " holds " + dst + ", the source " + src
                                        + "; copying again");
                                setPhase(partitionId, "copy");
                                phase = "copy";
                                continue;
                            }
                            halt("verify");
                            update("UPDATE partition_moves SET phase = 'cutover', row_count = ?, checksum = ?, updated_at = now()"
                                    + " WHERE partition_id = ?", src.rows(), src.checksum(), partitionId);
                            steps.add("verified: " + src.rows() + " rows, checksum " + src.checksum() + " on both shards");
                            phase = "cutover";
                        }
                        case "cutover" -> {
                            long epoch = cutover(m);
                            steps.add("cut over: partition " + partitionId + " is on shard " + m.toShard() + " at epoch "
                                    + epoch + "; its leadership passes to a candidate of shard " + m.toShard());
                            phase = "cleanup";
                        }
                        default -> throw new IllegalStateException("unknown move phase " + phase);
                    }
                }
                source.rollback(); // ends the lock; the source wrote nothing
            }
        }
        try (Connection source = tables.shardConnection(sourceUrl); PreparedStatement ps = source.prepareStatement(
                "DELETE FROM " + p.table() + " WHERE " + ShardReader.SLOT_COLUMN + " BETWEEN ? AND ?")) {
            source.setAutoCommit(true);
            ps.setInt(1, p.slotLo());
            ps.setInt(2, p.slotHi());
            int removed = ps.executeUpdate();
            halt("cleanup");
            steps.add("removed " + removed + " rows of partition " + partitionId + " from shard " + m.fromShard());
        }
        update("DELETE FROM partition_moves WHERE partition_id = ?", partitionId);
        Lease lease = awaitLease(partitionId, l -> l.live(), 3 * leaseMs + 5_000);
        steps.add("partition " + partitionId + " moved to shard " + m.toShard()
                + (lease == null ? "; no node leads it yet (is a node a candidate of shard " + m.toShard() + "?)"
                : ", led by " + lease.host() + " at epoch " + lease.epoch()));
    }

    /** Copies the partition's rows from the (locked) source into the target, replacing what the target held of them. */
    private long copy(Connection source, String targetUrl, Partition p) throws SQLException, IOException, InterruptedException {
        String range = ShardReader.SLOT_COLUMN + " BETWEEN " + p.slotLo() + " AND " + p.slotHi();
        try (Connection target = tables.shardConnection(targetUrl)) {
            target.setAutoCommit(false);
            try {
                ensureTable(target, p);
                try (Statement s = target.createStatement()) {
                    s.executeUpdate("DELETE FROM " + p.table() + " WHERE " + range); // an interrupted copy's rows
                }
                String columns = String.join(", ", columnsOf(source, p.table()));
                PipedInputStream in = new PipedInputStream(1 << 16);
                PipedOutputStream pipe = new PipedOutputStream(in);
                CompletableFuture<Long> reading = CompletableFuture.supplyAsync(() -> {
                    try (pipe) {
                        return source.unwrap(PGConnection.class).getCopyAPI().copyOut("COPY (SELECT " + columns + " FROM "
                                + p.table() + " WHERE " + range + ") TO STDOUT (FORMAT binary)", pipe);
                    } catch (SQLException | IOException e) {
                        throw new java.util.concurrent.CompletionException(e);
                    }
                });
                long copied;
                try {
                    copied = target.unwrap(PGConnection.class).getCopyAPI().copyIn("COPY " + p.table() + " (" + columns
                            + ") FROM STDIN (FORMAT binary)", in);
                } finally {
                    in.close();
                }
                long read;
                try {
                    read = reading.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException ce ? ce.getCause()
                            : e.getCause();
                    if (cause instanceof SQLException se) {
                        throw se;
                    }
                    throw new IOException(cause);
                }
                if (read != copied) {
                    throw new ThresherException(ErrorCode.INTERNAL_ERROR, "read " + read + " rows of partition " + p.id()
                            + " but copied " + copied);
                }
                target.commit();
                return copied;
            } catch (SQLException | IOException | RuntimeException e) {
                target.rollback();
                throw e;
            }
        }
    }

    /**
     * The table on the target: created from its recorded migrations when missing there; for a table partitioned by
     * slot, a child for the partition's range (or, when that overlaps a child already there, a default child).
     */
    private void ensureTable(Connection target, Partition p) throws SQLException {
        String kind = null;
        try (PreparedStatement ps = target.prepareStatement(
                "SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass(?)")) {
            ps.setString(1, p.table());
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    kind = rs.getString(1);
                }
            }
        }
        if (kind == null) {
            List<String[]> migrations = query("""
                    SELECT version::text, ddl, description FROM table_migrations WHERE tenant = ? AND table_name = ?
                    ORDER BY version""", rs -> new String[] {rs.getString(1), rs.getString(2), rs.getString(3)},
                    p.tenant(), p.table());
            if (migrations.isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "table " + p.table()
                        + " is not on the target shard and has no recorded migrations to create it there from");
            }
            try (Statement s = target.createStatement()) {
                s.execute(TableAdmin.HISTORY_DDL);
                for (String[] m : migrations) {
                    s.execute(m[1]);
                }
            }
            for (String[] m : migrations) {
                try (PreparedStatement h = target.prepareStatement("INSERT INTO thresher_schema_history (table_name, version,"
                        + " description) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")) {
                    h.setString(1, p.table());
                    h.setInt(2, Integer.parseInt(m[0]));
                    h.setString(3, m[2]);
                    h.executeUpdate();
                }
            }
            kind = "p";
        }
        if (!kind.equals("p")) {
            return;
        }
        try (Statement s = target.createStatement()) {
            s.execute("SAVEPOINT child");
            try {
                s.execute("CREATE TABLE %s_p%d PARTITION OF %s FOR VALUES FROM (%d) TO (%d)"
                        .formatted(p.table(), p.id(), p.table(), p.slotLo(), p.slotHi() + 1));
                // a replica identity of its own, so leader replicas can stream its updates and deletes
                s.execute("ALTER TABLE %s_p%d REPLICA IDENTITY FULL".formatted(p.table(), p.id()));
                s.execute("RELEASE SAVEPOINT child");
            } catch (SQLException e) {
                // a child already covers part of the range (the partition was here before, or split from one that was)
                s.execute("ROLLBACK TO SAVEPOINT child");
                s.execute("CREATE TABLE IF NOT EXISTS %s_default PARTITION OF %s DEFAULT".formatted(p.table(), p.table()));
                s.execute("ALTER TABLE %s_default REPLICA IDENTITY FULL".formatted(p.table()));
            }
        }
    }

    private static List<String> columnsOf(Connection c, String table) throws SQLException {
        List<String> columns = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(?) AND attnum > 0 AND NOT attisdropped
                ORDER BY attnum""")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add('"' + rs.getString(1).replace("\"", "\"\"") + '"');
                }
            }
        }
        return columns;
    }

    /** A slot range's row count and content checksum: the sum of a 60-bit hash of each row's text. */
    record Checked(long rows, String checksum) {
        @Override
        public String toString() {
            return rows + " rows (checksum " + checksum + ")";
        }
    }

    private Checked rowsAndChecksum(String url, Partition p) throws SQLException {
        try (Connection c = tables.shardConnection(url)) {
            return rowsAndChecksum(c, p);
        }
    }

    private static Checked rowsAndChecksum(Connection c, Partition p) throws SQLException {
        List<String> columns = columnsOf(c, p.table());
        String row = "ROW(" + String.join(", ", columns) + ")::text";
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*), coalesce(sum(('x' || substr(md5(" + row
                + "), 1, 15))::bit(60)::bigint::numeric), 0)::text FROM " + p.table() + " WHERE " + ShardReader.SLOT_COLUMN
                + " BETWEEN ? AND ?")) {
            ps.setInt(1, p.slotLo());
            ps.setInt(2, p.slotHi());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Checked(rs.getLong(1), rs.getString(2));
            }
        }
    }

    /**
     * The cutover, one transaction: the partition on its new shard at a new epoch, its lease ended (a candidate of
     * the new shard takes it), the move at phase cleanup.
     *
     * @return the new epoch
     */
    private long cutover(Move m) throws SQLException {
        try (Connection c = control.getConnection()) {
            c.setAutoCommit(false);
            try {
                Partition locked = lockPartition(c, m.partitionId());
                long epoch = locked.epoch() + 1;
                if (locked.shardId() == m.fromShard()) {
                    exec(c, "UPDATE partitions SET shard_id = ?, epoch = ? WHERE partition_id = ?", m.toShard(), epoch,
                            m.partitionId());
                    exec(c, "DELETE FROM partition_leases WHERE partition_id = ?", m.partitionId());
                } else {
                    epoch = locked.epoch();
                }
                exec(c, "UPDATE partition_moves SET phase = 'cleanup', updated_at = now() WHERE partition_id = ?",
                        m.partitionId());
                halt("cutover");
                c.commit();
                return epoch;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }

    private static void halt(String phase) {
        if (phase.equals(System.getProperty(HALT_PROPERTY))) {
            System.out.println("halting in phase " + phase + " (" + HALT_PROPERTY + ")");
            System.out.flush();
            Runtime.getRuntime().halt(137);
        }
    }

    private void setPhase(int partitionId, String phase) {
        update("UPDATE partition_moves SET phase = ?, updated_at = now() WHERE partition_id = ?", phase, partitionId);
    }

    private Optional<Move> recordedMove(int partitionId) {
        return query("""
                SELECT partition_id, from_shard, to_shard, phase, source_epoch FROM partition_moves WHERE partition_id = ?""",
                rs -> new Move(rs.getInt(1), rs.getInt(2), rs.getInt(3), rs.getString(4), rs.getLong(5)), partitionId)
                .stream().findFirst();
    }

    private void requireNoMove(int partitionId) {
        recordedMove(partitionId).ifPresent(m -> {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                    + " is being moved to shard " + m.toShard() + " (phase " + m.phase() + "); finish the move first");
        });
    }

    private void checkResidency(Partition p, int to) {
        List<String> residency = query("""
                SELECT array_to_string(residency, ',') FROM user_tables WHERE tenant = ? AND table_name = ?
                  AND residency IS NOT NULL""", rs -> rs.getString(1), p.tenant(), p.table());
        if (!residency.isEmpty() && !List.of(residency.get(0).split(",")).contains(Integer.toString(to))) {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "table " + p.table() + " is resident on shards "
                    + residency.get(0) + " only; shard " + to + " is not among them");
        }
    }

    // ---- shards --------------------------------------------------------------------------------------------

    /**
     * Registers a shard database. The first ones of a new cluster are registered before any node has run, on an empty
     * control database: its schema is created (or brought up to date) first, as a node does at start.
     */
    @Override
    public Change addShard(String requestedBy, String jdbcUrl, Optional<String> name, boolean dryRun) {
        try {
            ControlStore.migrate(control);
        } catch (RuntimeException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: " + e.getMessage(), e);
        }
        return audited(requestedBy, "shard add " + redacted(jdbcUrl) + name.map(n -> " --name " + n).orElse("")
                + dryRunFlag(dryRun), dryRun, steps -> {
            if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql://")) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a shard database is a jdbc:postgresql:// URL");
            }
            if (name.isPresent() && !SHARD_NAME.matcher(name.get()).matches()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a shard name is a lower-case letter or '_', then"
                        + " letters, digits, '_' or '-', at most 63 characters");
            }
            if (!query("SELECT shard_id FROM shards WHERE jdbc_url = ?", rs -> rs.getInt(1), jdbcUrl).isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "that database is a shard already");
            }
            int id = (int) count("SELECT coalesce(max(shard_id), 0) + 1 FROM shards");
            String shardName = name.orElse("shard-" + id);
            if (!query("SELECT shard_id FROM shards WHERE name = ?", rs -> rs.getInt(1), shardName).isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "a shard is named " + shardName + " already");
            }
            tables.checkWritable(id, jdbcUrl);
            steps.add("the database is reachable and writable");
            if (dryRun) {
                steps.add("would register it as shard " + id + " (" + shardName + ")");
                return;
            }
            update("INSERT INTO shards (shard_id, jdbc_url, name) VALUES (?, ?, ?)", id, jdbcUrl, shardName);
            steps.add("registered as shard " + id + " (" + shardName + "); no node serves it yet: start one with"
                    + " node.shardId=" + id + " (its home) or list it in another node's node.standbyShards, then move"
                    + " partitions to it");
        });
    }

    @Override
    public Change removeShard(String requestedBy, String shard, boolean dryRun) {
        return audited(requestedBy, "shard remove " + shard + dryRunFlag(dryRun), dryRun, steps -> {
            int id = shardId(shard);
            long partitions = count("SELECT count(*) FROM partitions WHERE shard_id = ?", id);
            if (partitions > 0) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "shard " + id + " holds " + partitions
                        + " partitions; move them away first (thresher partition move ID --to SHARD)");
            }
            long moves = count("SELECT count(*) FROM partition_moves WHERE from_shard = ? OR to_shard = ?", id, id);
            if (moves > 0) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "a partition move from or to shard " + id
                        + " is unfinished; finish it first");
            }
            List<String> live = query("""
                    SELECT host_id FROM hosts WHERE shard_id = ?
                      AND heartbeat_at > now() - make_interval(secs => ? / 1000.0) ORDER BY host_id""",
                    rs -> rs.getString(1), id, 2 * leaseMs);
            if (!live.isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, (live.size() == 1 ? "node " + live.get(0)
                        + " is running with shard " + id + " as its home shard; stop it first" : "nodes "
                        + String.join(", ", live) + " are running with shard " + id + " as their home shard; stop them first"));
            }
            List<String> stopped = query("SELECT host_id FROM hosts WHERE shard_id = ? ORDER BY host_id",
                    rs -> rs.getString(1), id);
            steps.add("shard " + id + " holds no partition and no running node has it as its home"
                    + (stopped.isEmpty() ? "" : "; stopped node(s) " + stopped + " had, and are forgotten with it"));
            if (dryRun) {
                steps.add("would remove shard " + id + " (its rows stay in its database)");
                return;
            }
            try (Connection c = control.getConnection()) {
                c.setAutoCommit(false);
                try {
                    exec(c, """
                            DELETE FROM partition_leases WHERE lease_until < now()
                              AND host_id IN (SELECT host_id FROM hosts WHERE shard_id = ?)""", id);
                    exec(c, "DELETE FROM hosts WHERE shard_id = ?", id);
                    exec(c, "DELETE FROM host_shards WHERE shard_id = ?", id);
                    exec(c, "DELETE FROM table_migration_shards WHERE shard_id = ?", id);
                    exec(c, "DELETE FROM shards WHERE shard_id = ?", id);
                    c.commit();
                } catch (SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                }
            }
            steps.add("removed shard " + id);
        });
    }

    // ---- reading the topology ----------------------------------------------------------------------------------

    private record Lease(String host, long epoch, boolean live, String transferTo) {}

    private Partition partition(int id) {
        return query("""
                SELECT partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch FROM partitions
                WHERE partition_id = ?""", rs -> new Partition(rs.getInt(1), rs.getString(2), rs.getString(3),
                rs.getInt(4), rs.getInt(5), rs.getInt(6), rs.getLong(7)), id).stream().findFirst()
                .orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no partition " + id));
    }

    private static Partition lockPartition(Connection c, int id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch FROM partitions
                WHERE partition_id = ? FOR UPDATE""")) {
            ps.setInt(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no partition " + id);
                }
                return new Partition(rs.getInt(1), rs.getString(2), rs.getString(3), rs.getInt(4), rs.getInt(5),
                        rs.getInt(6), rs.getLong(7));
            }
        }
    }

    private Optional<Lease> lease(int partitionId) {
        return query("""
                SELECT host_id, epoch, lease_until > now(), transfer_to FROM partition_leases WHERE partition_id = ?""",
                rs -> new Lease(rs.getString(1), rs.getLong(2), rs.getBoolean(3), rs.getString(4)), partitionId)
                .stream().findFirst();
    }

    private Lease awaitLease(int partitionId, java.util.function.Predicate<Lease> until, long boundMs)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
        while (true) {
            long epoch = partition(partitionId).epoch();
            Optional<Lease> l = lease(partitionId);
            if (l.isPresent() && l.get().epoch() == epoch && until.test(l.get())) {
                return l.get();
            }
            if (System.nanoTime() - end > 0) {
                return null;
            }
            Thread.sleep(100);
        }
    }

    private void requireHost(String hostId) {
        if (query("SELECT host_id FROM hosts WHERE host_id = ?", rs -> rs.getString(1), hostId).isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no node " + hostId + "; the nodes are "
                    + query("SELECT host_id FROM hosts ORDER BY host_id", rs -> rs.getString(1)));
        }
    }

    private void requireCandidate(String hostId, int shard, String what) {
        requireHost(hostId);
        if (!liveCandidates(shard, null).contains(hostId)) {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, hostId + " cannot " + what + ": it is not a"
                    + " live, undrained candidate of shard " + shard + "; the live candidates are " + liveCandidates(shard, null));
        }
    }

    /** The live, undrained candidate nodes of a shard, but {@code except}. */
    private List<String> liveCandidates(int shard, String except) {
        return query("""
                SELECT h.host_id FROM host_shards hs JOIN hosts h ON h.host_id = hs.host_id
                WHERE hs.shard_id = ? AND NOT h.draining AND h.heartbeat_at > now() - make_interval(secs => ? / 1000.0)
                  AND h.host_id IS DISTINCT FROM ?
                ORDER BY NOT hs.home, h.host_id""", rs -> rs.getString(1), shard, leaseMs, except);
    }

    /** A shard by id or name. */
    private int shardId(String shard) {
        if (shard == null || shard.isBlank()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "name a shard by its id or name");
        }
        List<Integer> found = query("SELECT shard_id FROM shards WHERE name = ? OR shard_id::text = ?", rs -> rs.getInt(1),
                shard, shard);
        if (found.isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no shard " + shard + "; the shards are "
                    + query("SELECT shard_id || ' (' || name || ')' FROM shards ORDER BY shard_id", rs -> rs.getString(1)));
        }
        return found.get(0);
    }

    // ---- plumbing ----------------------------------------------------------------------------------------------

    private interface Row<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private <T> List<T> query(String sql, Row<T> row, Object... args) {
        try (Connection c = control.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(c, ps, args);
            List<T> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(row.read(rs));
                }
            }
            return out;
        } catch (SQLException e) {
            throw store("control database", e);
        }
    }

    private long count(String sql, Object... args) {
        return query(sql, rs -> rs.getLong(1), args).get(0);
    }

    private int update(String sql, Object... args) {
        try (Connection c = control.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(c, ps, args);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw store("control database", e);
        }
    }

    private static void exec(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(c, ps, args);
            ps.executeUpdate();
        }
    }

    private static void bind(Connection c, PreparedStatement ps, Object... args) throws SQLException {
        for (int i = 0; i < args.length; i++) {
            Object a = args[i];
            if (a instanceof Integer[] ints) {
                ps.setArray(i + 1, c.createArrayOf("integer", ints));
            } else {
                ps.setObject(i + 1, a);
            }
        }
    }

    private static ThresherException store(String what, Exception e) {
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, what + ": " + e.getMessage(), e);
    }

    private static String dryRunFlag(boolean dryRun) {
        return dryRun ? " --dry-run" : "";
    }

    /** A JDBC URL without its query (where a password may be). */
    private static String redacted(String url) {
        return url == null ? "" : url.replaceAll("\\?.*", "");
    }

    private static long msSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }
}
