package dev.thresher.store.control;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Selector;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.topology.Host;
import dev.thresher.topology.Leadership;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * The control database: catalog (tenants, packages, bindings, tables), topology (shards,
 * partitions, hosts, leadership leases) and invocation records. Every method is one short
 * transaction; callers run them off event loops.
 */
public final class ControlStore {
    private final DataSource db;

    public ControlStore(DataSource db) {
        this.db = db;
    }

    /** Applies the versioned migrations in {@code db/control}; safe to call from every node at start. */
    public static void migrate(DataSource db) {
        Flyway.configure()
                .dataSource(db)
                .locations("classpath:db/control")
                .table("thresher_schema_history")
                .load()
                .migrate();
    }

    // ---- catalog ------------------------------------------------------------------------------

    public void ensureTenant(String tenant) {
        update("INSERT INTO tenants (tenant) VALUES (?) ON CONFLICT DO NOTHING", tenant);
    }

    /** Stores a package by digest; storing the same bytes twice is a no-op. */
    public void putPackage(String digest, byte[] wasm) {
        update("INSERT INTO packages (digest, wasm, size_bytes) VALUES (?, ?, ?) ON CONFLICT (digest) DO NOTHING",
                digest, wasm, wasm.length);
    }

    public Optional<byte[]> packageBytes(String digest) {
        return queryOne("SELECT wasm FROM packages WHERE digest = ?", rs -> rs.getBytes(1), digest);
    }

