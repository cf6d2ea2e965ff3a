package dev.thresher.server.admin;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.TopologyStore;
import dev.thresher.store.control.TopologyStore.Move;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.function.Consumer;

/**
 * The phases of a partition move once it is recorded in {@code partition_moves}, each recorded as it ends so that an
 * interrupted move resumes at the phase it stopped in: copy, verify and cutover with the source table locked
 * {@code SHARE}, then cleanup. Each phase reports its step as it ends; a test may stop the process right after one, as
 * a crash would ({@link #HALT_PROPERTY}).
 */
final class MovePhases {
    /** Names a phase after which a move stops the process at once, as a crash would (tests only). */
    static final String HALT_PROPERTY = "thresher.move.haltAfter";

    private final TableAdmin tables;
    private final PartitionCopy rows;
    private final TopologyStore topology;

    MovePhases(TableAdmin tables, PartitionCopy rows, TopologyStore topology) {
        this.tables = tables;
        this.rows = rows;
        this.topology = topology;
    }

    /**
     * The phases up to cleanup, from the one recorded: the rows copied to the target, their count and checksum
     * verified on both shards (a mismatch copies again, once), and the cutover. Writers of the table on the source wait
     * from the copy until the cutover: no row can land behind the copy.
     */
    void untilCleanup(Partition p, Move m, String sourceUrl, String targetUrl, Consumer<String> steps)
            throws SQLException, IOException, InterruptedException {
        int partitionId = p.id();
        String phase = m.phase();
        try (Connection source = tables.shardConnection(sourceUrl)) {
            source.setAutoCommit(false);
            try (Statement s = source.createStatement()) {
                s.execute("SET LOCAL lock_timeout = '30s'");
                s.execute("LOCK TABLE " + p.table() + " IN SHARE MODE");
            }
            for (int attempt = 1; !phase.equals("cleanup"); ) {
                switch (phase) {
                    case "copy" -> {
                        long copied = rows.copy(source, targetUrl, p);
                        halt("copy");
                        topology.setMovePhase(partitionId, "verify");
                        steps.accept("copied " + copied + " rows of partition " + partitionId + " to shard " + m.toShard());
                        phase = "verify";
                    }
                    case "verify" -> {
                        PartitionCopy.Checked src = PartitionCopy.rowsAndChecksum(source, p);
                        PartitionCopy.Checked dst;
                        try (Connection target = tables.shardConnection(targetUrl)) {
                            dst = PartitionCopy.rowsAndChecksum(target, p);
                        }
                        if (!src.equals(dst)) {
                            if (attempt++ >= 2) {
                                throw new ThresherException(ErrorCode.INTERNAL_ERROR, "partition " + partitionId
                                        + ": shard " + m.toShard() + " holds " + dst + " after copying " + src
                                        + " twice; the move stays at phase copy");
                            }
                            steps.accept("verify: shard " + m.toShard() + " holds " + dst + ", the source " + src
                                    + "; copying again");
                            topology.setMovePhase(partitionId, "copy");
                            phase = "copy";
                            continue;
                        }
                        halt("verify");
                        topology.moveVerified(partitionId, src.rows(), src.checksum());
                        steps.accept("verified: " + src.rows() + " rows, checksum " + src.checksum() + " on both shards");
                        phase = "cutover";
                    }
                    case "cutover" -> {
                        // one control-database transaction; a halt in the phase crashes before its commit
                        long epoch = topology.cutover(m, () -> halt("cutover"));
                        steps.accept("cut over: partition " + partitionId + " is on shard " + m.toShard() + " at epoch "
                                + epoch + "; its leadership passes to a candidate of shard " + m.toShard());
                        phase = "cleanup";
                    }
                    default -> throw new IllegalStateException("unknown move phase " + phase);
                }
            }
            source.rollback(); // ends the lock; the source wrote nothing
        }
    }

    /** Cleanup: the partition's rows removed from the source shard, now that the target serves them. */
    void cleanup(Partition p, Move m, String sourceUrl, Consumer<String> steps) throws SQLException {
        try (Connection source = tables.shardConnection(sourceUrl); PreparedStatement ps = source.prepareStatement(
                "DELETE FROM " + p.table() + " WHERE " + ShardReader.SLOT_COLUMN + " BETWEEN ? AND ?")) {
            source.setAutoCommit(true);
            ps.setInt(1, p.slotLo());
            ps.setInt(2, p.slotHi());
            int removed = ps.executeUpdate();
            halt("cleanup");
            steps.accept("removed " + removed + " rows of partition " + p.id() + " from shard " + m.fromShard());
        }
    }

    private static void halt(String phase) {
        if (phase.equals(System.getProperty(HALT_PROPERTY))) {
            System.out.println("halting in phase " + phase + " (" + HALT_PROPERTY + ")");
            System.out.flush();
            Runtime.getRuntime().halt(137);
        }
    }
}
