package dev.thresher.server.admin;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.TableCatalog;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import java.io.IOException;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.postgresql.PGConnection;

/**
 * What a partition move does on the shard databases ({@link TopologyAdmin#movePartition}): the table made ready on the
 * target, the partition's rows copied there in binary, and a slot range's rows counted and checksummed on either side.
 */
final class PartitionCopy {
    private final TableAdmin tables;

    PartitionCopy(TableAdmin tables) {
        this.tables = tables;
    }

    /** Copies the partition's rows from the (locked) source into the target, replacing what the target held of them. */
    long copy(Connection source, String targetUrl, Partition p) throws SQLException, IOException, InterruptedException {
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
            List<TableCatalog.TableMigration> migrations = tables.control().tables().tableMigrations(p.tenant(), p.table());
            if (migrations.isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "table " + p.table()
                        + " is not on the target shard and has no recorded migrations to create it there from");
            }
            try (Statement s = target.createStatement()) {
                s.execute(SchemaHistory.DDL);
                for (TableCatalog.TableMigration m : migrations) {
                    s.execute(m.ddl());
                }
            }
            for (TableCatalog.TableMigration m : migrations) {
                SchemaHistory.record(target, p.table(), m.version(), m.description());
            }
            kind = "p";
        }
        if (!kind.equals("p")) {
            return;
        }
        try (Statement s = target.createStatement()) {
            s.execute("SAVEPOINT child");
            try {
                s.execute("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%d) TO (%d)"
                        .formatted(TableAdmin.childName(p.table(), p.id()), p.table(), p.slotLo(), p.slotHi() + 1));
                // a replica identity of its own, so leader replicas can stream its updates and deletes
                s.execute("ALTER TABLE %s REPLICA IDENTITY FULL".formatted(TableAdmin.childName(p.table(), p.id())));
                s.execute("RELEASE SAVEPOINT child");
            } catch (SQLException e) {
                // a child already covers part of the range (the partition was here before, or split from one that was)
                s.execute("ROLLBACK TO SAVEPOINT child");
                s.execute("CREATE TABLE IF NOT EXISTS %s PARTITION OF %s DEFAULT".formatted(
                        TableAdmin.defaultChildName(p.table()), p.table()));
                s.execute("ALTER TABLE %s REPLICA IDENTITY FULL".formatted(TableAdmin.defaultChildName(p.table())));
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

    Checked rowsAndChecksum(String url, Partition p) throws SQLException {
        try (Connection c = tables.shardConnection(url)) {
            return rowsAndChecksum(c, p);
        }
    }

    static Checked rowsAndChecksum(Connection c, Partition p) throws SQLException {
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

}
