package dev.thresher.store.control;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import dev.thresher.topology.Tiling;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * The control database's catalog of distributed tables, its one writer: the tables ({@code user_tables}: key and
 * residency), their partitions as table admin creates and drops them, and each
 * table's schema migrations with what every shard database did with them ({@code table_migrations},
 * {@code table_migration_shards}). The tables on the shard databases themselves are the table admin's; this class
 * holds only the control database's record of them. Each method is one auto-commit statement or one transaction.
 */
public final class TableCatalog {
    /** A migration a shard database has not applied yet: pending, or failed before. */
    public record PendingMigration(int shardId, int version, String description, String ddl) {}

    /**
     * One migration of a table and each shard database's state of it ({@code pending}, {@code applied},
     * {@code failed}) and error, by shard id.
     */
    public record Migration(int version, String description, Map<Integer, String> states, Map<Integer, String> errors) {}

    /** One row of {@code user_tables}: a table's name, its key column and the key's type. */
    public record Table(String name, String keyColumn, String keyType) {}

    private final ControlSql sql;

    public TableCatalog(DataSource db) {
        this.sql = new ControlSql(db);
    }

    // ---- tables ------------------------------------------------------------------------------

    /** The tables of a tenant, by name. */
    public List<Table> tables(String tenant) {
        return sql.queryList("SELECT table_name, key_column, key_type FROM user_tables WHERE tenant = ? ORDER BY table_name",
                rs -> new Table(rs.getString(1), rs.getString(2), rs.getString(3)), tenant);
    }

    /** Writes a table's row, unless it exists. */
    public void putTable(String tenant, String table, String keyColumn, String keyType) {
        sql.update("""
                INSERT INTO user_tables (tenant, table_name, key_column, key_type) VALUES (?, ?, ?, ?)
                ON CONFLICT (tenant, table_name) DO NOTHING""", tenant, table, keyColumn, keyType);
    }

    /** The shards a table is resident on ({@code CREATE TABLE ... WITH (shards = ...)}), comma-separated; empty: any. */
    public Optional<String> residency(String tenant, String table) {
        return sql.queryOne("""
                SELECT array_to_string(residency, ',') FROM user_tables WHERE tenant = ? AND table_name = ?
                  AND residency IS NOT NULL""", rs -> rs.getString(1), tenant, table);
    }

    /** One recorded migration of a table, as a shard database's schema history holds it. */
    public record TableMigration(int version, String ddl, String description) {}

    /** A table's recorded migrations, in version order: what creates it on a shard database it is not on yet. */
    public List<TableMigration> tableMigrations(String tenant, String table) {
        return sql.queryList("""
                SELECT version, ddl, description FROM table_migrations WHERE tenant = ? AND table_name = ?
                ORDER BY version""", rs -> new TableMigration(rs.getInt(1), rs.getString(2), rs.getString(3)),
                tenant, table);
    }

