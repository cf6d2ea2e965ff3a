package dev.thresher.store;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * What a node's pools may open against one PostgreSQL server, held against what the server allows:
 * {@code max_connections} less {@code superuser_reserved_connections} (and
 * {@code reserved_connections}, PostgreSQL 16+). A node whose own pools cannot fit is refused at boot;
 * nodes that fit alone but not together (the registered nodes of the cluster, each opening as many)
 * are warned about, since they fail later, under load, with "too many clients".
 *
 * @param database what the budget is for, as the log names it
 * @param perNode connections this node may open at most
 * @param nodes nodes that open connections against the same server (this one included)
 * @param available connections the server gives to ordinary roles
 * @param most connections all of those nodes together may open at most
 */
public record ConnectionBudget(String database, int perNode, int nodes, int available, long most) {
    /** The verdict on a budget. */
    public enum Verdict { FITS, CLUSTER_DOES_NOT_FIT, NODE_DOES_NOT_FIT }

    /** A budget where each of {@code nodes} opens as many as this one. */
    public ConnectionBudget(String database, int perNode, int nodes, int available) {
        this(database, perNode, nodes, available, (long) perNode * nodes);
    }

    public Verdict verdict() {
        if (perNode > available) {
            return Verdict.NODE_DOES_NOT_FIT;
        }
        return most > available ? Verdict.CLUSTER_DOES_NOT_FIT : Verdict.FITS;
    }

    /** One line for the log: the figures and the verdict. */
    public String describe() {
        return database + ": this node opens at most " + perNode + " connections, " + nodes + " node(s) at most "
                + most + "; the server allows " + available + " (max_connections less reserved)"
                + switch (verdict()) {
                    case FITS -> "";
                    case CLUSTER_DOES_NOT_FIT -> " — the nodes together can exhaust it: raise max_connections or lower"
                            + " the pools (limits.shardConcurrency)";
                    case NODE_DOES_NOT_FIT -> " — this node alone cannot fit";
                };
    }

    /**
     * Reads what {@code db}'s server allows.
     *
     * @throws ThresherException {@link ErrorCode#STORE_UNAVAILABLE} when it cannot be read
     */
    public static int available(DataSource db) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("""
                     SELECT current_setting('max_connections')::int
                          - current_setting('superuser_reserved_connections')::int
                          - coalesce(current_setting('reserved_connections', true)::int, 0)""")) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "cannot read max_connections: " + e.getMessage(), e);
        }
    }

    /**
     * Logs the budget's line through {@code log}, and refuses a node that cannot fit.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} for {@link Verdict#NODE_DOES_NOT_FIT}
     */
    public void check(org.slf4j.Logger log) {
        switch (verdict()) {
            case FITS -> log.info("connection budget, {}", describe());
            case CLUSTER_DOES_NOT_FIT -> log.warn("connection budget, {}", describe());
            case NODE_DOES_NOT_FIT -> throw new ThresherException(ErrorCode.INVALID_CONFIGURATION,
                    "connection budget, " + describe());
        }
    }
}
