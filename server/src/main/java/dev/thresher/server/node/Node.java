package dev.thresher.server.node;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.ComponentCache;
import dev.thresher.coordinator.CallStore;
import dev.thresher.coordinator.Catalog;
import dev.thresher.coordinator.CoordinationJanitor;
import dev.thresher.coordinator.Coordinator;
import dev.thresher.coordinator.Leaders;
import dev.thresher.coordinator.Reducer;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.http.HttpFront;
import dev.thresher.leader.BindingVersions;
import dev.thresher.leader.GuestRunner;
import dev.thresher.leader.HostRequestExecutor;
import dev.thresher.leader.LeaseKeeper;
import dev.thresher.leader.LedPartitions;
import dev.thresher.leader.PartitionReader;
import dev.thresher.leader.ShardRunJournal;
import dev.thresher.pgwire.PgWireConfig;
import dev.thresher.pgwire.PgWireServer;
import dev.thresher.server.admin.TopologyView;
import dev.thresher.server.handlers.HttpHandlers;
import dev.thresher.store.ConnectionBudget;
import dev.thresher.store.CountingDataSource;
import dev.thresher.store.Pools;
import dev.thresher.store.control.ControlCache;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.TopologyStore;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Host;
import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireServer;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Thresher node: a shard database attachment, a cell host, the node-to-node protocol, the
 * coordinator, and the pgwire and HTTP front doors.
 *
 * <pre>
 *   pgwire ─┐                                   ┌─► WireClient ──► other nodes' WireServer
 *   HTTP   ─┴─► Coordinator (virtual threads) ──┤
 *                                               └─► CellHost.reduce
 *   WireServer ─► HostRequestExecutor (pool) ─► LeaseKeeper check ─► ShardReader (HikariCP) ─► CellHost.run
 *   ControlCache: bindings and topology, LISTEN thresher_catalog + a reconcile poll
 * </pre>
 *
 * {@link #close} stops it in phases so that calls in flight finish (docs/operations.md, "Stopping a node").
 */
public final class Node implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Node.class);

    /** Bound of stopping the executors: by then no call is left, only stragglers. */
    private static final long EXECUTOR_STOP_MS = 5_000;
    /** After answers were handed to pgwire and HTTP, the time their event loops get to write them before the doors close. */
    private static final long POLL_MS = 10;

    private final NodeConfig config;
    private final AtomicBoolean ready = new AtomicBoolean();
    private final AtomicBoolean closing = new AtomicBoolean();
    private final CountDownLatch closed = new CountDownLatch(1);
    private HikariDataSource controlDb;
    private CountingDataSource callPathControlDb;
    private HikariDataSource backgroundControlDb;
    private ControlCache catalog;
    private NodeAccess access;
    private HikariDataSource shardDb;
    /** Read-only pools of every shard database this node is a candidate for, its own included. */
    private final Map<Integer, HikariDataSource> shardDbs = new java.util.TreeMap<>();
    /** The leader replicas of each of those shard databases (none when {@code limits.replicaMemoryBytes} is 0). */
    private final Map<Integer, dev.thresher.store.replica.ShardReplica> replicas = new java.util.TreeMap<>();
    private dev.thresher.store.replica.ReplicaBudget replicaBudget;
    /** The JDBC URL of each shard database this node is a candidate for. */
    private final Map<Integer, String> shardUrls = new java.util.TreeMap<>();
    private CellHost cells;
    private ExecutorService shardExecutor;
    private ExecutorService readExecutor;
    private ExecutorService callExecutor;
    private ExecutorService reduceExecutor;
    private WireServer wireServer;
    private NodeTableService tableService;
    private ServedShardRuns servedShardRuns;
    private WireClient wireClient;
    private PgWireServer pgwire;
    private HttpFront http;
    private dev.thresher.store.control.IdempotencyKeys idempotencyKeys;
    private HttpHandlers handlers;
    private FrontDoorCalls frontDoorCalls;
    private Failpoints failpoints;
    private HostRequestExecutor shards;
    private Coordinator coordinator;
    private ControlStore control;
    private LeaseKeeper leases;
    private boolean leasesStarted;
    private CoordinationJanitor janitor;
    private NodeMetrics metrics;

    private Node(NodeConfig config) {
        this.config = config;
    }

    /** Starts every part; on failure, stops what already started and rethrows. */
    public static Node start(NodeConfig config) throws InterruptedException {
        Node n = new Node(config);
        try {
            n.startParts();
            return n;
        } catch (InterruptedException | RuntimeException e) {
            n.close();
            throw e;
        }
    }

    /**
     * Holds this node's pools against what the control and shard database servers allow, and logs the
     * totals for the nodes registered so far ({@link NodeConnections}: every pool the node opens, its table
     * service's included): the control pools, the listening connection and the table service's catalog pool against
     * the control database; the shard pool (and a leader replica's own connections) and the table service's pool
     * against each shard database it is a candidate for; databases on one server against one budget.
     */
    private void checkConnectionBudget(int shardPool) {
        NodeConnections node = new NodeConnections(controlDb.getMaximumPoolSize(),
                backgroundControlDb.getMaximumPoolSize(), shardPool);
        dev.thresher.store.control.OtherNodes others = dev.thresher.store.control.OtherNodes.besides(backgroundControlDb,
                config.hostId());
        Map<Integer, String> shardServers = new java.util.TreeMap<>();
        Map<String, javax.sql.DataSource> servers = new java.util.HashMap<>();
        servers.put(others.controlServer() == null ? "control" : others.controlServer(), backgroundControlDb);
        for (var e : shardDbs.entrySet()) {
            String server;
            try (java.sql.Connection c = e.getValue().getConnection(); java.sql.Statement s = c.createStatement();
                 java.sql.ResultSet rs = s.executeQuery("SELECT host(inet_server_addr()) || ':' || inet_server_port()")) {
                rs.next();
                server = rs.getString(1);
            } catch (java.sql.SQLException ex) {
                throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard database: " + ex.getMessage(), ex);
            }
            shardServers.put(e.getKey(), server);
            servers.putIfAbsent(server == null ? "shard-" + e.getKey() : server, e.getValue());
        }
        node.budgets(others.controlServer(), shardServers, others.count(), others.candidates(),
                key -> ConnectionBudget.available(servers.get(key))).forEach(b -> b.check(log));
    }

    private void startParts() throws InterruptedException {
        var limits = config.limits();
        // Certificates first: a bad one is refused before anything else starts.
        TlsSettings.Loaded tls = config.tls().load();
        metrics = new NodeMetrics(config.hostId());
        // Calls and the node's own upkeep (leases, janitor, cache) use separate pools, so a lease renewal never
        // waits behind call traffic and the call path's statements can be counted alone.
        // Every coordination statement runs under statement, lock and idle-in-transaction timeouts, so neither a
        // frozen holder of a lock nor a stalled statement holds a takeover or a call past them (Pools.ControlSessions).
        controlDb = Pools.openControl(config.hostId() + "-control", config.controlJdbcUrl(), config.dbUser(),
                config.dbPassword(), 8, Pools.ControlSessions.callPath(limits.maxCallDeadlineMs()));
        backgroundControlDb = Pools.openControl(config.hostId() + "-control-upkeep", config.controlJdbcUrl(),
                config.dbUser(), config.dbPassword(), 3, Pools.ControlSessions.upkeep(limits.partitionLeaseMs()));
        // The call path only reads shard databases: their sessions are read-only (docs/contract.md).
        shardDb = Pools.openReadOnly(config.hostId() + "-shard", config.shardJdbcUrl(), config.dbUser(),
                config.dbPassword(), limits.shardConcurrency());
        shardDbs.put(config.shardId(), shardDb);
        shardUrls.put(config.shardId(), config.shardJdbcUrl());
        // Migrations may wait for another node's (Flyway's lock), longer than the upkeep's lock timeout allows.
        try (HikariDataSource migrations = Pools.open(config.hostId() + "-migrate", config.controlJdbcUrl(),
                config.dbUser(), config.dbPassword(), 2)) {
            ControlStore.migrate(migrations);
        }
        if (!config.standbyShards().isEmpty()) {
            Map<Integer, String> urls = new ControlStore(backgroundControlDb).shardUrls();
            for (int standby : config.standbyShards()) {
                String url = urls.get(standby);
                if (url == null) {
                    throw new IllegalArgumentException("node.standbyShards names shard " + standby
                            + ", which the control database does not know; the shards are " + urls.keySet());
                }
                shardDbs.put(standby, Pools.openReadOnly(config.hostId() + "-shard-" + standby, url, config.dbUser(),
                        config.dbPassword(), limits.shardConcurrency()));
                shardUrls.put(standby, url);
            }
        }
        // a leader replica's fence and copy connections come beside the shard pool (docs/deployment.md)
        checkConnectionBudget(limits.shardConcurrency()
                + (limits.replicaMemoryBytes() > 0 ? dev.thresher.store.replica.ShardReplica.ORDINARY_CONNECTIONS : 0));
        metrics.bindPool("control", controlDb);
        metrics.bindPool("control-upkeep", backgroundControlDb);
        shardDbs.forEach((shard, pool) -> metrics.bindPool("shard-" + shard, pool));
        // Within a call every wait on a database (a connection, the socket, each statement) ends at the call's
        // deadline (Pools.bounded, DbDeadline); outside calls the pools' own timeouts apply.
        callPathControlDb = new CountingDataSource(Pools.bounded(controlDb));
        metrics.bindControlStatements(callPathControlDb);
        control = new ControlStore(callPathControlDb);
        javax.sql.DataSource upkeepDb = Pools.bounded(backgroundControlDb);
        ControlStore upkeep = new ControlStore(upkeepDb);
        TopologyStore topology = new TopologyStore(upkeepDb);
        catalog = ControlCache.start(upkeep, () -> DriverManager.getConnection(config.controlJdbcUrl(), config.dbUser(),
                config.dbPassword()), limits.topologyPollMs(), config.hostId());
        failpoints = config.failpointsEnabled() ? Failpoints.enabled() : Failpoints.disabled();
        if (failpoints.isEnabled()) {
            log.warn("node {}: failpoints are enabled; this node is for tests only", config.hostId());
        }

        cells = CellHost.create(limits);
        metrics.bindCells(cells, limits);
        log.info("node {}: guest engine {} ({})", config.hostId(), cells.engineName(),
                cells.optimizing() ? "optimizing runtime on" : "INTERPRETER ONLY, guests run 20-100x slower");

        shardExecutor = Executors.newFixedThreadPool(limits.shardConcurrency(),
                Thread.ofPlatform().name(config.hostId() + "-shard-", 0).daemon().factory());
        // Partition reads have their own threads, as many as the shard pool has connections.
        readExecutor = Executors.newFixedThreadPool(limits.shardConcurrency(),
                Thread.ofPlatform().name(config.hostId() + "-read-", 0).daemon().factory());
        leases = new LeaseKeeper(topology, config.hostId(), limits.partitionLeaseMs(), failpoints);
        ComponentCache components = new ComponentCache(control::packageBytes);
        startReplicas(limits);
        shards = new HostRequestExecutor(config.hostId(), ShardRunJournal.of(control), BindingVersions.of(catalog),
                LedPartitions.of(leases), PartitionReader.withReplicas(PartitionReader.of(shardReaders()), replicas),
                GuestRunner.of(cells, components),
                limits, shardExecutor, readExecutor, failpoints);
        servedShardRuns = new ServedShardRuns(shards);
        metrics.bindLeaderSide(shards, leases);
        wireServer = WireServer.start(config.bindHost(), config.wirePort(), config.hostId(), limits, servedShardRuns,
                failpoints);

        wireClient = new WireClient(config.hostId(), limits, failpoints);
        callExecutor = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name(config.hostId() + "-call-", 0).factory());
        // Reduce has its own platform threads: queued behind shard runs it could outlive its call's deadline.
        reduceExecutor = Executors.newFixedThreadPool(Math.max(2, Runtime.getRuntime().availableProcessors()),
                Thread.ofPlatform().name(config.hostId() + "-reduce-", 0).daemon().factory());
        coordinator = new Coordinator(config.hostId(), CallStore.of(control), Catalog.of(catalog),
                Leaders.of(wireClient), Reducer.of(cells, components), limits, callExecutor, reduceExecutor, failpoints,
                metrics.calls());
        metrics.bindCoordinator(coordinator);
        frontDoorCalls = new FrontDoorCalls(config.hostId(), coordinator);

        idempotencyKeys = new dev.thresher.store.control.IdempotencyKeys(Pools.bounded(controlDb),
                limits.coordinationRetentionMs(), config.hostId());
        tableService = new NodeTableService(config.controlJdbcUrl(), config.dbUser(), config.dbPassword(), limits);
        // SHOW CALL and the journal views: uncounted, not the call path; a few threads of each front door at most
        var journal = new dev.thresher.store.control.JournalQuery(controlDb);
        // Users and grants: all in memory, reloaded when the catalog channel says they changed and at every poll.
        access = new NodeAccess(new dev.thresher.store.control.AccessStore(backgroundControlDb), config.hostId());
        access.start();
        catalog.onAccessChanged(access::reloadSoon);
        access.ensureBootstrapUser(config.pgwireUser(), java.util.Optional.ofNullable(config.pgwirePassword())
                .filter(p -> !p.isEmpty()), config.tenant());
        pgwire = PgWireServer.start(new PgWireConfig(config.bindHost(), config.pgwirePort(), config.pgwireAuth(),
                config.pgwireUser(), config.pgwirePassword(), config.tenant(), limits, config.tls().pgwire(), tls.pgwire()),
                frontDoorCalls, tableService, tableService.bindings(),
                new dev.thresher.store.control.InvocationLookup(controlDb), journal, access);
        metrics.bindPgwire(pgwire);
        tableService.replicaStatus(this::replicaStatus);
        http = HttpFront.builder().listen(config.bindHost(), config.httpPort()).tenant(config.tenant()).limits(limits)
                .calls(frontDoorCalls).readiness(this::unreadiness).tables(tableService).bindings(tableService.bindings())
                .topology(() -> TopologyView.render(catalog.topologyVersion(), catalog.topology()))
                .topologyChanges(tableService.topologyChanges())
                // users and grants: written on the upkeep pool NodeAccess reads them through (a rare write; no pool more)
                .users(new dev.thresher.server.admin.UserAdmin(new dev.thresher.store.control.AccessStore(backgroundControlDb)))
                .access(config.httpAccess().withUsers(access))
                .idempotency(idempotencyKeys, new dev.thresher.store.control.InvocationLookup(controlDb)).journal(journal)
                .tls(tls.http()).start();
        http.serveMetrics(metrics::scrape);
        handlers = new HttpHandlers(config.hostId(), Pools.bounded(controlDb), components, cells, frontDoorCalls, limits,
                access);
        http.serveHandlers(handlers); // HTTP handler bindings' routes under /v1/http/

        // Other nodes connect to the advertised wire address (node.wireAdvertisedHost/Port), by default the bound one.
        topology.registerHost(new Host(config.hostId(), config.shardId(), config.advertisedWireHost(),
                        config.advertisedWirePort(wireServer.port())),
                pgwireAddress(), httpAddress(), config.standbyShards());
        leasesStarted = true;
        leases.start();
        leases.followTopology(this::leadershipFingerprint, 200);
        shardProbe = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name(config.hostId() + "-shard-probe").daemon().factory());
        probeShards(); // once before the node reads ready
        shardProbe.scheduleWithFixedDelay(this::probeShards, SHARD_PROBE_MS, SHARD_PROBE_MS, TimeUnit.MILLISECONDS);
        janitor = new CoordinationJanitor(upkeep, config.hostId(), limits.coordinationRetentionMs());
        janitor.start();
        if (limits.reduceLeaseMs() < limits.maxCallDeadlineMs()) {
            log.warn("limits.reduceLeaseMs ({}) is shorter than limits.maxCallDeadlineMs ({}): a call slower than the "
                    + "lease fails SLOT_EXPIRED because its earliest slots' leases end before reduce",
                    limits.reduceLeaseMs(), limits.maxCallDeadlineMs());
        }
        ready.set(true);
        log.info("node {} ready: pgwire {}, http {}, wire {}:{}, shard {}{}, leading {} partitions", config.hostId(),
                pgwireAddress(), httpAddress(), config.bindHost(), wireServer.port(), config.shardId(),
                config.standbyShards().isEmpty() ? "" : " (standby for " + config.standbyShards() + ")", leases.ledCount());
    }

    public String hostId() {
        return config.hostId();
    }

    /** How often each shard database this node reads is probed; {@code /readyz} fails after three misses. */
    private static final long SHARD_PROBE_MS = 1_000;
    private java.util.concurrent.ScheduledExecutorService shardProbe;
    private final Map<Integer, Long> shardAnsweredNanos = new java.util.concurrent.ConcurrentHashMap<>();

    private void probeShards() {
        shardDbs.forEach((shard, pool) -> {
            try (java.sql.Connection c = pool.getConnection()) {
                if (c.isValid(2)) {
                    shardAnsweredNanos.put(shard, System.nanoTime());
                }
            } catch (java.sql.SQLException | RuntimeException e) {
                log.debug("node {}: shard database {} does not answer: {}", config.hostId(), shard, e.toString());
            }
        });
    }

    /**
     * Why this node is not ready, or empty when it is: it is starting or stopping, a shard database it reads has
     * not answered for three probes, or its topology has not been read from the control database for
     * {@code max(3 × limits.topologyPollMs, limits.partitionLeaseMs)}.
     */
    public java.util.Optional<String> unreadiness() {
        if (!ready.get()) {
            return java.util.Optional.of(closing.get() ? "stopping" : "starting");
        }
        long now = System.nanoTime();
        List<String> down = new ArrayList<>();
        for (int shard : shardDbs.keySet()) {
            Long answered = shardAnsweredNanos.get(shard);
            if (answered == null || now - answered > TimeUnit.MILLISECONDS.toNanos(3 * SHARD_PROBE_MS + 2_000)) {
                down.add("shard database " + shard + " does not answer");
            }
        }
        long freshMs = Math.max(3 * config.limits().topologyPollMs(), config.limits().partitionLeaseMs());
        long age = catalog.topologyAgeMillis();
        if (age > freshMs) {
            down.add("the topology was last read " + (age == Long.MAX_VALUE ? "never" : age + " ms ago") + " (fresh: "
                    + freshMs + " ms)");
        }
        return down.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(String.join("; ", down));
    }

    /**
     * What a change of leadership changes in the node's cached topology: its version, and each partition's holder,
     * epoch and whether its lease is live (not its lease end, which moves with every renewal).
     */
    private Object leadershipFingerprint() {
        var t = catalog.topology();
        Map<Integer, String> leaders = new java.util.TreeMap<>();
        t.leaders().forEach((id, l) -> leaders.put(id, l.hostId() + "@" + l.epoch() + (l.leaseUntil().isAfter(t.readAt())
                ? "" : " ended")));
        return java.util.List.of(catalog.topologyVersion(), leaders);
    }

    /**
     * One replica per shard database this node is a candidate for: every partition of the shard, led here or
     * stood by for, kept in memory from the shard's logical replication stream (docs/architecture.md, "Leader
     * replicas").
     */
    private void startReplicas(dev.thresher.limits.Limits limits) {
        replicaBudget = new dev.thresher.store.replica.ReplicaBudget(limits.replicaMemoryBytes());
        if (!replicaBudget.enabled()) {
            log.info("node {}: leader replicas off (limits.replicaMemoryBytes=0); partitions are read through SQL",
                    config.hostId());
            return;
        }
        shardUrls.forEach((shard, url) -> replicas.put(shard, dev.thresher.store.replica.ShardReplica.start(
                config.hostId(), shard, url, config.dbUser(), config.dbPassword(),
                () -> catalog.topology().partitions().stream().filter(p -> p.shardId() == shard).toList(),
                replicaBudget, limits.replicaCatchUpMs())));
        metrics.bindReplicas(replicas, replicaBudget);
    }

    /** The node's leader replicas as {@code GET /admin/topology/replicas} shows them. */
    private dev.thresher.bindings.TopologyService.Replicas replicaStatus() {
        List<dev.thresher.bindings.TopologyService.ReplicaPartition> partitions = new java.util.ArrayList<>();
        long memory = 0;
        Map<String, Long> sql = new java.util.TreeMap<>();
        for (var replica : replicas.values()) {
            for (var p : replica.status()) {
                partitions.add(new dev.thresher.bindings.TopologyService.ReplicaPartition(p.partitionId(), p.table(),
                        p.shardId(), p.state().name().toLowerCase(java.util.Locale.ROOT), p.rows(), p.bytes(),
                        dev.thresher.store.replica.Lsn.format(p.appliedLsn()), p.lagBytes(), p.reason()));
            }
            var reads = replica.reads();
            memory += reads.memory();
            reads.sqlByReason().forEach((reason, n) -> sql.merge(reason, n, Long::sum));
        }
        partitions.sort(java.util.Comparator.comparingInt(dev.thresher.bindings.TopologyService.ReplicaPartition::partition));
        return new dev.thresher.bindings.TopologyService.Replicas(replicaBudget == null ? 0 : replicaBudget.limitBytes(),
                replicaBudget == null ? 0 : replicaBudget.usedBytes(), partitions, memory, sql);
    }

    /** The node's leader replicas by shard database. */
    public Map<Integer, dev.thresher.store.replica.ShardReplica> replicas() {
        return java.util.Collections.unmodifiableMap(replicas);
    }

    private Map<Integer, ShardReader> shardReaders() {
        Map<Integer, ShardReader> readers = new java.util.TreeMap<>();
        shardDbs.forEach((id, pool) -> readers.put(id, new ShardReader(Pools.bounded(pool))));
        return readers;
    }

    /** The configuration the node was started with: {@link #start} with it starts the same node again. */
    public NodeConfig config() {
        return config;
    }

    public String pgwireAddress() {
        return config.bindHost() + ":" + pgwire.port();
    }

    public int pgwirePort() {
        return pgwire.port();
    }

    public String httpAddress() {
        return (http.https() ? "https://" : "http://") + config.bindHost() + ":" + http.port();
    }

    public CellHost cells() {
        return cells;
    }

    /** This node's failpoints; armable only when the configuration enables them. */
    public Failpoints failpoints() {
        return failpoints;
    }

    public HostRequestExecutor shardExecutor() {
        return shards;
    }

    public Coordinator coordinator() {
        return coordinator;
    }

    public LeaseKeeper leases() {
        return leases;
    }

    public ControlStore control() {
        return control;
    }

    /** The node's cache of bindings and topology. */
    public ControlCache catalog() {
        return catalog;
    }

    /** Statements and transactions the call path (coordinator and leader side) sent to the control database. */
    public CountingDataSource callPathControlStatements() {
        return callPathControlDb;
    }

    public boolean ready() {
        return ready.get();
    }

    /** This node's metrics, served on its HTTP port as {@code GET /metrics}. */
    public NodeMetrics metrics() {
        return metrics;
    }

    /**
     * Stops the node so that calls in flight finish, in this order (each phase logs one line with its
     * duration):
     * <ol>
     *   <li>not ready ({@code /readyz} answers 503); pgwire and HTTP refuse new calls with
     *       {@code HOST_UNREACHABLE} (retryable, nothing ran);</li>
     *   <li>wait, up to {@code limits.maxCallDeadlineMs}, for the calls in flight here to finish and their
     *       answers to reach their callers; then close pgwire and HTTP with their connections;</li>
     *   <li>keep serving shard runs to other nodes until those in flight here finish (same bound); then
     *       close the wire server and this node's wire client;</li>
     *   <li>stop the lease keeper, releasing partition leadership, and the janitor;</li>
     *   <li>stop the executors, waiting up to {@value #EXECUTOR_STOP_MS} ms for their tasks;</li>
     *   <li>close the cells, then the database pools and the metrics.</li>
     * </ol>
     * Idempotent; a second caller waits for the first to finish. Parts a failed start never started are skipped.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            awaitClosed();
            return;
        }
        try {
            stopInPhases();
        } finally {
            closed.countDown();
        }
    }

    private void awaitClosed() {
        long bound = 2 * config.limits().maxCallDeadlineMs() + EXECUTOR_STOP_MS + 30_000;
        try {
            if (!closed.await(bound, TimeUnit.MILLISECONDS)) {
                log.warn("node {}: still stopping after {} ms", config.hostId(), bound);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void stopInPhases() {
        String id = config.hostId();
        long maxCallMs = config.limits().maxCallDeadlineMs();
        long t0 = System.nanoTime();
        long t = t0;

        stopTakingCalls();
        log.info("node {}: stopping 1/6: not ready, pgwire and HTTP accept no new connections or calls ({} ms)", id, msSince(t));

        t = System.nanoTime();
        int callsAtStart = callsInFlight();
        int callsLeft = awaitCallsInFlight(maxCallMs);
        closeQuietly(pgwire, "pgwire");
        closeQuietly(http, "HTTP");
        closeQuietly(idempotencyKeys, "Idempotency-Key journal");
        closeQuietly(handlers, "HTTP handlers");
        closeQuietly(tableService, "table service");
        closeQuietly(access, "users");
        log.info("node {}: stopping 2/6: {} calls in flight finished, {} still running at the {} ms bound; pgwire and HTTP closed ({} ms)",
                id, callsAtStart - callsLeft, callsLeft, maxCallMs, msSince(t));

        t = System.nanoTime();
        IntSupplier runs = () -> servedShardRuns == null ? 0 : servedShardRuns.inFlight();
        int runsAtStart = runs.getAsInt();
        int runsLeft = awaitZero(runs, maxCallMs);
        closeQuietly(wireServer, "wire server");
        closeQuietly(wireClient, "wire client");
        log.info("node {}: stopping 3/6: {} shard runs in flight, {} still running at the {} ms bound; wire server closed ({} ms)",
                id, runsAtStart, runsLeft, maxCallMs, msSince(t));

        t = System.nanoTime();
        if (leasesStarted) {
            closeQuietly(leases, "lease keeper");
        }
        closeQuietly(janitor, "janitor");
        if (shardProbe != null) {
            shardProbe.shutdownNow();
        }
        closeQuietly(catalog, "control cache");
        log.info("node {}: stopping 4/6: partition leadership released, janitor stopped ({} ms)", id, msSince(t));

        t = System.nanoTime();
        int unfinished = stopExecutors(callExecutor, reduceExecutor, shardExecutor, readExecutor);
        log.info("node {}: stopping 5/6: executors stopped, {} of them interrupted after {} ms ({} ms)", id, unfinished,
                EXECUTOR_STOP_MS, msSince(t));

        t = System.nanoTime();
        replicas.forEach((shard, replica) -> closeQuietly(replica, "replica of shard database " + shard));
        closeQuietly(cells, "cells");
        shardDbs.forEach((shard, pool) -> closeQuietly(pool, "shard database " + shard + " pool"));
        if (shardDbs.isEmpty()) {
            closeQuietly(shardDb, "shard database pool");
        }
        closeQuietly(controlDb, "control database pool");
        closeQuietly(backgroundControlDb, "control database upkeep pool");
        closeQuietly(metrics, "metrics");
        log.info("node {}: stopping 6/6: cells and database pools closed ({} ms); stopped in {} ms", id, msSince(t),
                msSince(t0));
    }

    /**
     * The first phase of {@link #close} alone: not ready, and pgwire and HTTP refuse new calls. A cluster
     * stopping every node does this on all of them first, so no node takes a call that needs a stopped peer.
     */
    public void stopTakingCalls() {
        if (frontDoorCalls != null) {
            frontDoorCalls.stopAdmitting();
        }
        if (handlers != null) {
            handlers.stopAdmitting();
        }
        ready.set(false); // after: a node that reads not ready takes no call
        if (pgwire != null) {
            pgwire.stopAccepting();
        }
        if (http != null) {
            http.stopAccepting();
        }
    }

    /**
     * Calls in flight here, a front door's counted until their answers are handed to it (a call from pgwire or
     * HTTP is counted by the coordinator and by the front door at once: hence the larger of the two counts).
     */
    int callsInFlight() {
        return Math.max(coordinator == null ? 0 : coordinator.callsInFlight(),
                frontDoorCalls == null ? 0 : frontDoorCalls.inFlight()) + (handlers == null ? 0 : handlers.inFlight());
    }

    /**
     * Waits until no call is in flight here, up to {@code boundMs}; returns the calls still in flight. A call
     * counts until its answer is handed to its front door's event loop; closing pgwire or HTTP afterwards closes
     * each connection by a task on that same loop, so the answer is written first.
     */
    public int awaitCallsInFlight(long boundMs) {
        return awaitZero(this::callsInFlight, boundMs);
    }

    /** Waits until {@code count} reads zero, up to {@code boundMs}; returns the last count read. */
    private static int awaitZero(IntSupplier count, long boundMs) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
        int n;
        while ((n = count.getAsInt()) > 0 && System.nanoTime() - until < 0) {
            if (!pause(POLL_MS)) {
                return count.getAsInt();
            }
        }
        return n;
    }

    /**
     * Shuts the executors down and waits for their tasks, up to {@value #EXECUTOR_STOP_MS} ms in all; interrupts
     * the tasks of those still busy then. Returns how many were.
     */
    private static int stopExecutors(ExecutorService... executors) {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(EXECUTOR_STOP_MS);
        int unfinished = 0;
        for (ExecutorService e : executors) {
            if (e != null) {
                e.shutdown();
            }
        }
        for (ExecutorService e : executors) {
            if (e == null) {
                continue;
            }
            boolean done;
            try {
                done = e.awaitTermination(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                done = false;
            }
            if (!done) {
                e.shutdownNow();
                unfinished++;
            }
        }
        return unfinished;
    }

    /** Sleeps; false when interrupted (the interrupt is kept, and the caller stops waiting). */
    private static boolean pause(long ms) {
        if (Thread.currentThread().isInterrupted()) {
            return false;
        }
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private void closeQuietly(AutoCloseable part, String what) {
        if (part == null) {
            return;
        }
        try {
            part.close();
        } catch (Exception e) {
            log.warn("node {}: error while stopping the {}: {}", config.hostId(), what, e.toString());
        }
    }

    private static long msSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
