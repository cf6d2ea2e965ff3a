package dev.thresher.server.admin;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.TableService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.Pools;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.TableCatalog;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import dev.thresher.topology.Tiling;
import dev.thresher.topology.Topology;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Tables an operator creates, lists, shows and drops: the catalog rows in the control database (the
 * table, its key, its partitions tiling every slot), read and written through {@link TableCatalog}, and, on each
 * shard database holding a partition, the table itself, partitioned by its slot column with one child table per
 * partition.
 *
 * <p>Create writes the shard databases first, each in a transaction of its own, then the catalog: the
 * table's row, then its partitions as one checked set in one transaction. When a step fails, the shard
 * tables just created are dropped again and the table's row removed, so a failed create leaves nothing
 * behind. Drop refuses while a binding's current version reads the table.
 */
public final class TableAdmin implements AutoCloseable {
    /** An unquoted PostgreSQL identifier, lower case, at most 63 bytes. */
    public static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    /**
     * The shard database's child table holding partition {@code partitionId} of {@code table}: {@code <table>_p<id>},
     * or, when that would pass PostgreSQL's 63 bytes (which it would cut, so that two partitions of a long name would
     * collide), the table name cut short and an 8-digit hash of the whole name before {@code _p<id>}.
     */
    public static String childName(String table, int partitionId) {
        return withSuffix(table, "_p" + partitionId);
    }

    /** The default child a moved partition's rows land in when a child of theirs overlaps one already there. */
    public static String defaultChildName(String table) {
        return withSuffix(table, "_default");
    }

