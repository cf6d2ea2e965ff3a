package dev.thresher.server.node;

import dev.thresher.bindings.BindingService;
import dev.thresher.bindings.InsertCommand;
import dev.thresher.bindings.TableService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.admin.CsvLoader;
import dev.thresher.server.admin.LoadRecords;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * The node's {@link TableService}: the table commands of {@link TableAdmin} for the front doors, their SQL
 * forms over pgwire, and {@code COPY ... FROM STDIN} and {@code INSERT ... VALUES} through the same loader as
 * {@code thresher load} (rows routed by their key's slot, one COPY and one transaction per shard database).
 * The catalog is opened on first use and kept.
 */
final class NodeTableService implements TableService, AutoCloseable {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(NodeTableService.class);
    private final String controlUrl;
    private final String user;
    private final String password;
    private TableAdmin admin;
    private boolean closed;

    private final dev.thresher.limits.Limits limits;

    NodeTableService(String controlUrl, String user, String password, dev.thresher.limits.Limits limits) {
        this.limits = limits;
        this.controlUrl = controlUrl;
        this.user = user;
        this.password = password;
    }

    synchronized TableAdmin admin() {
        if (closed) {
            throw new ThresherException(ErrorCode.CELL_UNAVAILABLE, "the node is stopping");
        }
        if (admin == null) {
            admin = new TableAdmin(controlUrl, user, password, new PrintStream(PrintStream.nullOutputStream()));
        }
        return admin;
    }

    private CsvLoader loader(String table) {
        return new CsvLoader(admin(), (rows, rate) -> log.info("loading {}: {} rows routed ({} rows/s)", table, rows,
                Math.round(rate)), limits.batchMaxBytes());
    }

    /**
     * The loads, inserts and table reads running on this node, through either front door: at most one per connection
     * of the shard pools they go through ({@link TableAdmin#SHARD_POOL_SIZE}), so none waits for a connection.
     */
    private final java.util.concurrent.Semaphore writers = new java.util.concurrent.Semaphore(TableAdmin.SHARD_POOL_SIZE);

    private interface RowWork<T> {
        T run() throws IOException;
    }

    /** Runs a load, an insert or a read in one of the node's {@link #writers} places; refused, retryable, when none is free. */
    private <T> T writing(RowWork<T> work) throws IOException {
        if (!writers.tryAcquire()) {
            throw new ThresherException(ErrorCode.CELL_UNAVAILABLE, TableAdmin.SHARD_POOL_SIZE
                    + " loads, inserts and table reads are running on this node already; retry");
        }
        try {
            return work.run();
        } finally {
            writers.release();
        }
    }

    @Override
    public List<PartitionBatches> readBatches(String tenant, String table, String selector, int abiVersion) {
        try {
            return writing(() -> new dev.thresher.server.admin.TableReads(admin(), limits)
                    .read(tenant, table, selector, abiVersion));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e); // a read throws none
        }
    }

    /**
     * The node's binding service, on this service's catalog connections (opened on first use) and the node's
     * limits.
     */
    dev.thresher.bindings.TopologyService topologyChanges() {
        return new dev.thresher.bindings.TopologyService() {
            private TopologyAdmin t() {
                return new TopologyAdmin(admin(), limits, new PrintStream(PrintStream.nullOutputStream()));
            }

            @Override
            public Change splitPartition(String by, int partitionId, java.util.OptionalInt at, boolean dryRun) {
                return t().splitPartition(by, partitionId, at, dryRun);
            }

            @Override
            public Change movePartition(String by, int partitionId, String toShard, boolean dryRun) {
                return t().movePartition(by, partitionId, toShard, dryRun);
            }

            @Override
            public Change transferLeader(String by, int partitionId, String toHost, boolean dryRun) {
                return t().transferLeader(by, partitionId, toHost, dryRun);
            }

            @Override
            public Change drainNode(String by, String hostId, boolean dryRun) {
                return t().drainNode(by, hostId, dryRun);
            }

            @Override
            public Change undrainNode(String by, String hostId, boolean dryRun) {
                return t().undrainNode(by, hostId, dryRun);
            }

            @Override
            public Change addShard(String by, String jdbcUrl, java.util.Optional<String> name, boolean dryRun) {
                return t().addShard(by, jdbcUrl, name, dryRun);
            }

            @Override
            public Change removeShard(String by, String shard, boolean dryRun) {
                return t().removeShard(by, shard, dryRun);
            }

            @Override
            public java.util.List<Change> changes(int limit) {
                return t().changes(limit);
            }

            @Override
            public java.util.List<Shard> shards() {
                return t().shards();
            }

            @Override
            public String controlView() {
                return t().controlView();
            }

            @Override
            public Replicas replicas() {
                return replicas.get();
            }
        };
    }

    private volatile java.util.function.Supplier<dev.thresher.bindings.TopologyService.Replicas> replicas =
            () -> new dev.thresher.bindings.TopologyService.Replicas(0, 0, java.util.List.of(), 0, java.util.Map.of());

    /** Where {@code GET /admin/topology/replicas} reads the node's leader replicas. */
    void replicaStatus(java.util.function.Supplier<dev.thresher.bindings.TopologyService.Replicas> status) {
        this.replicas = status;
    }

    BindingService bindings() {
        return new BindingService() {
            private BindingAdmin b() {
                return new BindingAdmin(admin(), limits);
            }

            @Override
            public Deployed deploy(String tenant, String deployedBy, byte[] manifest, byte[] module) {
                return b().deploy(tenant, deployedBy, manifest, module);
            }

            @Override
            public Deployed rollback(String tenant, String name, int to, String deployedBy) {
                return b().rollback(tenant, name, to, deployedBy);
            }

            @Override
            public List<Version> list(String tenant) {
                return b().list(tenant);
            }

            @Override
            public List<Version> history(String tenant, String name) {
                return b().history(tenant, name);
            }

            @Override
            public java.util.Optional<String> manifest(String manifestDigest) {
                return b().manifest(manifestDigest);
            }

            @Override
            public String execute(String tenant, String user, dev.thresher.bindings.BindingCommand command) {
                return b().execute(tenant, user, command);
            }
        };
    }

    @Override
    public TableInfo create(String tenant, TableSpec spec) {
        admin().create(tenant, spec.name(), spec.key(), spec.columns(), spec.partitions(), spec.shards());
        return admin().info(tenant, spec.name());
    }

    @Override
    public List<TableInfo> list(String tenant) {
        return admin().infos(tenant);
    }

    @Override
    public TableInfo show(String tenant, String table) {
        return admin().info(tenant, table);
    }

    @Override
    public void drop(String tenant, String table) {
        admin().drop(tenant, table);
    }

    @Override
    public TableInfo alter(String tenant, String table, Change change) {
        return admin().alter(tenant, table, change);
    }

    @Override
    public TableInfo migrate(String tenant, String table) {
        return admin().migrate(tenant, table);
    }

    @Override
    public String execute(String tenant, String user, dev.thresher.bindings.TableCommand command) {
        switch (command) {
            case dev.thresher.bindings.TableCommand.Create c -> {
                create(tenant, c.spec());
                return "CREATE TABLE";
            }
            case dev.thresher.bindings.TableCommand.Drop d -> {
                try {
                    drop(tenant, d.table());
                } catch (ThresherException e) {
                    if (!(d.ifExists() && e.code() == ErrorCode.UNKNOWN_TABLE)) {
                        throw e;
                    }
                }
                return "DROP TABLE";
            }
            case dev.thresher.bindings.TableCommand.Alter a -> {
                TableInfo after = alter(tenant, a.table(), a.change());
                MigrationInfo last = after.migrations().get(after.migrations().size() - 1);
                if (!last.errors().isEmpty()) {
                    throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "migration " + last.version() + " ("
                            + last.description() + ") failed on shard(s) " + last.errors() + "; it applied where it says"
                            + " applied " + last.states() + "; fix the cause and run thresher table migrate " + a.table());
                }
                return "ALTER TABLE";
            }
        }
    }

    @Override
    public long copyFrom(String tenant, String user, CopySpec spec, IntConsumer ready, InputStream data) {
        return loading("COPY data", () -> loader(spec.table()).copy(tenant, spec.table(), spec.columns(), spec.csv(), spec.header(),
                spec.delimiter(), spec.nullString(), ready, utf8(data))).rows();
    }

    @Override
    public Loaded load(String tenant, String table, boolean header, InputStream csv) {
        return loading("the CSV file", () -> loader(table).load(tenant, table, utf8(csv), header));
    }

    /** A load's bytes as text, refusing what is not UTF-8 rather than replacing it. */
    private static InputStreamReader utf8(InputStream data) {
        return new InputStreamReader(data, StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT));
    }

    /** Runs a load; its data not being UTF-8, or not arriving whole, is a typed failure ({@code what} names the data). */
    private Loaded loading(String what, RowWork<Loaded> work) {
        try {
            return writing(work);
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new ThresherException(ErrorCode.INVALID_TEXT_ENCODING, what + " is not valid UTF-8", e);
        } catch (IOException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, e.getMessage() == null ? what + " could not be read"
                    : e.getMessage(), e);
        }
    }

    @Override
    public long insert(String tenant, String user, InsertCommand insert) {
        List<List<LoadRecords.Field>> rows = new ArrayList<>(insert.rows().size());
        for (List<InsertCommand.Value> row : insert.rows()) {
            List<LoadRecords.Field> fields = new ArrayList<>(row.size());
            for (InsertCommand.Value v : row) {
                fields.add(switch (v) {
                    case InsertCommand.Value.Text t -> LoadRecords.Field.of(t.text());
                    case InsertCommand.Value.Null n -> LoadRecords.Field.NULL;
                    case InsertCommand.Value.Parameter p -> throw new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                            "row " + (rows.size() + 1) + ", value " + (fields.size() + 1) + ": parameter $" + p.number()
                                    + " is not bound");
                });
            }
            rows.add(fields);
        }
        String table = insert.table();
        try {
            return writing(() -> loader(table).insert(tenant, table, insert.columns(), rows)).rows();
        } catch (IOException e) {
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "INSERT failed: " + e.getMessage(), e);
        }
    }


    @Override
    public synchronized void close() {
        closed = true;
        if (admin != null) {
            admin.close();
            admin = null;
        }
    }
}
