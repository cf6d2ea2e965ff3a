package dev.thresher.store.control;

import java.time.Instant;
import java.util.List;
import javax.sql.DataSource;

/**
 * The audit of topology changes ({@code topology_changes}): who asked for which leader transfer, drain, split, move or
 * shard change, when, its steps and its outcome. Its only writer; the changes themselves are {@link TopologyStore}'s.
 */
public final class TopologyChanges {
    private final ControlSql sql;

    public TopologyChanges(DataSource db) {
        this.sql = new ControlSql(db);
    }

    /** A change recorded as running: its id and when it was asked for, by the control database's clock. */
    public record Started(long changeId, Instant requestedAt) {}

    /**
     * One change as recorded.
     *
     * @param outcome {@code running}, {@code planned}, {@code succeeded}, {@code refused} or {@code failed}
     * @param detail its steps, one a line; null or empty when none were recorded
     */
    public record Recorded(long changeId, String command, boolean dryRun, String outcome, String detail,
                           String requestedBy, Instant requestedAt) {}

    /** Records a change as running, before any of its work. */
    public Started start(String requestedBy, String command, boolean dryRun) {
        return sql.queryOne("""
                INSERT INTO topology_changes (requested_by, command, dry_run, outcome) VALUES (?, ?, ?, 'running')
                RETURNING change_id, requested_at""", rs -> new Started(rs.getLong(1), rs.getTimestamp(2).toInstant()),
                requestedBy, command, dryRun).orElseThrow();
    }

    /** Records how a change ended and its steps. */
    public void finish(long changeId, String outcome, String detail) {
        sql.update("UPDATE topology_changes SET outcome = ?, detail = ?, finished_at = now() WHERE change_id = ?",
                outcome, detail, changeId);
    }

    /** The latest {@code limit} changes, newest first. */
    public List<Recorded> latest(int limit) {
        return sql.queryList("""
                SELECT change_id, command, dry_run, outcome, detail, requested_by, requested_at FROM topology_changes
                ORDER BY change_id DESC LIMIT ?""", rs -> new Recorded(rs.getLong(1), rs.getString(2), rs.getBoolean(3),
                rs.getString(4), rs.getString(5), rs.getString(6), rs.getTimestamp(7).toInstant()), limit);
    }

    /**
     * Records the change that started (or last resumed) the move of a partition, when it is still recorded as running,
     * as failed: it ended without saying so, interrupted, and {@code resumedBy} takes the move over.
     */
    public void interruptedMove(int partitionId, long resumedBy) {
        sql.update("""
                UPDATE topology_changes SET outcome = 'failed', finished_at = now(),
                  detail = coalesce(detail || E'\n', '') || 'interrupted; resumed by change ' || ?
                WHERE change_id = (SELECT change_id FROM partition_moves WHERE partition_id = ?) AND outcome = 'running'""",
                resumedBy, partitionId);
    }
}