    /**
     * Makes {@code (digest, selector)} the current version of a binding: returns the current
     * binding unchanged when it already pins both, else inserts the next version.
     */
    public Binding putBinding(String tenant, String name, String digest, String selectorSql) {
        Selector selector = Selector.parse(selectorSql);
        return inTransaction(c -> {
            try (PreparedStatement lock = c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
                lock.setString(1, tenant + "/" + name);
                lock.execute();
            }
            Optional<Binding> current = currentBinding(c, tenant, name);
            if (current.isPresent() && current.get().componentDigest().equals(digest)
                    && current.get().selector().sql().equals(selectorSql)) {
                return current.get();
            }
            int version = current.map(b -> b.version() + 1).orElse(1);
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO bindings (tenant, name, version, package_digest, selector_sql) VALUES (?, ?, ?, ?, ?)")) {
                ps.setString(1, tenant);
                ps.setString(2, name);
                ps.setInt(3, version);
                ps.setString(4, digest);
                ps.setString(5, selectorSql);
                ps.executeUpdate();
            }
            return new Binding(tenant, name, version, digest, selector);
        });
    }

    /** The highest version of a binding, if the name exists. */
    public Optional<Binding> currentBinding(String tenant, String name) {
        return inTransaction(c -> currentBinding(c, tenant, name));
    }

    /** One exact binding version (the receiving node re-resolves what the coordinator pinned). */
    public Optional<Binding> binding(String tenant, String name, String digest) {
        return queryOne("""
                SELECT version, package_digest, selector_sql FROM bindings
                WHERE tenant = ? AND name = ? AND package_digest = ? ORDER BY version DESC LIMIT 1""",
                rs -> new Binding(tenant, name, rs.getInt(1), rs.getString(2), Selector.parse(rs.getString(3))),
                tenant, name, digest);
    }

    private static Optional<Binding> currentBinding(Connection c, String tenant, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT version, package_digest, selector_sql FROM bindings
                WHERE tenant = ? AND name = ? ORDER BY version DESC LIMIT 1""")) {
            ps.setString(1, tenant);
            ps.setString(2, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new Binding(tenant, name, rs.getInt(1), rs.getString(2), Selector.parse(rs.getString(3))));
            }
        }
    }

    public void putShard(int shardId, String jdbcUrl) {
        update("INSERT INTO shards (shard_id, jdbc_url) VALUES (?, ?) ON CONFLICT (shard_id) DO UPDATE SET jdbc_url = EXCLUDED.jdbc_url",
                shardId, jdbcUrl);
    }

    public void putTable(String tenant, String table, String keyColumn, String keyType) {
        update("""
                INSERT INTO user_tables (tenant, table_name, key_column, key_type) VALUES (?, ?, ?, ?)
                ON CONFLICT (tenant, table_name) DO NOTHING""", tenant, table, keyColumn, keyType);
    }

    /** Creates a partition; an existing id is left as it is. */
    public void putPartition(Partition p) {
        update("""
                INSERT INTO partitions (partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch)
                VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (partition_id) DO NOTHING""",
                p.id(), p.tenant(), p.table(), p.slotLo(), p.slotHi(), p.shardId(), p.epoch());
    }

    // ---- topology ------------------------------------------------------------------------------

    /** Registers or re-registers a node. */
    public void registerHost(Host h, String pgwireAddress, String httpAddress) {
        update("""
                INSERT INTO hosts (host_id, shard_id, wire_host, wire_port, pgwire_address, http_address)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (host_id) DO UPDATE SET shard_id = EXCLUDED.shard_id, wire_host = EXCLUDED.wire_host,
                  wire_port = EXCLUDED.wire_port, pgwire_address = EXCLUDED.pgwire_address,
                  http_address = EXCLUDED.http_address, started_at = now(), heartbeat_at = now()""",
                h.hostId(), h.shardId(), h.wireHost(), h.wirePort(), pgwireAddress, httpAddress);
    }

    /**
     * Takes or renews leadership of every partition on the host's shard whose lease is free,
     * expired, or already the host's own; a live lease of another host is left alone.
     *
     * @return the partition ids the host leads afterwards
     */
    public List<Integer> acquireLeadership(String hostId, int shardId, long leaseMs) {
        return inTransaction(c -> {
            try (PreparedStatement hb = c.prepareStatement("UPDATE hosts SET heartbeat_at = now() WHERE host_id = ?")) {
                hb.setString(1, hostId);
                hb.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement("""
                    INSERT INTO partition_leases (partition_id, host_id, epoch, lease_until)
                    SELECT p.partition_id, ?, p.epoch, now() + make_interval(secs => ? / 1000.0)
                    FROM partitions p WHERE p.shard_id = ?
                    ON CONFLICT (partition_id) DO UPDATE
                      SET host_id = EXCLUDED.host_id, epoch = EXCLUDED.epoch, lease_until = EXCLUDED.lease_until
                      WHERE partition_leases.host_id = EXCLUDED.host_id OR partition_leases.lease_until < now()
                    RETURNING partition_id""")) {
                ps.setString(1, hostId);
                ps.setLong(2, leaseMs);
                ps.setInt(3, shardId);
                List<Integer> led = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        led.add(rs.getInt(1));
                    }
                }
                return led;
            }
        });
    }

    /** Gives up every lease the host holds (clean shutdown), so a successor need not wait for expiry. */
    public void releaseLeadership(String hostId) {
        update("DELETE FROM partition_leases WHERE host_id = ?", hostId);
    }

    /** Reads partitions, live and expired leases and hosts in one snapshot, stamped with the database clock. */
    public Topology readTopology() {
        return inTransaction(c -> {
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            Instant now;
            try (PreparedStatement ps = c.prepareStatement("SELECT now()"); ResultSet rs = ps.executeQuery()) {
                rs.next();
                now = rs.getTimestamp(1).toInstant();
            }
            List<Partition> partitions = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch FROM partitions");
                 ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    partitions.add(new Partition(rs.getInt(1), rs.getString(2), rs.getString(3), rs.getInt(4),
                            rs.getInt(5), rs.getInt(6), rs.getLong(7)));
                }
            }
            List<Leadership> leaders = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT partition_id, host_id, epoch, lease_until FROM partition_leases");
                 ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    leaders.add(new Leadership(rs.getInt(1), rs.getString(2), rs.getLong(3), rs.getTimestamp(4).toInstant()));
                }
            }
            List<Host> hosts = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement("SELECT host_id, shard_id, wire_host, wire_port FROM hosts");
                 ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    hosts.add(new Host(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getInt(4)));
                }
            }
            return Topology.of(partitions, leaders, hosts, now);
        });
    }

    // ---- invocations ------------------------------------------------------------------------------

    /** Records the start of a call. */
    public void insertInvocation(UUID callId, Binding binding, String principal, String coordinatorHost,
                                 int shardCount, long deadlineEpochMs) {
        update("""
                INSERT INTO invocations (call_id, tenant, binding_name, binding_version, package_digest, principal,
                  coordinator_host, shard_count, deadline_at, state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running')""",
                callId, binding.tenant(), binding.name(), binding.version(), binding.componentDigest(), principal,
                coordinatorHost, shardCount, Timestamp.from(Instant.ofEpochMilli(deadlineEpochMs)));
    }

    /**
     * Publishes a call's result: visible once or never.
     *
     * @return false when the call was already finished (the result stays the first one)
     */
    public boolean publishResult(UUID callId, String resultJson) {
        return update("""
                UPDATE invocations SET state = 'succeeded', result_json = ?, finished_at = now()
                WHERE call_id = ? AND state = 'running'""", resultJson, callId) == 1;
    }

    /** Records a call's failure, unless it already finished. */
    public boolean failInvocation(UUID callId, ErrorCode code, String message) {
        return update("""
                UPDATE invocations SET state = 'failed', error_code = ?, error_message = ?, finished_at = now()
                WHERE call_id = ? AND state = 'running'""", code.code(), message, callId) == 1;
    }

    /** The published result of a call, if it succeeded. */
    public Optional<String> result(UUID callId) {
        return queryOne("SELECT result_json FROM invocations WHERE call_id = ? AND state = 'succeeded'",
                rs -> rs.getString(1), callId);
    }

    // ---- plumbing ------------------------------------------------------------------------------

    @FunctionalInterface
    private interface SqlFunction<T, R> {
        R apply(T t) throws SQLException;
    }

    private <R> R inTransaction(SqlFunction<Connection, R> work) {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                R r = work.apply(c);
                c.commit();
                return r;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    private int update(String sql, Object... args) {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    private <R> Optional<R> queryOne(String sql, SqlFunction<ResultSet, R> row, Object... args) {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(row.apply(rs)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    private static void bind(PreparedStatement ps, Object... args) throws SQLException {
        for (int i = 0; i < args.length; i++) {
            ps.setObject(i + 1, args[i]);
        }
    }

    private static ThresherException unavailable(SQLException e) {
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: " + e.getMessage(), e);
    }
}