    /** Pins a table's partitions to {@code shards} (its residency): a move elsewhere is refused. */
    public void setResidency(String tenant, String table, List<Integer> shards) {
        sql.autoCommit(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE user_tables SET residency = ? WHERE tenant = ? AND table_name = ?")) {
                ps.setArray(1, c.createArrayOf("integer", shards.stream().sorted().toArray()));
                ControlSql.bindFrom(ps, 2, tenant, table);
                return ps.executeUpdate();
            }
        });
    }

    /**
     * Deletes a table's row if it has no partitions: what a create that failed before writing them leaves
     * behind. A table with partitions is left alone.
     */
    public void deleteTableWithoutPartitions(String tenant, String table) {
        sql.update("DELETE FROM user_tables t WHERE tenant = ? AND table_name = ? AND NOT EXISTS "
                + "(SELECT 1 FROM partitions p WHERE p.tenant = t.tenant AND p.table_name = t.table_name)", tenant, table);
    }

    /**
     * Deletes a table with its partitions and their leases (its migrations go with it), in one transaction. The
     * partitions' rows are locked first: a lease keeper taking leases skips locked rows, so no lease appears between
     * deleting the leases and deleting the partitions.
     */
    public void dropTable(String tenant, String table) {
        sql.inTransaction(c -> {
            ControlSql.queryList(c, "SELECT partition_id FROM partitions WHERE tenant = ? AND table_name = ? FOR UPDATE",
                    rs -> null, tenant, table);
            TopologyStore.endLeasesOfTable(c, tenant, table);
            ControlSql.update(c, "DELETE FROM partitions WHERE tenant = ? AND table_name = ?", tenant, table);
            ControlSql.update(c, "DELETE FROM user_tables WHERE tenant = ? AND table_name = ?", tenant, table);
            return null;
        });
    }

    // ---- partitions --------------------------------------------------------------------------

    /** The id after the highest partition id there is (0 when there is none). */
    public int nextPartitionId() {
        return sql.queryOne("SELECT coalesce(max(partition_id), -1) + 1 FROM partitions", rs -> rs.getInt(1)).orElseThrow();
    }

    /**
     * Writes the partitions of a table that has none yet, as one set that must tile the slot space: every
     * slot in exactly one partition. All are written, in one transaction, or none.
     *
     * @throws ThresherException {@link ErrorCode#PARTITIONS_DO_NOT_TILE} naming the first gap or overlap,
     *     or when the table already has partitions (they are moved and split, not written again);
     *     {@link ErrorCode#INVALID_CONFIGURATION} when a partition names another table
     */
    public void putTablePartitions(String tenant, String table, List<Partition> partitions) {
        for (Partition p : partitions) {
            if (!p.tenant().equals(tenant) || !p.table().equals(table)) {
                throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "partition " + p.id() + " belongs to "
                        + p.tenant() + "/" + p.table() + ", not to " + tenant + "/" + table);
            }
        }
        Tiling.problem(partitions).ifPresent(problem -> {
            throw new ThresherException(ErrorCode.PARTITIONS_DO_NOT_TILE, "the partitions of " + tenant + "/" + table
                    + " do not tile the " + Slots.COUNT + " slots: " + problem);
        });
        sql.inTransaction(c -> {
            ControlSql.lock(c, "partitions/" + tenant + "/" + table);
            long there = ControlSql.queryOne(c, "SELECT count(*) FROM partitions WHERE tenant = ? AND table_name = ?",
                    rs -> rs.getLong(1), tenant, table).orElseThrow();
            if (there > 0) {
                throw new ThresherException(ErrorCode.PARTITIONS_DO_NOT_TILE, tenant + "/" + table + " already has "
                        + there + " partitions; a second set would overlap them");
            }
            try (PreparedStatement ps = c.prepareStatement("""
                    INSERT INTO partitions (partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch)
                    VALUES (?, ?, ?, ?, ?, ?, ?)""")) {
                for (Partition p : partitions) {
                    ControlSql.bind(ps, p.id(), p.tenant(), p.table(), p.slotLo(), p.slotHi(), p.shardId(), p.epoch());
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            return null;
        });
    }

    /**
     * Writes one partition as is, unless its id exists. No tiling check: a table written partition by
     * partition may have gaps meanwhile (a call over it is refused with
     * {@link ErrorCode#PARTITIONS_DO_NOT_TILE} until it tiles); {@link #putTablePartitions} writes a
     * checked set.
     */
    public void putPartition(Partition p) {
        sql.update("""
                INSERT INTO partitions (partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch)
                VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (partition_id) DO NOTHING""",
                p.id(), p.tenant(), p.table(), p.slotLo(), p.slotHi(), p.shardId(), p.epoch());
    }

    // ---- migrations --------------------------------------------------------------------------

    /**
     * Records a migration with one state for every shard database in {@code shards}, in one transaction that
     * holds the table's row, so the migrations of one table are numbered one at a time.
     *
     * @param version the migration's number; below 0: the next one (2 at least: 1 is the create)
     * @return the number it was recorded under
     */
    public int recordMigration(String tenant, String table, int version, String description, String ddl,
                               Collection<Integer> shards, String state) {
        return sql.inTransaction(c -> {
            ControlSql.queryList(c, "SELECT 1 FROM user_tables WHERE tenant = ? AND table_name = ? FOR UPDATE",
                    rs -> null, tenant, table);
            int v = version >= 0 ? version : ControlSql.queryOne(c, "SELECT greatest(coalesce(max(version), 0), 1) + 1"
                    + " FROM table_migrations WHERE tenant = ? AND table_name = ?", rs -> rs.getInt(1), tenant, table)
                    .orElseThrow();
            ControlSql.update(c, "INSERT INTO table_migrations (tenant, table_name, version, description, ddl)"
                    + " VALUES (?, ?, ?, ?, ?)", tenant, table, v, description, ddl);
            try (PreparedStatement st = c.prepareStatement("INSERT INTO table_migration_shards (tenant, table_name,"
                    + " version, shard_id, state) VALUES (?, ?, ?, ?, ?)")) {
                for (int shard : shards) {
                    ControlSql.bind(st, tenant, table, v, shard, state);
                    st.addBatch();
                }
                st.executeBatch();
            }
            return v;
        });
    }

    /** The migrations of a table not applied yet on some shard database (pending or failed), by shard, then version. */
    public List<PendingMigration> pendingMigrations(String tenant, String table) {
        return sql.queryList("""
                SELECT s.shard_id, m.version, m.description, m.ddl FROM table_migrations m
                JOIN table_migration_shards s USING (tenant, table_name, version)
                WHERE m.tenant = ? AND m.table_name = ? AND s.state <> 'applied'
                ORDER BY s.shard_id, m.version""",
                rs -> new PendingMigration(rs.getInt(1), rs.getInt(2), rs.getString(3), rs.getString(4)), tenant, table);
    }

    /** Records what a shard database did with a migration: its state, and the database's error or null. */
    public void setMigrationState(String tenant, String table, int version, int shardId, String state, String error) {
        sql.update("""
                UPDATE table_migration_shards SET state = ?, error = ?, updated_at = now()
                WHERE tenant = ? AND table_name = ? AND version = ? AND shard_id = ?""",
                state, error, tenant, table, version, shardId);
    }

    /** The migrations of a table in version order, each with every shard database's state and error. */
    public List<Migration> migrations(String tenant, String table) {
        record Row(int version, String description, Integer shard, String state, String error) {}
        List<Row> rows = sql.queryList("""
                SELECT m.version, m.description, s.shard_id, s.state, s.error FROM table_migrations m
                LEFT JOIN table_migration_shards s USING (tenant, table_name, version)
                WHERE m.tenant = ? AND m.table_name = ? ORDER BY m.version, s.shard_id""",
                rs -> new Row(rs.getInt(1), rs.getString(2), (Integer) rs.getObject(3), rs.getString(4), rs.getString(5)),
                tenant, table);
        Map<Integer, Migration> byVersion = new TreeMap<>();
        for (Row r : rows) {
            Migration m = byVersion.computeIfAbsent(r.version(),
                    v -> new Migration(v, r.description(), new TreeMap<>(), new TreeMap<>()));
            if (r.shard() != null) { // a migration recorded for no shard database has one row, its shard NULL
                m.states().put(r.shard(), r.state());
                if (r.error() != null) {
                    m.errors().put(r.shard(), r.error());
                }
            }
        }
        return List.copyOf(byVersion.values());
    }
}
