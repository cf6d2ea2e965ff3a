package dev.thresher.store.replica;

import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import java.io.OutputStream;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link ShardReplica} gets its rows from the shard database, on its stream thread: a generation built from the
 * slot's exported snapshot (the publication, the slot, the copy of every partition), and tables added to or dropped from
 * the running stream as the shard's partitions change. Logs as the replica it builds.
 */
final class ReplicaBuilder {
    private static final Logger log = LoggerFactory.getLogger(ShardReplica.class);

    private final String hostId;
    private final int shardId;
    private final String jdbcUrl;
    private final String user;
    private final String password;
    private final ReplicaBudget budget;
    private final String slotName;
    private final String publicationName;
    private final BooleanSupplier closed;

    ReplicaBuilder(String hostId, int shardId, String jdbcUrl, String user, String password, ReplicaBudget budget,
                   String slotName, String publicationName, BooleanSupplier closed) {
        this.hostId = hostId;
        this.shardId = shardId;
        this.jdbcUrl = jdbcUrl;
        this.user = user;
        this.password = password;
        this.budget = budget;
        this.slotName = slotName;
        this.publicationName = publicationName;
        this.closed = closed;
    }

    private String slotName() {
        return slotName;
    }

    private String publicationName() {
        return publicationName;
    }

    /**
     * Builds a generation of the shard's replicas: puts the replicated tables in the publication, creates the
     * temporary slot, copies every partition under its exported snapshot and starts the stream at its consistent point.
     */
    Generation build(ReplicationSource source, List<Partition> wanted) throws SQLException {
        Generation g = new Generation(ShardReplica.dataKeys(wanted));
        try (Connection c = DriverManager.getConnection(jdbcUrl, properties("thresher-replica-build"))) {
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW wal_level")) {
                rs.next();
                if (!"logical".equals(rs.getString(1))) {
                    throw new NotLogical("the shard database runs with wal_level=" + rs.getString(1)
                            + "; replicas need wal_level=logical (docs/deployment.md), so its partitions are read through SQL");
                }
            }
            Map<String, List<Partition>> byTable = new LinkedHashMap<>();
            for (Partition p : wanted) {
                byTable.computeIfAbsent(p.table(), t -> new ArrayList<>()).add(p);
            }
            List<String> published = new ArrayList<>();
            for (var e : byTable.entrySet()) {
                g.keysByTable.put(e.getKey(), ShardReplica.dataKeys(e.getValue()));
                TableReplica t = judge(c, e.getKey(), e.getValue(), g.partitions);
                if (t.ineligible == null) {
                    g.tables.put(t.name, t);
                    published.add(quote(t.namespace) + "." + quote(t.name));
                }
            }
            publish(c, published);
            if (published.isEmpty()) {
                // nothing to stream: every partition of the shard is read through SQL
                g.streaming = true;
                return g;
            }
            clearOldSlot(c);
            ReplicationSource.SlotInfo slot = source.createTemporarySlot(slotName());
            copy(c, g, slot.snapshotName());
            g.applied = slot.consistentPoint();
            source.start(publicationName(), slot.consistentPoint());
            g.streaming = true;
            long rows = 0;
            long bytes = 0;
            for (HeldPartition h : g.partitions.values()) {
                if (!h.evicted) {
                    rows += h.rows.rowCount();
                    bytes += h.rows.bytes();
                }
            }
            log.info("replica of shard {} on {}: {} partitions, {} rows, {} bytes in memory from slot {} at {}", shardId,
                    hostId, g.partitions.values().stream().filter(h -> !h.evicted).count(), rows, bytes, slotName(),
                    Lsn.format(slot.consistentPoint()));
            return g;
        }
    }

    private Properties properties(String application) {
        Properties p = new Properties();
        if (user != null) {
            p.setProperty("user", user);
        }
        if (password != null) {
            p.setProperty("password", password);
        }
        p.setProperty("ApplicationName", application);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "300");
        return p;
    }

    /**
     * Describes a table and puts a replica of each of its partitions into {@code into}: empty ones to copy into,
     * or, when the table cannot be replicated, ones that say why.
     */
    private TableReplica judge(Connection c, String table, List<Partition> partitions, Map<Integer, HeldPartition> into)
            throws SQLException {
        TableReplica t = TableReplica.describe(c, table);
        for (Partition p : partitions) {
            HeldPartition h = new HeldPartition(p, t);
            into.put(p.id(), h);
            if (t.ineligible != null) {
                h.evict(t.ineligible);
            } else {
                t.held.add(h);
            }
        }
        t.held.sort(Comparator.comparingInt(h -> h.partition.slotLo()));
        return t;
    }

    private void publish(Connection c, List<String> tables) throws SQLException {
        String publication = quote(publicationName());
        boolean exists;
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publicationName());
            try (ResultSet rs = ps.executeQuery()) {
                exists = rs.next();
            }
        }
        try (Statement s = c.createStatement()) {
            if (tables.isEmpty()) {
                if (exists) {
                    s.execute("DROP PUBLICATION " + publication);
                }
                return;
            }
            String list = String.join(", ", tables);
            if (exists) {
                s.execute("ALTER PUBLICATION " + publication + " SET TABLE " + list);
                s.execute("ALTER PUBLICATION " + publication + " SET (publish_via_partition_root = true)");
            } else {
                s.execute("CREATE PUBLICATION " + publication + " FOR TABLE " + list
                        + " WITH (publish_via_partition_root = true)");
            }
        }
    }

    /**
     * What an earlier life of this node left of its slot: a stream still open (a process killed before
     * PostgreSQL noticed) is ended, a permanent slot of the same name dropped.
     */
    private void clearOldSlot(Connection c) throws SQLException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try (PreparedStatement ps = c.prepareStatement("SELECT active_pid, temporary FROM pg_replication_slots "
                    + "WHERE slot_name = ?")) {
                ps.setString(1, slotName());
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return;
                    }
                    int pid = rs.getInt(1);
                    boolean active = !rs.wasNull();
                    if (active) {
                        try (PreparedStatement kill = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
                            kill.setInt(1, pid);
                            kill.execute();
                        }
                    } else if (!rs.getBoolean(2)) {
                        try (PreparedStatement drop = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
                            drop.setString(1, slotName());
                            drop.execute();
                        }
                    }
                }
            }
            if (System.nanoTime() - until > 0) {
                throw new SQLException("replication slot " + slotName() + " is still in use by another session");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /** Copies every replicated partition under the slot's exported snapshot. */
    private void copy(Connection c, Generation g, String snapshot) throws SQLException {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
            s.execute("SET TRANSACTION SNAPSHOT '" + snapshot.replace("'", "''") + "'");
            g.oids = oids(g.tables.values());
            g.fingerprint = fingerprint(c, g.oids);
            copyTables(c, g.tables.values());
        } finally {
            try {
                c.rollback();
                c.setAutoCommit(true);
            } catch (SQLException ignored) {
                // the connection is closed by the caller
            }
        }
    }

    private static String oids(java.util.Collection<TableReplica> tables) {
        return "{" + String.join(",", tables.stream().map(t -> Integer.toString(t.oid)).toList()) + "}";
    }

    /** The columns' fingerprint of the tables {@code oids} ({@link WalFence#FINGERPRINT}) in the transaction's snapshot. */
    private static String fingerprint(Connection c, String oids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(WalFence.FINGERPRINT)) {
            ps.setString(1, oids);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /** Copies the tables' partitions in the connection's open transaction. */
    private void copyTables(Connection c, java.util.Collection<TableReplica> tables) throws SQLException {
        CopyManager copies = c.unwrap(PGConnection.class).getCopyAPI();
        try {
            for (TableReplica t : tables) {
                StringBuilder columns = new StringBuilder();
                for (int i = 0; i < t.columns.size(); i++) {
                    columns.append(i == 0 ? "" : ", ").append(quote(t.columns.get(i).name()));
                }
                for (HeldPartition h : t.held) {
                    if (closed.getAsBoolean()) {
                        throw new SQLException("closed");
                    }
                    String sql = "COPY (SELECT " + columns + " FROM " + quote(t.namespace) + "." + quote(t.name) + " WHERE "
                            + ShardReader.SLOT_COLUMN + " BETWEEN " + h.partition.slotLo() + " AND " + h.partition.slotHi()
                            + ") TO STDOUT";
                    OutputStream sink = CopyText.rowSink(t.columns.size(), row -> {
                        if (!h.evicted) {
                            h.rows.insert(row);
                            if (h.rows.rowCount() % 1024 == 0) {
                                h.account(budget);
                            }
                        }
                    });
                    copies.copyOut(sql, sink);
                    sink.close();
                    h.account(budget);
                }
            }
        } catch (java.io.IOException e) {
            throw new SQLException("copy failed: " + e.getMessage(), e);
        }
    }

    /**
     * Adds the tables new to the shard's partitions to the running stream, or says why the replica must be built
     * again instead (a table left, a table's partitions changed, the columns changed meanwhile, no stream yet).
     *
     * <p>A table joins the publication, then the replica waits for every transaction running at that moment to end
     * (a change it made before the table joined is not streamed, so it must be in the copy), then copies the table
     * under a snapshot {@code S} of its own. Changes of the table the stream delivered meanwhile are kept and, like
     * every later one, applied only when their transaction is not visible in {@code S} (committed after it): the
     * copy has the others. The stream is read throughout but during the copy itself.
     */
    String tryAdd(ReplicationSource source, StreamApplier applier, Generation g, List<Partition> now)
            throws SQLException {
        Map<String, List<Partition>> byTable = new LinkedHashMap<>();
        for (Partition p : now) {
            byTable.computeIfAbsent(p.table(), t -> new ArrayList<>()).add(p);
        }
        List<String> left = new ArrayList<>();
        for (var e : g.keysByTable.entrySet()) {
            List<Partition> ps = byTable.get(e.getKey());
            if (ps == null) {
                left.add(e.getKey());
            } else if (!ShardReplica.dataKeys(ps).equals(e.getValue())) {
                return "the partitions of " + e.getKey() + " changed";
            }
        }
        if (!left.isEmpty()) {
            drop(g, left);
        }
        Map<String, List<Partition>> added = new LinkedHashMap<>(byTable);
        added.keySet().removeAll(g.keysByTable.keySet());
        if (added.isEmpty()) {
            g.dataKeys = ShardReplica.dataKeys(now);
            return g.rebuild;
        }
        if (g.tables.isEmpty()) {
            return "the shard has its first replicated table";
        }
        // of the changes streamed while the added tables were copied: applied, and already in the copy
        int[] kept = new int[2];
        try (Connection c = DriverManager.getConnection(jdbcUrl, properties("thresher-replica-add"))) {
            List<TableReplica> eligible = new ArrayList<>();
            Map<Integer, HeldPartition> judged = new HashMap<>();
            for (var e : added.entrySet()) {
                TableReplica t = judge(c, e.getKey(), e.getValue(), judged);
                if (t.ineligible == null) {
                    eligible.add(t);
                }
            }
            if (!eligible.isEmpty()) {
                String changed = addToStream(c, source, applier, g, eligible, judged, kept);
                if (changed != null) {
                    return changed;
                }
            } else {
                g.lock.writeLock().lock();
                try {
                    g.partitions.putAll(judged);
                } finally {
                    g.lock.writeLock().unlock();
                }
            }
            for (var e : added.entrySet()) {
                g.keysByTable.put(e.getKey(), ShardReplica.dataKeys(e.getValue()));
            }
            g.dataKeys = ShardReplica.dataKeys(now);
            log.info("replica of shard {} on {}: added {} to the stream ({} replicated; of the changes streamed while they"
                    + " were copied, {} applied, {} already in the copy)", shardId, hostId, added.keySet(),
                    eligible.stream().map(t -> t.name).toList(), kept[0], kept[1]);
            return g.rebuild;
        }
    }

    /**
     * Adds eligible tables to the running stream ({@link #tryAdd}): they join the publication, the transactions running
     * then are waited for, the tables are copied under a snapshot of their own and, under the write lock, the changes
     * kept meanwhile that the copy does not hold are applied. Counts those in {@code kept} (applied, already in the
     * copy).
     *
     * @return why the replica must be built again instead, or null
     */
    private String addToStream(Connection c, ReplicationSource source, StreamApplier applier, Generation g,
                               List<TableReplica> eligible, Map<Integer, HeldPartition> judged, int[] kept)
            throws SQLException {
        for (TableReplica t : eligible) {
            g.adding.put(t.name, t);
        }
        try (Statement s = c.createStatement()) {
            s.execute("ALTER PUBLICATION " + quote(publicationName()) + " ADD TABLE " + String.join(", ",
                    eligible.stream().map(t -> quote(t.namespace) + "." + quote(t.name)).toList()));
        }
        awaitRunningTransactions(c, source, applier, g);
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
            XidSnapshot snapshot;
            try (ResultSet rs = s.executeQuery("SELECT pg_current_snapshot()::text")) {
                rs.next();
                snapshot = XidSnapshot.parse(rs.getString(1));
            }
            if (!fingerprint(c, g.oids).equals(g.fingerprint)) {
                return "the columns of a replicated table changed";
            }
            copyTables(c, eligible);
            List<TableReplica> all = new ArrayList<>(g.tables.values());
            all.addAll(eligible);
            String oids = oids(all);
            String fingerprint = fingerprint(c, oids);
            g.lock.writeLock().lock();
            try {
                for (TableReplica t : eligible) {
                    t.visibleInCopy = snapshot;
                    for (StreamApplier.Kept k : t.kept) {
                        if (!snapshot.visible(k.xid())) {
                            applier.apply(k.change());
                            kept[0]++;
                        } else {
                            kept[1]++;
                        }
                    }
                    t.kept.clear();
                    g.adding.remove(t.name);
                    g.tables.put(t.name, t);
                    for (HeldPartition h : t.held) {
                        h.account(budget);
                    }
                }
                g.partitions.putAll(judged);
                g.oids = oids;
                g.fingerprint = fingerprint;
            } finally {
                g.lock.writeLock().unlock();
            }
            return null;
        } finally {
            c.rollback();
        }
    }

    /**
     * Forgets tables that left the shard (dropped, or their last partition moved away): their memory is released and
     * they leave the publication (a dropped table has left it already).
     */
    private void drop(Generation g, List<String> tables) throws SQLException {
        List<String> published = new ArrayList<>();
        g.lock.writeLock().lock();
        try {
            for (String name : tables) {
                TableReplica t = g.tables.remove(name);
                g.keysByTable.remove(name);
                g.partitions.values().removeIf(h -> {
                    if (!h.partition.table().equals(name)) {
                        return false;
                    }
                    budget.release(h.accounted);
                    h.accounted = 0;
                    h.evict("table left the shard");
                    return true;
                });
                if (t != null) {
                    published.add(quote(t.namespace) + "." + quote(t.name));
                }
            }
            g.oids = oids(g.tables.values());
        } finally {
            g.lock.writeLock().unlock();
        }
        // The digests of the tables left, as they were copied (one per table in the fingerprint).
        java.util.Set<String> kept = new java.util.HashSet<>();
        g.tables.values().forEach(t -> kept.add(Integer.toString(t.oid)));
        g.fingerprint = String.join(";", java.util.Arrays.stream(g.fingerprint.split(";"))
                .filter(d -> kept.contains(d.substring(0, Math.max(0, d.indexOf('='))))).toList());
        try (Connection c = DriverManager.getConnection(jdbcUrl, properties("thresher-replica-drop"))) {
            try (Statement s = c.createStatement()) {
                for (String table : published) {
                    try {
                        s.execute("ALTER PUBLICATION " + quote(publicationName()) + " DROP TABLE " + table);
                    } catch (SQLException gone) {
                        // the table was dropped, and left the publication with it
                    }
                }
            }
        }
        log.info("replica of shard {} on {}: {} left the shard; their replicas are released", shardId, hostId, tables);
    }

    /** Waits, reading the stream meanwhile, until every transaction running now has ended. */
    private void awaitRunningTransactions(Connection c, ReplicationSource source, StreamApplier applier, Generation g)
            throws SQLException {
        XidSnapshot running;
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_current_snapshot()::text")) {
            rs.next();
            running = XidSnapshot.parse(rs.getString(1));
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM unnest(?::xid8[]) x "
                + "WHERE pg_xact_status(x) = 'in progress'")) {
            ps.setString(1, running.xipArray());
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getLong(1) == 0) {
                        return;
                    }
                }
                if (System.nanoTime() - until > 0 || closed.getAsBoolean()) {
                    throw new SQLException("transactions running when a table joined the publication did not end in 30 s");
                }
                applier.pump(source);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
        }
    }

    static String quote(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    /** The shard database cannot stream: {@code wal_level} is not {@code logical}. */
    static final class NotLogical extends SQLException {
        NotLogical(String message) {
            super(message, "55000");
        }
    }
}
