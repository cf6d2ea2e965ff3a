package dev.thresher.server.node;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import dev.thresher.cellhost.CellHost;
import dev.thresher.coordinator.CallObserver;
import dev.thresher.coordinator.CallPhases;
import dev.thresher.coordinator.Coordinator;
import dev.thresher.coordinator.ShardRunValidator;
import dev.thresher.errors.ErrorCode;
import dev.thresher.http.MetricsRoute;
import dev.thresher.leader.HostRequestExecutor;
import dev.thresher.leader.LeaseKeeper;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.PgWireServer;
import dev.thresher.store.CountingDataSource;
import dev.thresher.store.replica.ReplicaBudget;
import dev.thresher.store.replica.ShardReplica;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * One node's metrics: a registry of its own (a process may run several nodes; the global registry is never used),
 * every meter tagged {@code node=<hostId>}, scraped as Prometheus text or OpenMetrics on the node's HTTP port
 * ({@code GET /metrics}). Each series is listed in docs/operations.md, "Metrics".
 *
 * <p>Most series are read from state the parts of the node already keep (their counters, pools and gauges) when
 * scraped, so the call path does no more work for them; the call path itself records one timer per call
 * ({@link #calls()}) and one counter per rejected slot. Names follow {@code thresher_*} in base units (seconds,
 * bytes); tag values are bounded: a binding that resolved (never a caller's name of none), an {@link ErrorCode},
 * a phase, a pool of the node.
 */
public final class NodeMetrics implements AutoCloseable {
    /** Bucket bounds of {@code thresher_call_seconds}: a millisecond to past the longest deadline a call may ask for. */
    static final Duration[] CALL_BUCKETS = {
            Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25),
            Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
            Duration.ofSeconds(1), Duration.ofMillis(2_500), Duration.ofSeconds(5), Duration.ofSeconds(10),
            Duration.ofSeconds(30), Duration.ofMinutes(1), Duration.ofMinutes(2), Duration.ofMinutes(5),
            Duration.ofMinutes(10)};
    /** The binding tag of a call that ended before its binding was resolved. */
    static final String UNRESOLVED = "(unresolved)";
    static final String SUCCESS = "success";

    private final PrometheusMeterRegistry registry;
    private final List<AutoCloseable> closeables = new ArrayList<>();
    /** What function meters read, held here: Micrometer holds some of them weakly only. */
    private final List<Object> bound = new ArrayList<>();
    private final Map<CallKey, Timer> callTimers = new ConcurrentHashMap<>();
    private final Map<ErrorCode, Counter> slotRejections = new EnumMap<>(ErrorCode.class);
    private final CallObserver calls = new Calls();

    private record CallKey(String binding, String outcome) {}

    /** A registry for node {@code hostId} with the JVM's and the process's metrics bound. */
    public NodeMetrics(String hostId) {
        registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("node", hostId);
        new JvmMemoryMetrics().bindTo(registry);
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        closeables.add(gc);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        for (ErrorCode reason : ShardRunValidator.REASONS) {
            slotRejections.put(reason, slotRejectionCounter(reason));
        }
    }

    /** The registry, for a part that records its own meters. */
    public MeterRegistry registry() {
        return registry;
    }

    /** The node's metrics in the format of {@code contentType} ({@link MetricsRoute#PROMETHEUS_TEXT} or OpenMetrics). */
    public String scrape(String contentType) {
        return registry.scrape(contentType);
    }

    /** What the coordinator tells as each call ends: {@code thresher_call_seconds}, {@code thresher_shard_runs_invalid_total}. */
    public CallObserver calls() {
        return calls;
    }

    private final class Calls implements CallObserver {
        @Override
        public void callEnded(Optional<String> binding, ErrorCode failure, long nanos) {
            CallKey key = new CallKey(binding.orElse(UNRESOLVED), failure == null ? SUCCESS : failure.name());
            callTimers.computeIfAbsent(key, k -> Timer.builder("thresher.call")
                    .description("Calls coordinated on this node, from acceptance to their end, by binding and outcome")
                    .tags("binding", k.binding(), "outcome", k.outcome())
                    .serviceLevelObjectives(CALL_BUCKETS)
                    .register(registry)).record(nanos, TimeUnit.NANOSECONDS);
        }

        @Override
        public void slotRejected(ErrorCode reason) {
            Counter c = slotRejections.get(reason);
            (c != null ? c : slotRejectionCounter(reason)).increment();
        }
    }

    private Counter slotRejectionCounter(ErrorCode reason) {
        Counter c = Counter.builder("thresher.shard.runs.invalid")
                .description("Published shard runs that failed validation before reduce, failing their call, by reason")
                .tag("reason", reason.name())
                .register(registry);
        FunctionCounter.builder("thresher.slot.rejections", c, Counter::count).description(formerly(
                "thresher_shard_runs_invalid_total")).tag("reason", reason.name()).register(registry);
        return c;
    }

    /** The description of a series kept under its former name for one release, saying what it was renamed to. */
    private static String formerly(String renamed) {
        return "Deprecated: the former name of " + renamed + ", the same series; it goes in the next release";
    }

    /** The coordinator's phases, retries, failed slots, calls in flight and pool of host requests. */
    void bindCoordinator(Coordinator c) {
        bound.add(c);
        CallPhases phases = c.phases();
        for (CallPhases.Phase p : CallPhases.Phase.values()) {
            FunctionTimer.builder("thresher.call.phase", phases, CallPhases::calls, ph -> ph.totalNanos(p),
                            TimeUnit.NANOSECONDS)
                    .description("Time calls that published a result spent in each phase (leader-side phases summed"
                            + " over slots or hosts)")
                    .tag("phase", p.name().toLowerCase(Locale.ROOT))
                    .register(registry);
        }
        String retries = "Work a coordinator did again, by reason: shard_retry (slots sent again), replan (calls planned"
                + " again after a split or drop), superseded_request (host requests given up to a new leader), leader_wait"
                + " (slots that waited for a live leader)";
        counter("thresher.retries", c, Coordinator::shardRetries, retries, "reason", "shard_retry");
        counter("thresher.retries", c, Coordinator::replans, retries, "reason", "replan");
        counter("thresher.retries", c, Coordinator::supersededRequests, retries, "reason", "superseded_request");
        counter("thresher.retries", c, Coordinator::leaderWaits, retries, "reason", "leader_wait");
        counter("thresher.shard.runs.failed", "thresher.slots.failed", c, Coordinator::failedShardRuns, "Shard runs of calls"
                + " coordinated here that failed for good");
        gauge("thresher.calls.in.flight", c, Coordinator::callsInFlight, "Calls accepted here that have not ended");
        gauge("thresher.host.requests.out", c, Coordinator::hostRequestsOut, "Host requests this coordinator has out,"
                + " each holding a place of its pool");
        gauge("thresher.host.requests.waiting", c, Coordinator::hostRequestsWaiting, "Host requests waiting for a place"
                + " of this coordinator's pool");
    }

    /** The leader side: the shard pool's admission and slots, and partition leadership. */
    void bindLeaderSide(HostRequestExecutor shards, LeaseKeeper leases) {
        bound.add(shards);
        bound.add(leases);
        gauge("thresher.host.requests.running", "thresher.shard.runs.in.flight", shards, HostRequestExecutor::runsInFlight,
                "Host requests holding a place of the shard pool");
        gauge("thresher.host.requests.queued", "thresher.shard.runs.queued", shards, HostRequestExecutor::runsQueued,
                "Host requests waiting for a place of the shard pool");
        gauge("thresher.shard.pool.places", "thresher.shard.run.places", shards, HostRequestExecutor::runPlaces,
                "Places of the shard pool (limits.shardConcurrency)");
        counter("thresher.host.requests.refused", "thresher.shard.runs.refused", shards, HostRequestExecutor::busyRefusals,
                "Host requests refused, before any guest code, because no place came free in time (busy or deadline)");
        counter("thresher.shard.runs.rejected", "thresher.slots.refused", shards, HostRequestExecutor::refusals,
                "Shard runs refused here before any guest code ran");
        counter("thresher.shard.runs.replayed", "thresher.slots.replayed", shards, HostRequestExecutor::replays,
                "Shard runs answered from the journal without running the guest");
        counter("thresher.call.stops.received", shards, HostRequestExecutor::stopsReceived, "Stop messages received from"
                + " coordinators");
        gauge("thresher.lease.partitions.led", leases, LeaseKeeper::ledCount, "Partitions this node leads now");
        counter("thresher.lease.takeovers", leases, LeaseKeeper::takeovers, "Partitions this node came to lead (a lease"
                + " taken, or held under a new epoch)");
        counter("thresher.lease.drops", leases, LeaseKeeper::drops, "Partitions this node stopped leading");
    }

    /** The leader replicas: memory against the budget, partitions by state, lag and reads by where they were served. */
    void bindReplicas(Map<Integer, ShardReplica> replicas, ReplicaBudget budget) {
        Gauge.builder("thresher.replica.memory.used", budget, ReplicaBudget::usedBytes).strongReference(true)
                .baseUnit("bytes").description("Heap the node's leader replicas hold").register(registry);
        Gauge.builder("thresher.replica.memory.budget", budget, ReplicaBudget::limitBytes).strongReference(true)
                .baseUnit("bytes").description("limits.replicaMemoryBytes").register(registry);
        replicas.forEach((shard, replica) -> {
            String tag = Integer.toString(shard);
            bound.add(replica);
            for (ShardReplica.State state : ShardReplica.State.values()) {
                Gauge.builder("thresher.replica.partitions", replica,
                                r -> r.status().stream().filter(p -> p.state() == state).count())
                        .strongReference(true).tags("shard", tag, "state", state.name().toLowerCase(java.util.Locale.ROOT))
                        .description("Partitions of the shard database by where reads of them are served").register(registry);
            }
            Gauge.builder("thresher.replica.lag", replica,
                            r -> r.status().stream().mapToLong(ShardReplica.PartitionStatus::lagBytes).max().orElse(0))
                    .strongReference(true).baseUnit("bytes").tag("shard", tag)
                    .description("WAL the shard database has sent past what the replica applied").register(registry);
            counter("thresher.replica.reads", replica, r -> r.reads().memory(), "Partition reads served from memory",
                    "shard", tag, "served", "memory");
            counter("thresher.replica.reads", replica,
                    r -> r.reads().sqlByReason().values().stream().mapToLong(Long::longValue).sum(),
                    "Partition reads sent through SQL (reasons in /admin/topology)", "shard", tag, "served", "sql");
        });
    }

    /** The cells: activations, evictions, live cells and the guest memory they reserve against the budget. */
    void bindCells(CellHost cells, Limits limits) {
        bound.add(cells);
        counter("thresher.cell.activations", cells, CellHost::instantiations, "Cells instantiated");
        counter("thresher.cell.evictions", cells, CellHost::evictions, "Cells evicted, for the memory budget or for"
                + " idleness");
        counter("thresher.guest.starts", cells, CellHost::guestStarts, "run and reduce invocations that entered guest"
                + " code");
        gauge("thresher.cells.live", cells, CellHost::liveCells, "Cells instantiated now");
        Gauge.builder("thresher.guest.memory.reserved", cells, CellHost::reservedBytes).strongReference(true)
                .baseUnit("bytes").description("Guest memory the live cells reserve").register(registry);
        long budget = limits.guestMemoryBudgetBytes();
        Gauge.builder("thresher.guest.memory.budget", () -> budget).strongReference(true).baseUnit("bytes")
                .description("Guest memory the cells may reserve in all (limits.guestMemoryBudgetBytes)")
                .register(registry);
    }

    /** The pgwire front door's connections: open now, and refused by the node's and the users' caps. */
    void bindPgwire(PgWireServer pgwire) {
        bound.add(pgwire);
        gauge("thresher.pgwire.connections", pgwire, PgWireServer::openConnections, "pgwire connections open now,"
                + " authenticated or not (limits.pgwireMaxConnections)");
        String refused = "pgwire connections refused with 53300, by reason: node_limit (limits.pgwireMaxConnections"
                + " open), user_limit (the user held limits.pgwireConnectionsPerUser)";
        counter("thresher.pgwire.connections.refused", pgwire, PgWireServer::connectionsRefusedForNode, refused,
                "reason", "node_limit");
        counter("thresher.pgwire.connections.refused", pgwire, PgWireServer::connectionsRefusedForUser, refused,
                "reason", "user_limit");
    }

    /** A HikariCP pool, tagged {@code pool=<name>}: connections active, idle and at most, and threads waiting for one. */
    void bindPool(String name, HikariDataSource pool) {
        bound.add(pool);
        poolGauge("thresher.db.pool.active.connections", name, pool, HikariPoolMXBean::getActiveConnections,
                "Connections in use");
        poolGauge("thresher.db.pool.idle.connections", name, pool, HikariPoolMXBean::getIdleConnections,
                "Connections idle in the pool");
        poolGauge("thresher.db.pool.pending.threads", name, pool, HikariPoolMXBean::getThreadsAwaitingConnection,
                "Threads waiting for a connection");
        Gauge.builder("thresher.db.pool.max.connections", pool, HikariDataSource::getMaximumPoolSize)
                .strongReference(true).tag("pool", name).description("Connections the pool holds at most")
                .register(registry);
    }

    private void poolGauge(String name, String pool, HikariDataSource ds, ToDoubleFunction<HikariPoolMXBean> f,
                           String description) {
        Gauge.builder(name, ds, d -> {
            HikariPoolMXBean bean = d.isClosed() ? null : d.getHikariPoolMXBean();
            return bean == null ? 0 : f.applyAsDouble(bean);
        }).strongReference(true).tag("pool", pool).description(description).register(registry);
    }

    /** Statements and transactions the call path sent to the control database. */
    void bindControlStatements(CountingDataSource callPath) {
        bound.add(callPath);
        counter("thresher.control.statements", callPath, CountingDataSource::statements, "Statements the call path"
                + " sent to the control database");
        counter("thresher.control.transactions", callPath, CountingDataSource::transactions, "Transactions the call"
                + " path ran on the control database");
    }

    private <T> void counter(String name, T obj, ToLongFunction<T> f, String description, String... tags) {
        FunctionCounter.builder(name, obj, o -> f.applyAsLong(o)).description(description).tags(tags).register(registry);
    }

    private <T> void gauge(String name, T obj, ToDoubleFunction<T> f, String description) {
        Gauge.builder(name, obj, f).strongReference(true).description(description).register(registry);
    }

    /** A counter, and the same under its former name for one release ({@link #formerly}). */
    private <T> void counter(String name, String former, T obj, ToLongFunction<T> f, String description) {
        counter(name, obj, f, description);
        counter(former, obj, f, formerly(prometheus(name) + "_total"));
    }

    /** A gauge, and the same under its former name for one release. */
    private <T> void gauge(String name, String former, T obj, ToDoubleFunction<T> f, String description) {
        gauge(name, obj, f, description);
        gauge(former, obj, f, formerly(prometheus(name)));
    }

    private static String prometheus(String name) {
        return name.replace('.', '_');
    }

    @Override
    public void close() {
        for (AutoCloseable c : closeables) {
            try {
                c.close();
            } catch (Exception e) {
                // a binder's listeners go with the process; nothing to do
            }
        }
        registry.close();
    }
}
