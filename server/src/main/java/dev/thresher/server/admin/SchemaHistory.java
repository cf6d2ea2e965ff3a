package dev.thresher.server.admin;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Each shard database's record of the migrations it applied to its tables ({@code thresher_schema_history}, made on
 * first use): a migration is applied there at most once, in one transaction with its row, whatever the control
 * database heard of it.
 */
final class SchemaHistory {
    static final String DDL = """
            CREATE TABLE IF NOT EXISTS thresher_schema_history (
                table_name   text NOT NULL,
                version      integer NOT NULL,
                description  text NOT NULL,
                applied_at   timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (table_name, version))""";

    private SchemaHistory() {
    }

    /** Records that {@code version} of {@code table} is applied here (in the caller's transaction); once only. */
    static void record(Connection c, String table, int version, String description) throws SQLException {
        try (PreparedStatement h = c.prepareStatement("INSERT INTO thresher_schema_history (table_name, version,"
                + " description) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")) {
            h.setString(1, table);
            h.setInt(2, version);
            h.setString(3, description);
            h.executeUpdate();
        }
    }

    /**
     * Applies one migration of {@code table} on the shard database {@code c} is open on, with its history row in the
     * same transaction, unless the history says it was applied before (its status had not reached the control
     * database); a lock held longer than 10 s by a load or call fails it there rather than making them wait.
     *
     * @return null, or the database's error
     */
    static String apply(Connection c, String table, int version, String description, String ddl) {
        try (Statement s = c.createStatement()) {
            s.execute(DDL);
            c.setAutoCommit(false);
            try (PreparedStatement seen = c.prepareStatement(
                    "SELECT 1 FROM thresher_schema_history WHERE table_name = ? AND version = ?")) {
                seen.setString(1, table);
                seen.setInt(2, version);
                try (ResultSet rs = seen.executeQuery()) {
                    if (rs.next()) {
                        c.rollback();
                        return null;
                    }
                }
            }
            s.execute("SET LOCAL lock_timeout = '10s'");
            s.execute(ddl);
            record(c, table, version, description);
            c.commit();
            return null;
        } catch (SQLException e) {
            String m = e.getMessage() == null ? e.toString() : e.getMessage();
            return m.lines().findFirst().orElse(m).replaceFirst("^ERROR: ", "");
        }
    }
}
