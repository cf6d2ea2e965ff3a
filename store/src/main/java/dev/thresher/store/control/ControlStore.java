package dev.thresher.store.control;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.Selector;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * The control database as one handle, for the callers that hold one (a node's boot, the dev cluster, the bench,
 * tests): its migrations, and the stores that own its tables, each the one writer of them. Tenants, packages,
 * manifests and binding versions are {@link BindingCatalog}'s; tables and their partitions as created and dropped are
 * {@link TableCatalog}'s; shard databases, hosts, leases and the partitions as they move are {@link TopologyStore}'s;
 * invocations, the journal, shard slots and reduce leases are {@link CallJournal}'s. The methods here delegate to them.
 */
public final class ControlStore {
    private final BindingCatalog bindings;
    private final TableCatalog tables;
    private final TopologyStore topology;
    private final CallJournal calls;

    public ControlStore(DataSource db) {
        this.bindings = new BindingCatalog(db);
        this.tables = new TableCatalog(db);
        this.topology = new TopologyStore(db);
        this.calls = new CallJournal(db);
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

    /** The binding catalog: tenants, packages, manifests and binding versions, the one writer of those tables. */
    public BindingCatalog bindings() {
        return bindings;
    }

    public void ensureTenant(String tenant) {
        bindings.ensureTenant(tenant);
    }

    /** Stores a package by digest; storing the same bytes twice is a no-op. */
    public void putPackage(String digest, byte[] wasm) {
        bindings.putPackage(digest, wasm);
    }

    public Optional<byte[]> packageBytes(String digest) {
        return bindings.packageBytes(digest);
    }

    /**
     * Makes {@code (digest, selector)} the current version of a distributed call's binding (no manifest, no declared
     * budgets): returns the current binding unchanged when it already pins both, else the next version, numbered as
     * every deploy numbers them ({@link BindingCatalog}).
     */
    public Binding putBinding(String tenant, String name, String digest, String selectorSql) {
        Selector.parse(selectorSql);
        int version = bindings.deploy(tenant, name, new BindingCatalog.Pins(digest, null, null, selectorSql, Budgets.NONE),
                null, null, "catalog").version();
        return bindings.call(tenant, name, version).orElseThrow();
    }

    /** The highest version of a binding, if the name exists and is a distributed call's (not an HTTP handler's). */
    public Optional<Binding> currentBinding(String tenant, String name) {
        return bindings.currentCall(tenant, name);
    }

    /** One immutable version of a binding, whether or not it is still the current one. */
    public Optional<Binding> binding(String tenant, String name, int version) {
        return bindings.call(tenant, name, version);
    }

    // Shard databases are TopologyStore's, tables and their first partitions TableCatalog's; these delegate for the
    // callers (the dev cluster, the node's boot, tests) that hold a ControlStore.

    /** {@link TopologyStore#putShard}. */
    public void putShard(int shardId, String jdbcUrl) {
        topology.putShard(shardId, jdbcUrl);
    }

    /** {@link TopologyStore#shardUrls}. */
    public Map<Integer, String> shardUrls() {
        return topology.shardUrls();
    }

    /** The table catalog: tables, their partitions as created and dropped, table migrations. */
    public TableCatalog tables() {
        return tables;
    }

    /** The topology: shard databases, hosts, candidates, leases, epochs and movement. */
    public TopologyStore topology() {
        return topology;
    }

    /** {@link TableCatalog#putTable}. */
    public void putTable(String tenant, String table, String keyColumn, String keyType) {
        tables.putTable(tenant, table, keyColumn, keyType);
    }

    /** {@link TableCatalog#putTablePartitions}. */
    public void putTablePartitions(String tenant, String table, List<Partition> partitions) {
        tables.putTablePartitions(tenant, table, partitions);
    }

    /** {@link TableCatalog#putPartition}. */
    public void putPartition(Partition p) {
        tables.putPartition(p);
    }

    /** The call journal: invocations, the journal, shard slots, reduce leases and their retention. */
    public CallJournal calls() {
        return calls;
    }

    // ---- topology ------------------------------------------------------------------------------

    /** Reads partitions, live and expired leases and hosts in one snapshot ({@link TopologyStore#readTopology}). */
    public Topology readTopology() {
        return topology.readTopology();
    }

    /** The topology version ({@link TopologyStore#readTopologyVersion}). */
    public long readTopologyVersion() {
        return topology.readTopologyVersion();
    }
}
