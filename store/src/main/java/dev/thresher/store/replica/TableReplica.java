package dev.thresher.store.replica;

import dev.thresher.bindings.Selector;
import dev.thresher.store.shard.PgType;
import dev.thresher.store.shard.ShardReader;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** One replicated table of the shard: its columns as the replica holds them and its partitions here. */
final class TableReplica {
    final String name;
    int oid;
    String namespace = "public";
    String ineligible;
    List<String> relationColumns = List.of();
    List<Integer> relationTypes = List.of();
    List<ReplicaColumn> columns = List.of();
    int[] storeToRelation = new int[0];
    int[] identity = new int[0];
    int slotColumn = -1;
    final List<HeldPartition> held = new ArrayList<>();
    /** Changes streamed while this table is being added, with their transactions. */
    final List<StreamApplier.Kept> kept = new ArrayList<>();
    /** For a table added to a running stream: its copy's snapshot; changes visible in it are in the copy. */
    XidSnapshot visibleInCopy;
    /** Compiled filters by WHERE text; {@link #UNEVALUABLE} for one the replica cannot evaluate exactly. */
    private final Map<String, Object> filters = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Object> eldest) {
            return size() > 256;
        }
    });
    private static final Object UNEVALUABLE = new Object();

    TableReplica(String name) {
        this.name = name;
    }

    int column(String name) {
        for (int i = 0; i < columns.size(); i++) {
            if (columns.get(i).name().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /** The selector's filter: empty for none, null when the replica cannot evaluate it exactly. */
    @SuppressWarnings("unchecked")
    Optional<RowFilter> filter(Selector selector) {
        if (selector.where().isEmpty()) {
            return Optional.empty();
        }
        Object f = filters.computeIfAbsent(selector.where().get(), w -> {
            Optional<RowFilter> compiled = RowFilter.compile(w, columns);
            return compiled.isPresent() ? compiled : UNEVALUABLE;
        });
        return f == UNEVALUABLE ? null : (Optional<RowFilter>) f;
    }

    /** A relation's tuple as the replica's columns. */
    Tuple project(Tuple relationRow) {
        byte[][] values = new byte[storeToRelation.length][];
        for (int i = 0; i < values.length; i++) {
            values[i] = relationRow.value(storeToRelation[i]);
        }
        return new Tuple(values);
    }

    /** The partition holding a slot, or null when no partition here holds it. */
    HeldPartition holding(int slot) {
        for (HeldPartition h : held) {
            if (slot >= h.partition.slotLo() && slot <= h.partition.slotHi()) {
                return h.evicted ? null : h;
            }
        }
        return null;
    }

    /** The table's columns and replica identity, or why it cannot be replicated. */
    static TableReplica describe(Connection c, String table) throws SQLException {
        TableReplica t = new TableReplica(table);
        int oid;
        try (PreparedStatement ps = c.prepareStatement("SELECT c.oid, n.nspname, c.relkind FROM pg_class c "
                + "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(?)")) {
            ps.setString(1, ReplicaBuilder.quote(table));
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    t.ineligible = "no such table on the shard";
                    return t;
                }
                oid = rs.getInt(1);
                t.oid = oid;
                t.namespace = rs.getString(2);
                String kind = rs.getString(3);
                if (!"r".equals(kind) && !"p".equals(kind)) {
                    t.ineligible = "not a table (relkind " + kind + ")";
                    return t;
                }
            }
        }
        List<String> relationColumns = new ArrayList<>();
        List<Integer> relationTypes = new ArrayList<>();
        List<Boolean> notNull = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT attname, atttypid, attnotnull FROM pg_attribute "
                + "WHERE attrelid = ? AND attnum > 0 AND NOT attisdropped ORDER BY attnum")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    relationColumns.add(rs.getString(1));
                    relationTypes.add(rs.getInt(2));
                    notNull.add(rs.getBoolean(3));
                }
            }
        }
        List<String> primaryKey = primaryKey(c, oid);
        if (!identified(c, oid, primaryKey.isEmpty())) {
            t.ineligible = "no replica identity (a primary key, or REPLICA IDENTITY FULL on every partition)";
            return t;
        }
        List<ReplicaColumn> columns = new ArrayList<>();
        int[] storeToRelation = new int[relationColumns.size()];
        int n = 0;
        for (int i = 0; i < relationColumns.size(); i++) {
            PgType type = PgType.ofOid(relationTypes.get(i));
            if (type != null) {
                columns.add(new ReplicaColumn(relationColumns.get(i), relationTypes.get(i), notNull.get(i)));
                storeToRelation[n++] = i;
            }
        }
        t.relationColumns = List.copyOf(relationColumns);
        t.relationTypes = List.copyOf(relationTypes);
        t.columns = List.copyOf(columns);
        t.storeToRelation = java.util.Arrays.copyOf(storeToRelation, n);
        t.slotColumn = t.column(ShardReader.SLOT_COLUMN);
        if (t.slotColumn < 0 || t.columns.get(t.slotColumn).type().batchType() != dev.thresher.bindings.abi.ColumnType.INT64) {
            t.ineligible = "no integer " + ShardReader.SLOT_COLUMN + " column";
            return t;
        }
        if (primaryKey.isEmpty()) {
            t.identity = new int[t.columns.size()];
            for (int i = 0; i < t.identity.length; i++) {
                t.identity[i] = i;
            }
        } else {
            t.identity = new int[primaryKey.size()];
            for (int i = 0; i < primaryKey.size(); i++) {
                t.identity[i] = t.column(primaryKey.get(i));
                if (t.identity[i] < 0) {
                    t.ineligible = "primary key column " + primaryKey.get(i) + " has a type a replica does not hold";
                    return t;
                }
            }
        }
        return t;
    }

    /** The table's primary key columns, none when it has no primary key. */
    private static List<String> primaryKey(Connection c, int oid) throws SQLException {
        List<String> primaryKey = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT a.attname FROM pg_index i JOIN pg_attribute a "
                + "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = ? AND i.indisprimary")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    primaryKey.add(rs.getString(1));
                }
            }
        }
        return primaryKey;
    }

    /**
     * Whether each leaf tells an update or delete's row: by the whole old row (REPLICA IDENTITY FULL) or by the
     * primary key; the replica then finds rows by the primary key when the table has one, by all columns if not.
     */
    private static boolean identified(Connection c, int oid, boolean noPrimaryKey) throws SQLException {
        boolean full = true;
        boolean identified = true;
        try (PreparedStatement ps = c.prepareStatement("SELECT c.relreplident, EXISTS (SELECT 1 FROM pg_index i "
                + "WHERE i.indrelid = c.oid AND i.indisprimary) FROM pg_partition_tree(?::regclass) t "
                + "JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf")) {
            ps.setInt(1, oid);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String identity = rs.getString(1);
                    boolean hasKey = rs.getBoolean(2);
                    full &= "f".equals(identity);
                    identified &= "f".equals(identity) || ("d".equals(identity) && hasKey);
                }
            }
        }
        return identified && !(noPrimaryKey && !full);
    }
}