    private static String withSuffix(String table, String suffix) {
        if (table.length() + suffix.length() <= 63) {
            return table + suffix;
        }
        String hash = BindingAdmin.sha256(table.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .replace("sha256:", "").substring(0, 8);
        return table.substring(0, 63 - suffix.length() - hash.length() - 1) + "_" + hash + suffix;
    }

    /** Column types a table may declare: the ones the batch encoding carries. */
    static final Set<String> COLUMN_TYPES = Set.of("smallint", "integer", "int", "bigint", "real", "double precision",
            "numeric", "text", "varchar", "boolean", "bytea");
    /** Key types: the ones {@link Slots} hashes. */
    static final Set<String> KEY_TYPES = Set.of("smallint", "integer", "bigint", "text", "uuid", "bytea");

    private final HikariDataSource controlDb;
    private final ControlStore control;
    private final TableCatalog catalog;
    private final String user;
    private final String password;
    private final PrintStream out;

    public TableAdmin(String controlUrl, String user, String password, PrintStream out) {
        this.controlDb = Pools.open("thresher-table-admin", controlUrl, user, password, CONTROL_POOL_SIZE);
        // bounded: within a deploy's or a load's DbDeadline scope every wait ends at its deadline; outside, the pool
        this.control = new ControlStore(Pools.bounded(controlDb));
        this.catalog = new TableCatalog(Pools.bounded(controlDb));
        this.user = user;
        this.password = password;
        this.out = out;
    }

    /** One declared column. */
    record ColumnDef(String name, String type, boolean notNull) {
        String sql() {
            return name + " " + type + (notNull ? " NOT NULL" : "");
        }
    }

    /**
     * Parses {@code "order_id bigint, region text not null, amount double precision not null"}: a name, a
     * type, and {@code not null} where NULL is not allowed (the key is always {@code NOT NULL}).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} naming the column and what is wrong
     */
    static List<ColumnDef> parseColumns(String spec) {
        List<ColumnDef> columns = new ArrayList<>();
        for (String part : spec.split(",")) {
            String p = part.strip().replaceAll("\\s+", " ").toLowerCase(Locale.ROOT);
            int space = p.indexOf(' ');
            if (p.isEmpty() || space < 0) {
                throw invalid("column '" + part.strip() + "' needs a name and a type, as in 'amount double precision'");
            }
            String name = p.substring(0, space);
            String type = p.substring(space + 1);
            boolean notNull = type.endsWith(" not null");
            type = notNull ? type.substring(0, type.length() - " not null".length()) : type;
            if (!IDENTIFIER.matcher(name).matches() || name.equals(ShardReader.SLOT_COLUMN)) {
                throw invalid("column name '" + name + "' is not a lower-case identifier of at most 63 characters"
                        + " (and " + ShardReader.SLOT_COLUMN + " is Thresher's)");
            }
            if (!COLUMN_TYPES.contains(type)) {
                throw invalid("column " + name + " has type '" + type + "'; the types are " + String.join(", ",
                        new java.util.TreeSet<>(COLUMN_TYPES)));
            }
            if (columns.stream().anyMatch(c -> c.name().equals(name))) {
                throw invalid("column " + name + " is declared twice");
            }
            columns.add(new ColumnDef(name, type.equals("int") ? "integer" : type, notNull));
        }
        return columns;
    }

    /**
     * Creates a table: {@code partitions} equal slot ranges over {@code shardIds} (round robin; empty: every
     * shard database of the cluster).
     */
    public List<Partition> create(String tenant, String table, String keyColumn, String columnsSpec, int partitions,
                                  List<Integer> shardIds) {
        if (!IDENTIFIER.matcher(table).matches()) {
            throw invalid("table name '" + table + "' is not a lower-case identifier of at most 63 characters");
        }
        List<ColumnDef> columns = new ArrayList<>(parseColumns(columnsSpec).stream()
                .map(c -> c.name().equals(keyColumn) ? new ColumnDef(c.name(), c.type(), true) : c).toList());
        ColumnDef key = columns.stream().filter(c -> c.name().equals(keyColumn)).findFirst()
                .orElseThrow(() -> invalid("the key column '" + keyColumn + "' is not among the columns"));
        if (!KEY_TYPES.contains(key.type())) {
            throw invalid("key column " + keyColumn + " has type " + key.type() + "; a key is one of "
                    + String.join(", ", new java.util.TreeSet<>(KEY_TYPES)));
        }
        if (partitions < 1 || partitions > Slots.COUNT) {
            throw invalid("--partitions is 1.." + Slots.COUNT + ", was " + partitions);
        }
        Map<Integer, String> shards = shardUrls();
        List<Integer> over = shardIds.isEmpty() ? new ArrayList<>(shards.keySet()) : shardIds.stream().distinct().toList();
        for (int id : over) {
            if (!shards.containsKey(id)) {
                throw invalid("there is no shard database " + id + "; the shards are " + shards.keySet());
            }
        }
        if (!shardIds.isEmpty()) {
            // pinned (residency): every named shard must take the table, or nothing is created
            for (int id : over) {
                checkWritable(id, shards.get(id));
            }
        }
        if (tableExists(tenant, table)) { // partitions reference their table's row, so this covers them too
            throw invalid("table " + table + " exists already");
        }
        int firstId = catalog.nextPartitionId();
        List<Partition> planned = new ArrayList<>();
        int width = Slots.COUNT / partitions;
        for (int i = 0; i < partitions; i++) {
            int lo = i * width;
            int hi = i == partitions - 1 ? Slots.COUNT - 1 : lo + width - 1;
            planned.add(new Partition(firstId + i, tenant, table, lo, hi, over.get(i % over.size()), 1));
        }
        Tiling.problem(planned).ifPresent(p -> {
            throw new ThresherException(ErrorCode.PARTITIONS_DO_NOT_TILE, p);
        });
        Map<Integer, List<Partition>> byShard = new TreeMap<>();
        planned.forEach(p -> byShard.computeIfAbsent(p.shardId(), s -> new ArrayList<>()).add(p));
        List<Integer> created = new ArrayList<>();
        try {
            for (var e : byShard.entrySet()) {
                createOnShard(shards.get(e.getKey()), table, columns, e.getValue());
                created.add(e.getKey());
                out.printf("shard %d: created %s with %d partitions%n", e.getKey(), table, e.getValue().size());
            }
            control.ensureTenant(tenant); // a new cluster's first table may come before its first binding
            catalog.putTable(tenant, table, keyColumn, key.type());
            if (!shardIds.isEmpty()) {
                catalog.setResidency(tenant, table, over); // pinned: a move elsewhere is refused
            }
            catalog.putTablePartitions(tenant, table, planned);
            catalog.recordMigration(tenant, table, 1, "create table", createDdl(table, columns), byShard.keySet(),
                    "applied");
        } catch (RuntimeException e) {
            for (int shard : created) {
                try {
                    dropOnShard(shards.get(shard), table);
                    out.printf("shard %d: dropped %s again (the create failed)%n", shard, table);
                } catch (RuntimeException again) {
                    e.addSuppressed(again);
                }
            }
            try {
                catalog.deleteTableWithoutPartitions(tenant, table);
            } catch (ThresherException ignored) {
                // the create's own failure is what the operator needs to see
            }
            throw e;
        }
        return planned;
    }

    /** The tables of a tenant: name, key, partitions, shards, and whether the partitions tile. */
    public List<String> list(String tenant) {
        Topology t = control.readTopology();
        List<String> lines = new ArrayList<>();
        for (TableCatalog.Table row : catalog.tables(tenant)) {
            List<Partition> parts = t.partitionsOf(tenant, row.name());
            lines.add(String.format("%-24s key %-12s %3d partitions on shards %s%s", row.name(),
                    row.keyColumn() + " " + row.keyType(),
                    parts.size(), parts.stream().map(Partition::shardId).distinct().sorted().toList(),
                    Tiling.problem(parts).map(p -> "  NOT TILING: " + p).orElse("")));
        }
        return lines;
    }

    /** One table: its key and each partition with its slots, shard, epoch and leader. */
    public List<String> show(String tenant, String table) {
        TableCatalog.Table row = table(tenant, table);
        Topology t = control.readTopology();
        List<String> lines = new ArrayList<>();
        lines.add("table " + table + ", key " + row.keyColumn() + " " + row.keyType());
        Tiling.problem(t.partitionsOf(tenant, table)).ifPresent(p -> lines.add("NOT TILING: " + p));
        for (Partition p : t.partitionsOf(tenant, table)) {
            lines.add(String.format("  partition %-5d slots %5d..%-5d shard %d  epoch %d  leader %s", p.id(), p.slotLo(),
                    p.slotHi(), p.shardId(), p.epoch(), t.leaderOf(p).map(h -> h.hostId()).orElse("none")));
        }
        lines.add("schema migrations:");
        for (TableService.MigrationInfo m : info(tenant, row, t).migrations()) {
            StringBuilder line = new StringBuilder(String.format("  %-3d %-40s", m.version(), m.description()));
            m.states().forEach((shard, state) -> line.append("  shard ").append(shard).append(' ').append(state)
                    .append(m.errors().containsKey(shard) ? " (" + m.errors().get(shard) + ")" : ""));
            lines.add(line.toString());
        }
        return lines;
    }

    /**
     * Drops a table from the catalog and from every shard database holding it.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} while a binding reads it
     */
    public void drop(String tenant, String table) {
        table(tenant, table);
        List<String> readers = control.bindings().readersOf(tenant, table);
        if (!readers.isEmpty()) {
            throw invalid("table " + table + " is read by binding(s) " + readers + "; remove them first");
        }
        Map<Integer, String> shards = shardUrls();
        List<Integer> holding = control.readTopology().partitionsOf(tenant, table).stream().map(Partition::shardId)
                .distinct().sorted().toList();
        catalog.dropTable(tenant, table); // its partitions locked first: no lease appears between the deletes
        for (int shard : holding) {
            dropOnShard(shards.get(shard), table);
            out.printf("shard %d: dropped %s%n", shard, table);
        }
    }

    /**
     * Changes a table's schema: the change becomes its next migration, pending on every shard database
     * holding the table, and is applied on each (see {@link #migrate}).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} for a change that cannot be made
     *     (an unknown table, a column type the batch cannot carry, the key or the slot column dropped)
     */
    public TableService.TableInfo alter(String tenant, String table, TableService.Change change) {
        String[] key = key(tenant, table);
        String ddl;
        String description;
        switch (change) {
            case TableService.Change.AddColumn add -> {
                List<ColumnDef> cols = parseColumns(add.definition());
                if (cols.size() != 1) {
                    throw invalid("add one column at a time, as in 'discount double precision'");
                }
                ddl = "ALTER TABLE " + table + " ADD COLUMN " + cols.get(0).sql();
                description = "add column " + cols.get(0).sql().toLowerCase(Locale.ROOT);
            }
            case TableService.Change.DropColumn drop -> {
                String column = drop.column().strip().toLowerCase(Locale.ROOT);
                if (!IDENTIFIER.matcher(column).matches()) {
                    throw invalid("column name '" + drop.column() + "' is not a lower-case identifier");
                }
                if (column.equals(key[0]) || column.equals(ShardReader.SLOT_COLUMN)) {
                    throw invalid("column " + column + " cannot be dropped: it " + (column.equals(key[0])
                            ? "is the table's key" : "holds each row's slot"));
                }
                List<String> readers = control.bindings().readersOf(tenant, table, column);
                if (!readers.isEmpty()) { // as a table read by a binding is not dropped
                    throw invalid("column " + column + " of table " + table + " is read by binding(s) " + readers
                            + "; deploy them without it first");
                }
                ddl = "ALTER TABLE " + table + " DROP COLUMN " + column;
                description = "drop column " + column;
            }
        }
        List<Integer> holding = control.readTopology().partitionsOf(tenant, table).stream().map(Partition::shardId)
                .distinct().sorted().toList();
        catalog.recordMigration(tenant, table, -1, description, ddl, holding, "pending");
        return migrate(tenant, table);
    }

    /**
     * Applies a table's pending and failed migrations, in version order, on each shard database holding
     * it: each in one transaction with the shard's history row, so none is applied twice; on a shard, a
     * failure stops the later migrations, which stay pending. The control database records each shard's
     * outcome.
     */
    public TableService.TableInfo migrate(String tenant, String table) {
        key(tenant, table);
        Map<Integer, String> urls = shardUrls();
        Map<Integer, List<TableCatalog.PendingMigration>> todo = new TreeMap<>();
        catalog.pendingMigrations(tenant, table)
                .forEach(m -> todo.computeIfAbsent(m.shardId(), k -> new ArrayList<>()).add(m));
        todo.forEach((shard, migrations) -> {
            for (TableCatalog.PendingMigration m : migrations) {
                int version = m.version();
                String error = applyOnShard(urls.get(shard), table, version, m.description(), m.ddl());
                catalog.setMigrationState(tenant, table, version, shard, error == null ? "applied" : "failed", error);
                out.printf("shard %d: migration %d (%s) %s%n", shard, version, m.description(),
                        error == null ? "applied" : "failed: " + error);
                if (error != null) {
                    break;
                }
            }
        });
        return info(tenant, table);
    }

    /** Applies one migration on one shard; returns null, or the database's error. */
    private String applyOnShard(String url, String table, int version, String description, String ddl) {
        try (Connection c = shardConnection(url)) {
            return SchemaHistory.apply(c, table, version, description, ddl);
        } catch (SQLException e) {
            return cause(e);
        }
    }

    /** A table as an operator sees it: key, tiling, partitions with their leaders, migrations per shard. */
    public TableService.TableInfo info(String tenant, String table) {
        return info(tenant, table(tenant, table), control.readTopology());
    }

    /** Every table of a tenant. */
    public List<TableService.TableInfo> infos(String tenant) {
        Topology t = control.readTopology();
        return catalog.tables(tenant).stream().map(r -> info(tenant, r, t)).toList();
    }

    private TableService.TableInfo info(String tenant, TableCatalog.Table row, Topology t) {
        String table = row.name();
        List<Partition> parts = t.partitionsOf(tenant, table);
        List<TableService.PartitionInfo> partitions = parts.stream().map(p -> new TableService.PartitionInfo(p.id(),
                p.slotLo(), p.slotHi(), p.shardId(), p.epoch(), t.leaderOf(p).map(h -> h.hostId()).orElse(""))).toList();
        List<TableService.MigrationInfo> migrations = catalog.migrations(tenant, table).stream()
                .map(m -> new TableService.MigrationInfo(m.version(), m.description(), m.states(), m.errors())).toList();
        return new TableService.TableInfo(table, row.keyColumn(), row.keyType(), Tiling.problem(parts).orElse(null),
                partitions, migrations);
    }

    /**
     * Refuses, {@link ErrorCode#TOPOLOGY_CHANGE_REFUSED}, a shard database that cannot be reached within 5 s or
     * cannot be written (a standby in recovery, a read-only user): a placement never falls back silently.
     */
    void checkWritable(int shard, String url) {
        java.util.Properties p = new java.util.Properties();
        if (user != null) {
            p.setProperty("user", user);
        }
        if (password != null) {
            p.setProperty("password", password);
        }
        p.setProperty("connectTimeout", "5");
        p.setProperty("socketTimeout", "30");
        try (Connection c = java.sql.DriverManager.getConnection(url, p)) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                try (ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery()")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "shard " + shard
                                + " is a standby in recovery: it cannot be written");
                    }
                }
                s.execute("CREATE TEMP TABLE thresher_write_probe (x int) ON COMMIT DROP");
                s.execute("INSERT INTO thresher_write_probe VALUES (1)");
            } finally {
                c.rollback();
            }
        } catch (SQLException e) {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "shard " + shard + " cannot be reached or"
                    + " written: " + cause(e), e);
        }
    }

    /** The shard ids of {@code shards}, each an id or a name. */
    public List<Integer> shardIds(List<String> shards) {
        Map<Integer, String> names = shardNames();
        List<Integer> ids = new ArrayList<>();
        for (String s : shards) {
            String t = s.strip();
            Integer id = names.entrySet().stream().filter(e -> e.getValue().equals(t) || e.getKey().toString().equals(t))
                    .map(Map.Entry::getKey).findFirst().orElseThrow(() -> invalid("there is no shard database " + t
                            + "; the shards are " + names));
            ids.add(id);
        }
        return ids;
    }

    /** The shard databases' names, by id. */
    public Map<Integer, String> shardNames() {
        return control.topology().shardNames();
    }

    /** The shard databases of the cluster: id to JDBC URL, by id. */
    public Map<Integer, String> shardUrls() {
        return control.topology().shardUrls();
    }

    /** The key column and key type of a table, or a refusal naming the tables there are. */
    public String[] key(String tenant, String table) {
        TableCatalog.Table row = table(tenant, table);
        return new String[] {row.keyColumn(), row.keyType()};
    }

    /** The database user this admin connects as (to the control and shard databases). */
    public String user() {
        return user;
    }

    public String password() {
        return password;
    }

    public ControlStore control() {
        return control;
    }

    /** The control database's pool, for the other admin commands that share this admin's connections. */
    public javax.sql.DataSource controlDb() {
        return controlDb;
    }

    /** The shard databases holding partitions of a table. */
    List<Integer> shardsOf(String tenant, String table) {
        return control.readTopology().partitionsOf(tenant, table).stream().map(Partition::shardId).distinct().sorted().toList();
    }

    /** A connection to a shard database, from its {@link #shardPool}, its waits bounded by the thread's {@code DbDeadline}. */
    public Connection shardConnection(String url) throws SQLException {
        shardPool(url);
        return Pools.bounded(shardPools.get(url)).getConnection();
    }

    /** A shard database's pool of at most {@value #SHARD_POOL_SIZE}, kept as long as this admin (a node's, for its life). */
    public javax.sql.DataSource shardPool(String url) {
        return shardPools.computeIfAbsent(url, u -> Pools.open("thresher-table-shard", u, user, password, SHARD_POOL_SIZE));
    }

    /**
     * Connections per shard database one admin holds at most: the loads and inserts a node runs at once. A node's
     * table service keeps such a pool for each shard database it writes; its connection budget counts them.
     */
    public static final int SHARD_POOL_SIZE = 4;
    /** Connections to the control database one admin holds at most (its catalog reads and writes); counted likewise. */
    public static final int CONTROL_POOL_SIZE = 2;
    private final java.util.concurrent.ConcurrentHashMap<String, HikariDataSource> shardPools =
            new java.util.concurrent.ConcurrentHashMap<>();

    private static String createDdl(String table, List<ColumnDef> columns) {
        StringBuilder ddl = new StringBuilder("CREATE TABLE " + table + " (");
        for (ColumnDef col : columns) {
            ddl.append(col.sql()).append(", ");
        }
        return ddl.append(ShardReader.SLOT_COLUMN).append(" integer NOT NULL) PARTITION BY RANGE (")
                .append(ShardReader.SLOT_COLUMN).append(')').toString();
    }

    private void createOnShard(String url, String table, List<ColumnDef> columns, List<Partition> partitions) {
        try (Connection c = shardConnection(url); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute(createDdl(table, columns));
            for (Partition p : partitions) {
                s.execute("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%d) TO (%d)"
                        .formatted(childName(table, p.id()), table, p.slotLo(), p.slotHi() + 1));
                // No primary key: the whole old row identifies an updated or deleted one to leader replicas.
                s.execute("ALTER TABLE %s REPLICA IDENTITY FULL".formatted(childName(table, p.id())));
            }
            s.execute(SchemaHistory.DDL);
            SchemaHistory.record(c, table, 1, "create table");
            c.commit();
        } catch (SQLException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, shardLabel(url)
                    + ": cannot create " + table + ": " + cause(e), e);
        }
    }

    private void dropOnShard(String url, String table) {
        try (Connection c = shardConnection(url); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("DROP TABLE IF EXISTS " + table);
            s.execute(SchemaHistory.DDL);
            try (PreparedStatement h = c.prepareStatement("DELETE FROM thresher_schema_history WHERE table_name = ?")) {
                h.setString(1, table);
                h.executeUpdate();
            }
            c.commit();
        } catch (SQLException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, shardLabel(url)
                    + ": cannot drop " + table + ": " + cause(e), e);
        }
    }

    /** What a client is told of a shard database's failure: PostgreSQL's error, or, for a connection, no address. */
    private static String cause(SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        return state.startsWith("08") ? "it cannot be reached (SQLSTATE " + state + "; the node's log has the cause)"
                : e.getMessage();
    }

    /**
     * A shard database as a message to a client names it: by its id and name, never its address (a client of the
     * node is not told where the shard databases are; the node's log has the cause in full).
     */
    private String shardLabel(String url) {
        try {
            Map<Integer, String> names = shardNames();
            return shardUrls().entrySet().stream().filter(e -> e.getValue().equals(url)).findFirst()
                    .map(e -> "shard " + e.getKey() + " (" + names.getOrDefault(e.getKey(), "shard-" + e.getKey()) + ")")
                    .orElse("a shard database");
        } catch (RuntimeException e) {
            return "a shard database";
        }
    }

    private boolean tableExists(String tenant, String table) {
        return catalog.tables(tenant).stream().anyMatch(r -> r.name().equals(table));
    }

    /** A table's row, or a refusal: there is no such table. */
    private TableCatalog.Table table(String tenant, String table) {
        return catalog.tables(tenant).stream().filter(r -> r.name().equals(table)).findFirst()
                .orElseThrow(() -> new ThresherException(ErrorCode.UNKNOWN_TABLE, "there is no table "
                        + dev.thresher.errors.Quoted.of(table)));
    }

    private static ThresherException invalid(String message) {
        return new ThresherException(ErrorCode.INVALID_CONFIGURATION, message);
    }

    @Override
    public void close() {
        shardPools.values().forEach(HikariDataSource::close);
        controlDb.close();
    }
}
