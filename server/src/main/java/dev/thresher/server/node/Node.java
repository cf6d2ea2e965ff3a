package dev.thresher.server.node;

import static dev.thresher.server.node.StopWaits.awaitZero;
import static dev.thresher.server.node.StopWaits.msSince;
import static dev.thresher.server.node.StopWaits.stopExecutors;

import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.ComponentCache;
import dev.thresher.coordinator.CallStore;
import dev.thresher.coordinator.Catalog;
import dev.thresher.coordinator.CoordinationJanitor;
import dev.thresher.coordinator.Coordinator;
import dev.thresher.coordinator.Leaders;
import dev.thresher.coordinator.Reducer;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.http.HttpFront;
import dev.thresher.leader.BindingVersions;
import dev.thresher.leader.GuestRunner;
import dev.thresher.leader.HostRequestExecutor;
import dev.thresher.leader.LeaseKeeper;
import dev.thresher.leader.LedPartitions;
import dev.thresher.leader.PartitionReader;
import dev.thresher.leader.ShardRunJournal;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.PgWireConfig;
import dev.thresher.pgwire.PgWireServer;
import dev.thresher.server.admin.TopologyView;
import dev.thresher.server.handlers.HttpHandlers;
import dev.thresher.store.CountingDataSource;
import dev.thresher.store.Pools;
import dev.thresher.store.control.ControlCache;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.TopologyStore;
import dev.thresher.topology.Host;
import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireServer;
import java.sql.DriverManager;
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
 * {@link #start} starts the parts in steps, each named for what it starts; {@link #close} stops them in phases so
 * that calls in flight finish (docs/operations.md, "Stopping a node").
 */
public final class Node implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Node.class);

    /** Bound of stopping the executors: by then no call is left, only stragglers. */
    private static final long EXECUTOR_STOP_MS = 5_000;

    private final NodeConfig config;
    private final AtomicBoolean ready = new AtomicBoolean();
    private final AtomicBoolean closing = new AtomicBoolean();
    private final CountDownLatch closed = new CountDownLatch(1);
    private final NodePools pools;
    private CountingDataSource callPathControlDb;
    private ControlStore upkeep;
    private TopologyStore topology;
    private ControlCache catalog;
    private NodeAccess access;
    private final NodeReplicas replicas = new NodeReplicas();
    private ShardProbe shardProbe;
    private CellHost cells;
    private ComponentCache components;
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
        this.pools = new NodePools(config);
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

    private void startParts() throws InterruptedException {
        var limits = config.limits();
        // Certificates first: a bad one is refused before anything else starts.
        TlsSettings.Loaded tls = config.tls().load();
        metrics = new NodeMetrics(config.hostId());
        openPools(limits);
        startControlCache(limits);
        failpoints = config.failpointsEnabled() ? Failpoints.enabled() : Failpoints.disabled();
        if (failpoints.isEnabled()) {
            log.warn("node {}: failpoints are enabled; this node is for tests only", config.hostId());
        }
        startCells(limits);
        startLeaderSide(limits);
        startCoordinator(limits);
        startFrontDoors(limits, tls);
        joinCluster(limits);
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

    /**
     * The database pools ({@link NodePools}) with the control database migrated, held against what the database
     * servers allow (a leader replica's fence and copy connections come beside the shard pool, docs/deployment.md),
     * and bound to the metrics.
     */
    private void openPools(Limits limits) {
        pools.openControl(limits);
        pools.openHomeShard(limits);
        pools.migrateControl();
        pools.openStandbys(limits);
        pools.budgets(limits.shardConcurrency()
                + (limits.replicaMemoryBytes() > 0 ? dev.thresher.store.replica.ShardReplica.ORDINARY_CONNECTIONS : 0))
                .forEach(b -> b.check(log));
        metrics.bindPool("control", pools.control());
        metrics.bindPool("control-upkeep", pools.upkeep());
        pools.shards().forEach((shard, pool) -> metrics.bindPool("shard-" + shard, pool));
    }

    /**
     * The control database's stores, the call path's counted, and the node's cache of bindings and topology. Within a
     * call every wait on a database (a connection, the socket, each statement) ends at the call's deadline
     * (Pools.bounded, DbDeadline); outside calls the pools' own timeouts apply.
     */
    private void startControlCache(Limits limits) {
        callPathControlDb = new CountingDataSource(Pools.bounded(pools.control()));
        metrics.bindControlStatements(callPathControlDb);
        control = new ControlStore(callPathControlDb);
        javax.sql.DataSource upkeepDb = Pools.bounded(pools.upkeep());
        upkeep = new ControlStore(upkeepDb);
        // the leases' statements take a connection of their own when the upkeep pool has none at once (after an
        // outage of the control database its creator backs off): a node renews its leases within a renewal of the heal
        topology = new TopologyStore(Pools.boundedOrDirect(pools.upkeep()));
        catalog = ControlCache.start(upkeep, () -> DriverManager.getConnection(config.controlJdbcUrl(), config.dbUser(),
                config.dbPassword()), limits.topologyPollMs(), config.hostId());
    }

    /** The cell host, where guests run, its engine logged (an interpreter-only one runs them far slower). */
    private void startCells(Limits limits) {
        cells = CellHost.create(limits);
        metrics.bindCells(cells, limits);
        log.info("node {}: guest engine {} ({})", config.hostId(), cells.engineName(),
                cells.optimizing() ? "optimizing runtime on" : "INTERPRETER ONLY, guests run 20-100x slower");
    }

    /**
     * The leader side: the shard runs' and partition reads' threads, the lease keeper (not yet started), the leader
     * replicas, the executor of host requests and the wire server other nodes send them to.
     */
    private void startLeaderSide(Limits limits) throws InterruptedException {
        shardExecutor = Executors.newFixedThreadPool(limits.shardConcurrency(),
                Thread.ofPlatform().name(config.hostId() + "-shard-", 0).daemon().factory());
        // Partition reads have their own threads, as many as the shard pool has connections.
        readExecutor = Executors.newFixedThreadPool(limits.shardConcurrency(),
                Thread.ofPlatform().name(config.hostId() + "-read-", 0).daemon().factory());
        leases = new LeaseKeeper(topology, config.hostId(), limits.partitionLeaseMs(), failpoints);
        components = new ComponentCache(control::packageBytes);
        replicas.start(config, limits, pools.shardUrls(), catalog, metrics);
        shards = new HostRequestExecutor(config.hostId(), ShardRunJournal.of(control), BindingVersions.of(catalog),
                LedPartitions.of(leases), PartitionReader.withReplicas(PartitionReader.of(pools.readers()),
                replicas.byShard()),
                GuestRunner.of(cells, components),
                limits, shardExecutor, readExecutor, failpoints);
        servedShardRuns = new ServedShardRuns(shards);
        metrics.bindLeaderSide(shards, leases);
        wireServer = WireServer.start(config.bindHost(), config.wirePort(), config.hostId(), limits, servedShardRuns,
                failpoints);
    }

    /** The coordinating side: the wire client to other nodes, the calls' and reduce's threads, the coordinator. */
    private void startCoordinator(Limits limits) {
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
    }

    /**
     * The front doors and the services they speak: the table service, users and grants, pgwire, HTTP with its
     * metrics and the routes of HTTP handler bindings.
     */
    private void startFrontDoors(Limits limits, TlsSettings.Loaded tls) throws InterruptedException {
        var controlDb = pools.control();
        idempotencyKeys = new dev.thresher.store.control.IdempotencyKeys(Pools.bounded(controlDb),
                limits.coordinationRetentionMs(), config.hostId());
        tableService = new NodeTableService(config.controlJdbcUrl(), config.dbUser(), config.dbPassword(), limits);
        // SHOW CALL and the journal views: uncounted, not the call path; a few threads of each front door at most
        var journal = new dev.thresher.store.control.JournalQuery(controlDb);
        // Users and grants: all in memory, reloaded when the catalog channel says they changed and at every poll.
        access = new NodeAccess(new dev.thresher.store.control.AccessStore(pools.upkeep()), config.hostId());
        access.start();
        catalog.onAccessChanged(access::reloadSoon);
        access.ensureBootstrapUser(config.pgwireUser(), java.util.Optional.ofNullable(config.pgwirePassword())
                .filter(p -> !p.isEmpty()), config.tenant());
        pgwire = PgWireServer.start(new PgWireConfig(config.bindHost(), config.pgwirePort(), config.pgwireAuth(),
                config.pgwireUser(), config.pgwirePassword(), config.tenant(), limits, config.tls().pgwire(), tls.pgwire()),
                frontDoorCalls, tableService, tableService.bindings(),
                new dev.thresher.store.control.InvocationLookup(controlDb), journal, access);
        metrics.bindPgwire(pgwire);
        tableService.replicaStatus(replicas::status);
        http = HttpFront.builder().listen(config.bindHost(), config.httpPort()).tenant(config.tenant()).limits(limits)
                .calls(frontDoorCalls).readiness(this::unreadiness).tables(tableService).bindings(tableService.bindings())
                .topology(() -> TopologyView.render(catalog.topologyVersion(), catalog.topology()))
                .topologyChanges(tableService.topologyChanges())
                // users and grants: written on the upkeep pool NodeAccess reads them through (a rare write; no pool more)
                .users(new dev.thresher.server.admin.UserAdmin(new dev.thresher.store.control.AccessStore(pools.upkeep())))
                .access(config.httpAccess().withUsers(access))
                .idempotency(idempotencyKeys, new dev.thresher.store.control.InvocationLookup(controlDb)).journal(journal)
                .tls(tls.http()).start();
        http.serveMetrics(metrics::scrape);
        handlers = new HttpHandlers(config.hostId(), catalog, components, cells, frontDoorCalls, limits,
                access);
        http.serveHandlers(handlers); // HTTP handler bindings' routes under /v1/http/
    }

    /**
     * The node joins the cluster: its host registered, its lease keeper started and following the topology, its shard
     * databases probed, the coordination janitor started.
     */
    private void joinCluster(Limits limits) {
        // Other nodes connect to the advertised wire address (node.wireAdvertisedHost/Port), by default the bound one.
        topology.registerHost(new Host(config.hostId(), config.shardId(), config.advertisedWireHost(),
                        config.advertisedWirePort(wireServer.port())),
                pgwireAddress(), httpAddress(), config.standbyShards());
        leasesStarted = true;
        leases.start();
        leases.followTopology(this::leadershipFingerprint, 200);
        shardProbe = new ShardProbe(config.hostId(), pools.shards());
        janitor = new CoordinationJanitor(upkeep, config.hostId(), limits.coordinationRetentionMs());
        janitor.start();
    }

    public String hostId() {
        return config.hostId();
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
        List<String> down = shardProbe.down();
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

    /** The node's leader replicas by shard database. */
    public Map<Integer, dev.thresher.store.replica.ShardReplica> replicas() {
        return replicas.view();
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
            shardProbe.close();
        }
        closeQuietly(catalog, "control cache");
        log.info("node {}: stopping 4/6: partition leadership released, janitor stopped ({} ms)", id, msSince(t));

        t = System.nanoTime();
        int unfinished = stopExecutors(EXECUTOR_STOP_MS, callExecutor, reduceExecutor, shardExecutor, readExecutor);
        log.info("node {}: stopping 5/6: executors stopped, {} of them interrupted after {} ms ({} ms)", id, unfinished,
                EXECUTOR_STOP_MS, msSince(t));

        t = System.nanoTime();
        replicas.byShard().forEach((shard, replica) -> closeQuietly(replica, "replica of shard database " + shard));
        closeQuietly(cells, "cells");
        pools.shards().forEach((shard, pool) -> closeQuietly(pool, "shard database " + shard + " pool"));
        if (pools.shards().isEmpty()) {
            closeQuietly(pools.homeShard(), "shard database pool");
        }
        closeQuietly(pools.control(), "control database pool");
        closeQuietly(pools.upkeep(), "control database upkeep pool");
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
}
