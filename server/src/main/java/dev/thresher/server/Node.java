package dev.thresher.server;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.cellhost.CellHost;
import dev.thresher.coordinator.CoordinationJanitor;
import dev.thresher.coordinator.Coordinator;
import dev.thresher.coordinator.LeaseKeeper;
import dev.thresher.coordinator.ShardExecutor;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.http.HttpFront;
import dev.thresher.pgwire.PgWireConfig;
import dev.thresher.pgwire.PgWireServer;
import dev.thresher.store.Pools;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Host;
import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireServer;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
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
 *   WireServer ─► ShardExecutor (pool) ─► LeaseKeeper check ─► ShardReader (HikariCP) ─► CellHost.run
 * </pre>
 */
public final class Node implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Node.class);

    private final NodeConfig config;
    private final Deque<AutoCloseable> closers = new ArrayDeque<>();
    private final AtomicBoolean ready = new AtomicBoolean();
    private CellHost cells;
    private WireServer wireServer;
    private PgWireServer pgwire;
    private HttpFront http;
    private Failpoints failpoints;
    private ShardExecutor shards;
    private Coordinator coordinator;
    private ControlStore control;
    private LeaseKeeper leases;

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

    private void startParts() throws InterruptedException {
        var limits = config.limits();
        HikariDataSource controlDb = Pools.open(config.hostId() + "-control", config.controlJdbcUrl(), config.dbUser(),
                config.dbPassword(), 8);
        closers.push(controlDb);
        HikariDataSource shardDb = Pools.open(config.hostId() + "-shard", config.shardJdbcUrl(), config.dbUser(),
                config.dbPassword(), limits.shardConcurrency());
        closers.push(shardDb);
        ControlStore.migrate(controlDb);
        control = new ControlStore(controlDb);
        failpoints = config.failpointsEnabled() ? Failpoints.enabled() : Failpoints.disabled();
        if (failpoints.isEnabled()) {
            log.warn("node {}: failpoints are enabled; this node is for tests only", config.hostId());
        }

        cells = CellHost.create(limits);
        closers.push(cells);
        log.info("node {}: guest engine {} ({})", config.hostId(), cells.engineName(),
                cells.optimizing() ? "optimizing runtime on" : "INTERPRETER ONLY, guests run 20-100x slower");

        ExecutorService shardExecutor = Executors.newFixedThreadPool(limits.shardConcurrency(),
                Thread.ofPlatform().name(config.hostId() + "-shard-", 0).daemon().factory());
        closers.push(shardExecutor::shutdownNow);
        leases = new LeaseKeeper(control, config.hostId(), config.shardId(), limits.activationLeaseMs());
        shards = new ShardExecutor(config.hostId(), control, leases, new ShardReader(shardDb), cells, limits,
                shardExecutor, failpoints);
        wireServer = WireServer.start(config.bindHost(), config.wirePort(), config.hostId(), limits, shards, failpoints);
        closers.push(wireServer);

        WireClient wireClient = new WireClient(config.hostId(), limits, failpoints);
        closers.push(wireClient);
        ExecutorService callExecutor = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name(config.hostId() + "-call-", 0).factory());
        closers.push(callExecutor::shutdownNow);
        // Reduce has its own platform threads: queued behind shard runs it could outlive its call's deadline.
        ExecutorService reduceExecutor = Executors.newFixedThreadPool(Math.max(2, Runtime.getRuntime().availableProcessors()),
                Thread.ofPlatform().name(config.hostId() + "-reduce-", 0).daemon().factory());
        closers.push(reduceExecutor::shutdownNow);
        coordinator = new Coordinator(config.hostId(), control, wireClient, cells, limits, callExecutor,
                reduceExecutor, failpoints);

        pgwire = PgWireServer.start(new PgWireConfig(config.bindHost(), config.pgwirePort(), config.pgwireAuth(),
                config.pgwireUser(), config.pgwirePassword(), config.tenant(), limits), coordinator);
        closers.push(pgwire);
        http = HttpFront.start(config.bindHost(), config.httpPort(), config.tenant(), limits, coordinator, ready::get);
        closers.push(http);

        control.registerHost(new Host(config.hostId(), config.shardId(), config.bindHost(), wireServer.port()),
                pgwireAddress(), httpAddress());
        leases.start();
        closers.push(leases);
        CoordinationJanitor janitor = new CoordinationJanitor(control, config.hostId(), limits.coordinationRetentionMs());
        janitor.start();
        closers.push(janitor);
        if (limits.reduceLeaseMs() < limits.maxCallDeadlineMs()) {
            log.warn("limits.reduceLeaseMs ({}) is shorter than limits.maxCallDeadlineMs ({}): a call slower than the "
                    + "lease fails SLOT_EXPIRED because its earliest slots' leases end before reduce",
                    limits.reduceLeaseMs(), limits.maxCallDeadlineMs());
        }
        ready.set(true);
        log.info("node {} ready: pgwire {}, http {}, wire {}:{}, shard {}, leading {} partitions", config.hostId(),
                pgwireAddress(), httpAddress(), config.bindHost(), wireServer.port(), config.shardId(), leases.ledCount());
    }

    public String hostId() {
        return config.hostId();
    }

    public String pgwireAddress() {
        return config.bindHost() + ":" + pgwire.port();
    }

    public int pgwirePort() {
        return pgwire.port();
    }

    public String httpAddress() {
        return "http://" + config.bindHost() + ":" + http.port();
    }

    public CellHost cells() {
        return cells;
    }

    /** This node's failpoints; armable only when the configuration enables them. */
    public Failpoints failpoints() {
        return failpoints;
    }

    public ShardExecutor shardExecutor() {
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

    public boolean ready() {
        return ready.get();
    }

    @Override
    public void close() {
        ready.set(false);
        while (!closers.isEmpty()) {
            try {
                closers.pop().close();
            } catch (Exception e) {
                log.warn("node {}: error while stopping: {}", config.hostId(), e.toString());
            }
        }
    }
}
