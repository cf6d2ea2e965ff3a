package dev.thresher.server.dev;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.CallRequest;
import dev.thresher.errors.ThresherException;
import dev.thresher.examples.ExampleComponents;
import dev.thresher.http.HttpAccess;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.AuthMode;
import dev.thresher.pgwire.TlsMode;
import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.node.Node;
import dev.thresher.server.node.NodeConfig;
import dev.thresher.server.node.TlsSettings;
import dev.thresher.store.Pools;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.TopologyStore;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A whole cluster on one machine: embedded PostgreSQL with a control database and shard
 * databases, the sample {@code orders} table spread over them, the sample component bound as
 * {@value #SAMPLE_BINDING}, and nodes on loopback, one per shard database.
 */
public final class DevCluster implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DevCluster.class);

    public static final String TENANT = "default";
    public static final String USER = "thresher";
    public static final String PASSWORD = "thresher";
    public static final String SAMPLE_BINDING = "revenue_by_region";
    public static final String SAMPLE_SELECTOR = "SELECT region, amount FROM orders";
    public static final List<String> REGIONS = List.of(
            "africa", "antarctica", "asia", "europe", "middle_east", "north_america", "oceania", "south_america");

    /**
     * @param workDir where PostgreSQL's data and {@code endpoints.json} go
     * @param pgwirePort the first node's pgwire port (the others follow it); 0 for ephemeral ports everywhere
     * @param rows sample rows to generate
     * @param partitions partitions of the sample table
     * @param shards shard databases, one node each
     * @param seed the sample data's seed
     * @param limits the limits every node runs with
     * @param startNodes whether to start the nodes in this process; without, the databases are prepared and the nodes
     *     are someone else's to start (separate processes, say), one per shard, each standing by for the next shard
     * @param standbys whether each node stands by for the next node's shard (without: one candidate per partition)
     * @param controlApart whether the control database runs in an embedded PostgreSQL of its own, apart from the
     *     shard databases' (as docs/deployment.md advises for production), rather than beside them in one
     * @param controlStandby whether that PostgreSQL has a synchronous streaming standby, the nodes reaching both through
     *     a multi-host URL ({@link #failOverControl}; implies {@code controlApart})
     */
    public record Options(Path workDir, int pgwirePort, int rows, int partitions, int shards, long seed, Limits limits,
                          boolean failpoints, boolean startNodes, boolean standbys, boolean controlApart,
                          boolean controlStandby) {
        public Options(Path workDir, int pgwirePort, int rows, int partitions, int shards, long seed, Limits limits,
                       boolean failpoints) {
            this(workDir, pgwirePort, rows, partitions, shards, seed, limits, failpoints, true, true, false, false);
        }

        /**
         * The control database in an embedded PostgreSQL of its own: the shard databases' server then writes WAL
         * only for their rows, which is all its logical replication streams (the leader replicas) decode and wait
         * for, instead of every call's coordination writes as well.
         */
        public Options withControlApart() {
            return new Options(workDir, pgwirePort, rows, partitions, shards, seed, limits, failpoints, startNodes, standbys,
                    true, controlStandby);
        }

        /**
         * The control database apart, with a synchronous streaming standby: as production runs it (docs/deployment.md,
         * "The control database, highly available"); {@link DevCluster#failOverControl} promotes the standby.
         */
        public Options withControlStandby() {
            return new Options(workDir, pgwirePort, rows, partitions, shards, seed, limits, failpoints, startNodes, standbys,
                    true, true);
        }

        /** One candidate per partition, its home node: what tests of the fences under a single leader want. */
        public Options withoutStandbys() {
            return new Options(workDir, pgwirePort, rows, partitions, shards, seed, limits, failpoints, startNodes, false, controlApart, controlStandby);
        }

        public static Options defaults(Path workDir) {
            return new Options(workDir, 5433, 50_000, 16, 3, 42, Limits.DEFAULTS, false);
        }

        /** The databases only: control and shard databases seeded, no node started. */
        public Options withoutNodes() {
            return new Options(workDir, pgwirePort, rows, partitions, shards, seed, limits, failpoints, false, standbys, controlApart, controlStandby);
        }

        public Options withPgwirePort(int port) {
            return new Options(workDir, port, rows, partitions, shards, seed, limits, failpoints, startNodes, standbys, controlApart, controlStandby);
        }

        public Options withRows(int n) {
            return new Options(workDir, pgwirePort, n, partitions, shards, seed, limits, failpoints, startNodes, standbys, controlApart, controlStandby);
        }

        public Options withLimits(Limits l) {
            return new Options(workDir, pgwirePort, rows, partitions, shards, seed, l, failpoints, startNodes, standbys, controlApart, controlStandby);
        }

        public Options withPartitions(int n) {
            return new Options(workDir, pgwirePort, rows, n, shards, seed, limits, failpoints, startNodes, standbys, controlApart, controlStandby);
        }

        /**
         * The most sample rows the dev cluster generates (they are built in memory before they are copied).
         * A partition may hold any number of them: the sample component reads its partition as a stream of
         * batches (guest ABI v2).
         */
        public static final int ROWS_MAX = 5_000_000;

        /** Nodes whose failpoints tests can arm. */
        public Options withFailpoints() {
            return new Options(workDir, pgwirePort, rows, partitions, shards, seed, limits, true, startNodes, standbys, controlApart, controlStandby);
        }
    }

    private final Options options;
    /** The nodes' admin bearer token, new for each start; {@code endpoints.json} names it as {@code "token"}. */
    private final String adminToken = newToken();
    private EmbeddedPostgres postgres;
    /** The control database's own PostgreSQL ({@link Options#controlApart}), or null: then it is in {@link #postgres}. */
    private EmbeddedPostgres controlPostgres;
    /** The control database's standby ({@link Options#controlStandby}), or null. */
    private ControlStandby controlStandby;
    private final List<Node> nodes = new ArrayList<>();
    /** The nodes' pgwire certificate, {@code tls/} under the work directory; kept across starts while valid. */
    private SelfSignedCertificate certificate;

    private DevCluster(Options options) {
        this.options = options;
    }

    public static DevCluster start(Options options) throws Exception {
        DevCluster c = new DevCluster(options);
        try {
            c.startAll();
            return c;
        } catch (Exception e) {
            c.close();
            throw e;
        }
    }

    private void startAll() throws Exception {
        long t0 = System.nanoTime();
        Files.createDirectories(options.workDir());
        // What a dev cluster killed here before left behind (a PostgreSQL still running, its data directory): cleared,
        // with one log line each, so this start begins clean; refused when a live dev cluster uses the directory.
        DevRecovery.recover(options.workDir());
        Files.deleteIfExists(endpointsFile()); // a dead cluster's; written again once this one is up
        certificate = SelfSignedCertificate.ensure(tlsDirectory());
        postgres = embeddedPostgres(DevRecovery.dataDirectory(options.workDir()))
                // Leader replicas stream each shard database through logical replication (docs/deployment.md).
                .setServerConfig("wal_level", "logical")
                .setServerConfig("max_replication_slots", "64")
                .setServerConfig("max_wal_senders", "64")
                .start();
        log.info("embedded PostgreSQL up on port {} in {} ms", postgres.getPort(), (System.nanoTime() - t0) / 1_000_000);
        if (options.controlApart()) {
            controlPostgres = embeddedPostgres(DevRecovery.controlDataDirectory(options.workDir())).start();
            log.info("the control database's embedded PostgreSQL up on port {}", controlPostgres.getPort());
        }
        List<String> databases = new ArrayList<>();
        if (controlPostgres == null) {
            databases.add("thresher_control");
        }
        for (int i = 1; i <= options.shards(); i++) {
            databases.add("thresher_shard_" + i);
        }
        createRoleAndDatabases(postgres, databases);
        if (controlPostgres != null) {
            createRoleAndDatabases(controlPostgres, List.of("thresher_control"));
        }
        if (options.controlStandby()) {
            controlStandby = ControlStandby.start(controlPostgres, "thresher_control",
                    DevRecovery.controlStandbyDirectory(options.workDir()));
        }
        try (HikariDataSource controlDb = Pools.open("dev-setup", controlUrl(), USER, PASSWORD, 2)) {
            ControlStore.migrate(controlDb);
            seed(new ControlStore(controlDb), new dev.thresher.store.control.TableCatalog(controlDb));
        }
        for (int i = 1; options.startNodes() && i <= options.shards(); i++) {
            int pg = options.pgwirePort() == 0 ? 0 : options.pgwirePort() + i - 1;
            // Node-to-node and HTTP ports are ephemeral; endpoints.json and the banner name them.
            // Each node stands by for the next node's shard database, so every partition has two candidates.
            List<Integer> standby = standbyShards(i);
            nodes.add(Node.start(new NodeConfig("node-" + i, i, "127.0.0.1", 0, pg, 0, controlUrl(), shardUrl(i),
                    USER, PASSWORD, AuthMode.SCRAM, USER, PASSWORD, TENANT, options.limits(), options.failpoints(),
                    standby).withHttpAccess(HttpAccess.withToken(adminToken)).withTls(tls())));
        }
        if (options.startNodes()) {
            awaitHomeLeadership();
        }
        writeEndpoints();
        log.info("dev cluster ready in {} ms", (System.nanoTime() - t0) / 1_000_000);
    }

    /** An embedded PostgreSQL in {@code data}, with the dev cluster's settings; stopped by {@link #close()}, after the nodes. */
    private static EmbeddedPostgres.Builder embeddedPostgres(Path data) {
        return EmbeddedPostgres.builder()
                .setDataDirectory(data)
                .setCleanDataDirectory(true)
                // Stopped by close(), after the nodes, so they can release their leases first.
                .setRegisterShutdownHook(false)
                .setServerConfig("max_connections", "300")
                .setServerConfig("fsync", "off")
                .setServerConfig("synchronous_commit", "off")
                .setServerConfig("full_page_writes", "off");
    }

    /** The cluster's role on {@code server}, then {@code databases} owned by it. */
    private static void createRoleAndDatabases(EmbeddedPostgres server, List<String> databases) throws SQLException {
        try (Connection c = server.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE ROLE " + USER + " LOGIN SUPERUSER PASSWORD '" + PASSWORD + "'");
            for (String database : databases) {
                s.execute("CREATE DATABASE " + database + " OWNER " + USER);
            }
        }
    }

    /**
     * Waits (up to a minute) until every partition is led by a home node of its shard, as the nodes settle: a node
     * that started before another may have taken the other's partitions as a standby, and hands them back.
     */
    void awaitHomeLeadership() throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        TopologyStore topology = topology();
        while (true) {
            long waiting = topology.partitionsNotLedFromHome();
            if (waiting == 0) {
                return;
            }
            if (System.nanoTime() - until > 0) {
                log.warn("{} partitions are not led by a home node after a minute", waiting);
                return;
            }
            Thread.sleep(100);
        }
    }

    /** The cluster's topology in its control database, each statement on a connection of its own. */
    TopologyStore topology() {
        org.postgresql.ds.PGSimpleDataSource db = new org.postgresql.ds.PGSimpleDataSource();
        db.setURL(controlUrl());
        db.setUser(USER);
        db.setPassword(PASSWORD);
        return new TopologyStore(db);
    }

    /**
     * The nodes' TLS: pgwire offers it (SSLRequest answered 'S', cleartext still served) with the cluster's
     * self-signed certificate; HTTP stays plain, on loopback.
     */
    public TlsSettings tls() {
        return TlsSettings.of(certificate.certFile(), certificate.keyFile(), TlsMode.ENABLED, false);
    }

    /** Where the certificate and key are: {@code tls/} under the work directory. */
    public Path tlsDirectory() {
        return options.workDir().resolve("tls");
    }

    /** The certificate pgwire presents, which clients trust as its own root ({@code sslrootcert=}). */
    public Path caCertFile() {
        return certificate.certFile().toAbsolutePath();
    }

    /** The sample table on each shard database: partitioned by slot, one child per partition of the shard. */
    static final String ORDERS_DDL = """
            CREATE TABLE orders (
                order_id bigint NOT NULL,
                region text NOT NULL,
                amount double precision NOT NULL,
                %1$s integer NOT NULL,
                PRIMARY KEY (order_id, %1$s)) PARTITION BY RANGE (%1$s)""".formatted(ShardReader.SLOT_COLUMN);

    /** The shard databases node {@code i} (of shard {@code i}) stands by for: the next one, round the ring. */
    public List<Integer> standbyShards(int i) {
        return options.shards() > 1 && options.standbys() ? List.of(i % options.shards() + 1) : List.of();
    }

    private void seed(ControlStore control, dev.thresher.store.control.TableCatalog catalog) throws SQLException, IOException {
        control.ensureTenant(TENANT);
        for (int i = 1; i <= options.shards(); i++) {
            control.putShard(i, shardUrl(i));
        }
        catalog.putTable(TENANT, "orders", "order_id", "bigint");
        int n = options.partitions();
        int width = Slots.COUNT / n;
        List<Partition> partitions = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            int lo = p * width;
            int hi = p == n - 1 ? Slots.COUNT - 1 : lo + width - 1;
            partitions.add(new Partition(p, TENANT, "orders", lo, hi, p % options.shards() + 1, 1));
        }
        catalog.putTablePartitions(TENANT, "orders", partitions);
        loadOrders(partitions);
        // Deployed as a user deploys it: the package of examples/revenue_by_region, checked, with its manifest.
        try (TableAdmin tables = new TableAdmin(controlUrl(), USER, PASSWORD, new java.io.PrintStream(
                java.io.PrintStream.nullOutputStream()))) {
            // Its schema as migration 1, as `thresher table create` records it: a move to a shard without the table
            // creates it there from its migrations.
            catalog.recordMigration(TENANT, "orders", 1, "create table", ORDERS_DDL,
                    java.util.stream.IntStream.rangeClosed(1, options.shards()).boxed().toList(), "applied");
            BindingAdmin.Deployed d = new BindingAdmin(tables, options.limits()).deploy(TENANT, "dev-cluster",
                    ExampleComponents.revenueByRegionManifest(), ExampleComponents.revenueByRegionWasm());
            log.info("deployed {} version {}: package {} with selector '{}'", SAMPLE_BINDING, d.version(), d.packageDigest(),
                    SAMPLE_SELECTOR);
        }
    }

    /**
     * Generates the sample orders and copies each row into the shard database of its slot's partition,
     * in slot order: a partition's rows then sit together on disk and its slot-range read touches its
     * own pages only.
     */
    private void loadOrders(List<Partition> partitions) throws SQLException, IOException {
        Random random = new Random(options.seed());
        Map<Integer, TreeMap<Integer, StringBuilder>> bySlotPerShard = new LinkedHashMap<>();
        Partition[] partitionOf = new Partition[Slots.COUNT];
        for (Partition p : partitions) {
            for (int slot = p.slotLo(); slot <= p.slotHi(); slot++) {
                partitionOf[slot] = p;
            }
        }
        for (long id = 1; id <= options.rows(); id++) {
            String region = REGIONS.get(random.nextInt(REGIONS.size()));
            double amount = Math.round(random.nextDouble() * 100_000) / 100.0;
            int slot = Slots.ofLong(id);
            Partition p = partitionOf[slot];
            bySlotPerShard.computeIfAbsent(p.shardId(), k -> new TreeMap<>()).computeIfAbsent(slot, k -> new StringBuilder())
                    .append(id).append('\t').append(region).append('\t').append(amount).append('\t').append(slot).append('\n');
        }
        Map<Integer, StringBuilder> perShard = new LinkedHashMap<>();
        bySlotPerShard.forEach((shard, bySlot) -> {
            StringBuilder rows = new StringBuilder();
            bySlot.values().forEach(rows::append);
            perShard.put(shard, rows);
        });
        for (int i = 1; i <= options.shards(); i++) {
            try (HikariDataSource shard = Pools.open("dev-load-" + i, shardUrl(i), USER, PASSWORD, 1);
                 Connection c = shard.getConnection(); Statement s = c.createStatement()) {
                // Partitioned by slot, one child table per partition of this shard: a partition read (a slot range)
                // is pruned to its child and scanned sequentially (docs/performance.md). The key is unique per slot,
                // so (order_id, slot) is as unique as order_id.
                s.execute(ORDERS_DDL);
                for (Partition p : partitions) {
                    if (p.shardId() == i) {
                        s.execute("CREATE TABLE orders_p%d PARTITION OF orders FOR VALUES FROM (%d) TO (%d)"
                                .formatted(p.id(), p.slotLo(), p.slotHi() + 1));
                    }
                }
                StringBuilder rows = perShard.getOrDefault(i, new StringBuilder());
                c.unwrap(PGConnection.class).getCopyAPI().copyIn(
                        "COPY orders (order_id, region, amount, " + ShardReader.SLOT_COLUMN + ") FROM STDIN",
                        new StringReader(rows.toString()));
                s.execute("ANALYZE orders");
            }
        }
        log.info("loaded {} orders into {} partitions over {} shard databases", options.rows(), partitions.size(),
                options.shards());
    }

    /**
     * Calls the sample binding through every node's coordinator, so the guest and the call path
     * are compiled before a person's first call (it would otherwise take seconds). The calls are
     * real and recorded like any other, under the principal {@code dev-warmup}. A warm-up call that fails (PostgreSQL
     * stalling in the cluster's first seconds, a lease lost under the stall) is logged, and tried again while it is
     * retryable, up to {@value #WARM_UP_ATTEMPTS} times: it never ends the cluster.
     *
     * @return the time taken, in milliseconds
     */
    public long warmUp(int rounds) {
        long t0 = System.nanoTime();
        for (int round = 0; round < rounds; round++) {
            for (Node n : nodes) {
                warmUpCall(n);
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        log.info("warmed up the call path with {} calls in {} ms", rounds * nodes.size(), ms);
        return ms;
    }

    /** Attempts of one warm-up call, a retryable failure tried again after a short pause growing with each. */
    static final int WARM_UP_ATTEMPTS = 5;

    private static void warmUpCall(Node n) {
        for (int attempt = 1; ; attempt++) {
            try {
                n.coordinator().call(CallRequest.of(TENANT, "dev-warmup", SAMPLE_BINDING, "{}")).join();
                return;
            } catch (RuntimeException e) {
                ThresherException failure = ThresherException.of(e); // finds it under the future's CompletionException
                boolean again = attempt < WARM_UP_ATTEMPTS
                        && failure.code().retryClass() != dev.thresher.errors.RetryClass.TERMINAL;
                log.warn("warm-up call through {} failed ({} {}){}", n.hostId(), failure.code(), failure.getMessage(),
                        again ? "; trying again" : "; the cluster goes on without it");
                if (!again) {
                    return;
                }
                try {
                    Thread.sleep(200L * attempt);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** What this cluster was started with. */
    public Options options() {
        return options;
    }

    /**
     * The control database's JDBC URL; with a standby, a multi-host URL naming the primary and the standby, for the
     * primary whichever it is ({@code targetServerType=primary}), each host's role looked at again after 2 s.
     */
    public String controlUrl() {
        String url = (controlPostgres != null ? controlPostgres : postgres).getJdbcUrl(USER, "thresher_control");
        if (controlStandby == null) {
            return url;
        }
        return url.replaceFirst("(//[^/:]+:\\d+)/", "$1,127.0.0.1:" + controlStandby.port() + "/")
                + (url.contains("?") ? "&" : "?") + "targetServerType=primary&hostRecheckSeconds=2";
    }

    /**
     * Fails the control database over to its standby ({@link Options#controlStandby}): the primary stopped as a crash
     * would stop it, the standby promoted; returns once it takes writes.
     */
    public void failOverControl() throws Exception {
        if (controlStandby == null) {
            throw new IllegalStateException("this dev cluster's control database has no standby");
        }
        controlStandby.failOver();
    }

    public String shardUrl(int shard) {
        return postgres.getJdbcUrl(USER, "thresher_shard_" + shard);
    }

    public List<Node> nodes() {
        return List.copyOf(nodes);
    }

    /** The port of the shard databases' embedded PostgreSQL (the control database's too, unless it runs apart). */
    public int postgresPort() {
        return postgres.getPort();
    }

    /** Creates {@code file} empty, readable and writable by its owner only (where the file system has POSIX modes). */
    static void ownerOnly(Path file) throws IOException {
        Files.deleteIfExists(file);
        try {
            Files.createFile(file, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                    java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException e) {
            Files.createFile(file);
        }
    }

    /** The admin bearer token of this cluster's nodes ({@code Authorization: Bearer <token>}). */
    public String adminToken() {
        return adminToken;
    }

    private static String newToken() {
        byte[] b = new byte[32];
        new java.security.SecureRandom().nextBytes(b);
        return java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /** The facts of {@code endpoints.json}, in its key order. */
    public Map<String, Object> endpoints() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("pgwire", nodes.stream().map(Node::pgwireAddress).toList());
        m.put("http", nodes.stream().map(Node::httpAddress).toList());
        Map<String, Object> pg = new LinkedHashMap<>();
        pg.put("control", controlUrl());
        List<String> shards = new ArrayList<>();
        for (int i = 1; i <= options.shards(); i++) {
            shards.add(shardUrl(i));
        }
        pg.put("shards", shards);
        m.put("postgres", pg);
        m.put("user", USER);
        m.put("password", PASSWORD);
        m.put("token", adminToken);
        m.put("caCert", caCertFile().toString());
        m.put("pid", ProcessHandle.current().pid());
        m.put("nodes", nodes.stream().map(n -> nodeEntry(n.hostId(), n.pgwireAddress(), n.httpAddress(),
                ProcessHandle.current().pid())).toList());
        return m;
    }

    /** One node's entry under {@code nodes} in {@code endpoints.json}. */
    static Map<String, Object> nodeEntry(String id, String pgwire, String http, long pid) {
        Map<String, Object> n = new LinkedHashMap<>();
        n.put("id", id);
        n.put("pgwire", pgwire);
        n.put("http", http);
        n.put("pid", pid);
        return n;
    }

    public Path endpointsFile() {
        return options.workDir().resolve("endpoints.json");
    }

    private void writeEndpoints() throws IOException {
        writeEndpoints(endpoints());
    }

    /**
     * Writes {@code endpoints.json} whole: to a temporary file first, so a reader never sees half of it. It names the
     * admin token and passwords, so only its owner may read it.
     */
    void writeEndpoints(Map<String, Object> endpoints) throws IOException {
        Path tmp = endpointsFile().resolveSibling("endpoints.json.tmp");
        ownerOnly(tmp);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(tmp.toFile(), endpoints);
        Files.move(tmp, endpointsFile(), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Stops every node, then PostgreSQL. All nodes first stop taking calls and finish those in flight
     * (up to {@code limits.maxCallDeadlineMs}) while every wire server still serves shard runs; then
     * each node stops in the order of {@link Node#close}.
     */
    @Override
    public void close() {
        nodes.forEach(Node::stopTakingCalls);
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.limits().maxCallDeadlineMs());
        for (Node n : nodes) {
            n.awaitCallsInFlight(Math.max(0, (until - System.nanoTime()) / 1_000_000));
        }
        for (int i = nodes.size() - 1; i >= 0; i--) {
            nodes.get(i).close();
        }
        nodes.clear();
        stop(postgres, "embedded PostgreSQL");
        postgres = null;
        stop(controlPostgres, "the control database's embedded PostgreSQL");
        controlPostgres = null;
        if (controlStandby != null) {
            controlStandby.close();
            controlStandby = null;
        }
    }

    private static void stop(EmbeddedPostgres server, String what) {
        if (server != null) {
            try {
                server.close();
            } catch (IOException e) {
                log.warn("could not stop {}: {}", what, e.toString());
            }
        }
    }
}
