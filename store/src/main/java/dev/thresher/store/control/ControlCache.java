package dev.thresher.store.control;

import dev.thresher.bindings.Binding;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.topology.Topology;
import java.sql.Connection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Bindings and the topology as one node caches them, so a call does not read the control
 * database for them. Two things keep the cache honest:
 *
 * <ul>
 *   <li><b>the poll</b> (the contract): every {@code pollMs} a thread re-reads the topology and
 *       drops every cached current binding, so a change is seen within one poll interval whatever
 *       happened to its notification;</li>
 *   <li><b>push</b> (the optimisation): a thread holds a dedicated connection listening on
 *       {@value #CHANNEL}; the control database's triggers (migration V4) notify it when a binding
 *       gets a new version ({@code binding:<tenant>/<name>}) and when partitions, hosts or
 *       leadership change ({@code topology}), and when users, grants or tokens change ({@code access},
 *       migration V13: passed to {@link #onAccessChanged} listeners). When that connection breaks, the thread logs once,
 *       reconnects with bounded backoff and, once listening again, invalidates everything, since
 *       notifications may have been lost meanwhile.</li>
 * </ul>
 *
 * <p>Binding versions are immutable and kept in an LRU of {@value #VERSIONS_CACHED}. A miss reads
 * through {@link ControlStore}, one read at a time per key: concurrent callers on the same miss wait
 * for that read instead of each reading. The read runs on a virtual thread of its own and every
 * caller waits for it at most {@code loadWaitMs}, so a control database that stops answering
 * mid-read blocks nobody for longer; a read older than that bound is no longer joined. Reads throw
 * {@link ThresherException} with {@link ErrorCode#STORE_UNAVAILABLE} when the control database fails
 * or does not answer in time; a failed poll keeps what is cached and tries again one interval later.
 *
 * <p>The listening thread is {@link CatalogListener}'s, the shared, bounded reads {@link SharedReads}'; this class
 * keeps what is cached, what a notification does to it, and the poll.
 */
public final class ControlCache implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ControlCache.class);

    /** The notification channel of migration V4. */
    public static final String CHANNEL = "thresher_catalog";
    /** Binding versions kept, least recently used evicted first. */
    public static final int VERSIONS_CACHED = 1_024;
    /** How long a caller waits for a read of the control database, by default. */
    public static final long DEFAULT_LOAD_WAIT_MS = 15_000;

    private static final long CLOSE_WAIT_MS = 2_000;

    /** A consistent view: the cached topology and the topology version read just before it. */
    public record TopologyAt(Topology topology, long version) {}

    private record VersionKey(String tenant, String name, int version) {}

    private record VersionLoad(long startNanos, CompletableFuture<Optional<Binding>> result) {}

    /** A topology read, stamped with the local monotonic time taken just before it was sent. */
    private record Snapshot(Topology topology, long version, long readNanos) {}

    private record TopologyLoad(long startNanos, CompletableFuture<Snapshot> result) {}

    private final ControlStore control;
    private final long pollNanos;
    private final String nodeName;
    private final long loadWaitNanos;

    /** The distributed calls' current versions. */
    private final CurrentVersions<Binding> calls;
    /** Every binding's current version with its manifest: what an HTTP handler is served from. */
    private final CurrentVersions<BindingCatalog.Current> handlers;

    private final Map<VersionKey, Binding> versions = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<VersionKey, Binding> eldest) {
            return size() > VERSIONS_CACHED;
        }
    };
    private final ConcurrentHashMap<VersionKey, VersionLoad> versionLoads = new ConcurrentHashMap<>();

    private final Object topologyLock = new Object();
    private volatile Snapshot snapshot; // written under topologyLock
    private TopologyLoad topologyLoad; // guarded by topologyLock
    /** A snapshot read before this {@code nanoTime} is stale: a notification or invalidation said so. */
    private final AtomicLong topologyWantedAfter;
    private final Semaphore refreshNow = new Semaphore(0);

    private final LongAdder notifications = new LongAdder();
    private final LongAdder polls = new LongAdder();
    private final LongAdder pollFailures = new LongAdder();
    private final LongAdder bindingReads = new LongAdder();
    private final LongAdder topologyReads = new LongAdder();
    private volatile String lastNotification;

    private volatile boolean closed;
    private final CatalogListener listener;
    private final SharedReads reads;
    private boolean pollFailing; // poll thread only
    private Thread poller;

    private ControlCache(ControlStore control, Callable<Connection> listenConnections, long pollMs, String nodeName,
                         long loadWaitMs) {
        if (pollMs <= 0 || loadWaitMs <= 0) {
            throw new IllegalArgumentException("pollMs and loadWaitMs must be positive");
        }
        this.control = Objects.requireNonNull(control, "control");
        Objects.requireNonNull(listenConnections, "listenConnections");
        this.pollNanos = TimeUnit.MILLISECONDS.toNanos(pollMs);
        this.nodeName = Objects.requireNonNull(nodeName, "nodeName");
        this.loadWaitNanos = TimeUnit.MILLISECONDS.toNanos(loadWaitMs);
        this.topologyWantedAfter = new AtomicLong(System.nanoTime());
        this.reads = new SharedReads(nodeName, loadWaitNanos);
        this.calls = new CurrentVersions<>("binding", control::currentBinding, this::rememberVersion,
                bindingReads::increment, reads, loadWaitNanos);
        this.handlers = new CurrentVersions<>("HTTP handler", control.bindings()::current, v -> { },
                bindingReads::increment, reads, loadWaitNanos);
        this.listener = new CatalogListener(listenConnections, nodeName, pollNanos, this::handle, () -> {
            invalidateAll();
            refreshNow.release();
        }, refreshNow::release, () -> closed);
    }

    /**
     * Starts a cache: listens first, then reads the topology once, then starts the listener and the
     * poll threads. It does not fail when the control database is down: the listener keeps
     * reconnecting, the poll keeps trying, and reads through the cache throw
     * {@link ErrorCode#STORE_UNAVAILABLE} until it is back.
     *
     * @param control the control database
     * @param listenConnections opens a dedicated pgjdbc connection (not a pooled one) for
     *        {@code LISTEN}; called again after the connection breaks
     * @param pollMs the reconcile interval, {@code limits.topologyPollMs}
     * @param nodeName names the threads and the log lines
     */
    public static ControlCache start(ControlStore control, Callable<Connection> listenConnections, long pollMs,
                                     String nodeName) {
        return start(control, listenConnections, pollMs, nodeName, DEFAULT_LOAD_WAIT_MS);
    }

    /** {@link #start(ControlStore, Callable, long, String)} with the bound on waiting for one read ({@link #DEFAULT_LOAD_WAIT_MS}). */
    public static ControlCache start(ControlStore control, Callable<Connection> listenConnections, long pollMs,
                                     String nodeName, long loadWaitMs) {
        ControlCache c = new ControlCache(control, listenConnections, pollMs, nodeName, loadWaitMs);
        c.begin();
        return c;
    }

    private void begin() {
        boolean listenBroken = !listener.open();
        try {
            loadTopology(System.nanoTime());
        } catch (RuntimeException e) {
            pollFailing = true;
            log.warn("{}: cannot read the topology yet ({}); the poll retries every {} ms", nodeName, e.getMessage(),
                    TimeUnit.NANOSECONDS.toMillis(pollNanos));
        }
        boolean broken = listenBroken;
        listener.start(broken);
        poller = Thread.ofPlatform().daemon().name("control-cache-poll-" + nodeName).start(this::pollLoop);
    }

    // ---- bindings ------------------------------------------------------------------------------

    /** The current version of a distributed call's binding (or its absence), cached; a miss reads through. */
    public Optional<Binding> currentBinding(String tenant, String name) {
        return calls.get(tenant, name);
    }

    /**
     * The current version of a binding of either kind with its manifest (or its absence), cached as
     * {@link #currentBinding} is: an HTTP handler's routes and budgets are read from it.
     */
    public Optional<BindingCatalog.Current> currentVersion(String tenant, String name) {
        return handlers.get(tenant, name);
    }

    /** One immutable version of a binding; found versions are kept in an LRU of {@value #VERSIONS_CACHED}. */
    public Optional<Binding> binding(String tenant, String name, int version) {
        VersionKey k = new VersionKey(tenant, name, version);
        Binding hit = cachedVersion(k);
        if (hit != null) {
            return Optional.of(hit);
        }
        long now = System.nanoTime();
        VersionLoad mine = new VersionLoad(now, new CompletableFuture<>());
        VersionLoad running = versionLoads.compute(k, (key, cur) -> cur != null && reads.young(cur.startNanos(), now) ? cur : mine);
        String what = "binding " + tenant + "/" + name + " version " + version;
        if (running == mine) {
            reads.read(mine.result(), () -> {
                try {
                    Binding again = cachedVersion(k);
                    if (again != null) {
                        return Optional.of(again);
                    }
                    bindingReads.increment();
                    Optional<Binding> b = control.binding(tenant, name, version);
                    b.ifPresent(this::rememberVersion); // an absent version is not cached: it may be created yet
                    return b;
                } finally {
                    versionLoads.remove(k, mine);
                }
            });
        }
        return reads.await(running.result(), now + loadWaitNanos, what);
    }

    private Binding cachedVersion(VersionKey k) {
        synchronized (versions) {
            return versions.get(k);
        }
    }

    private void rememberVersion(Binding b) {
        synchronized (versions) {
            versions.put(new VersionKey(b.tenant(), b.name(), b.version()), b);
        }
    }

    /** Drops the cached current version of a binding: the caller learned it is stale. */
    public void invalidateBinding(String tenant, String name) {
        calls.invalidate(tenant, name);
        handlers.invalidate(tenant, name);
    }

    private void invalidateCurrentBindings() {
        calls.invalidateAll();
        handlers.invalidateAll();
    }

    /** Drops every cached current binding and marks the topology stale; versions, immutable, stay. */
    public void invalidateAll() {
        invalidateCurrentBindings();
        markTopologyStale();
        accessChanged();
    }

    // ---- users and grants ------------------------------------------------------------------------

    private final java.util.List<Runnable> accessListeners = new java.util.concurrent.CopyOnWriteArrayList<>();

    /**
     * Tells {@code listener} (on this cache's listener or poll thread; it must not block) whenever users, grants or
     * tokens may have changed: an {@code access} notification, a reconnect of the listen connection, and every poll.
     */
    public void onAccessChanged(Runnable listener) {
        accessListeners.add(Objects.requireNonNull(listener, "listener"));
    }

    private void accessChanged() {
        for (Runnable r : accessListeners) {
            try {
                r.run();
            } catch (RuntimeException e) {
                log.warn("{}: an access listener failed", nodeName, e);
            }
        }
    }

    // ---- topology ------------------------------------------------------------------------------

    /**
     * The cached topology, its {@code readAt} advanced by the local monotonic time elapsed since the
     * read was sent: leases are judged as of now, by the database's clock at read time plus elapsed
     * time (which, counted from before the read, can only make a lease look shorter). Reads through
     * when nothing is cached or a notification said it changed; when that read fails, the previous
     * topology is returned if there is one (leaders fence stale targets), else it throws.
     */
    public Topology topology() {
        return topologyAt().topology();
    }

    /** {@link #topology()} together with the version it was read at, from the same snapshot. */
    public TopologyAt topologyAt() {
        Snapshot s = snapshot;
        long wanted = topologyWantedAfter.get();
        if (s == null || s.readNanos() - wanted < 0) {
            try {
                s = loadTopology(wanted);
            } catch (ThresherException e) {
                if (s == null) {
                    throw e;
                }
            }
        }
        return advanced(s);
    }

    /**
     * Reads the topology now (after a stale-target refusal, say) and caches it. Callers that refresh
     * at the same time share one read that began after they asked. Throws
     * {@link ErrorCode#STORE_UNAVAILABLE} when it cannot be read.
     */
    public Topology refreshTopology() {
        return advanced(loadTopology(System.nanoTime())).topology();
    }

    /** How long ago the cached topology was read from the control database (a node with none: the longest). */
    public long topologyAgeMillis() {
        Snapshot s = snapshot;
        return s == null ? Long.MAX_VALUE : java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - s.readNanos());
    }

    /**
     * The topology version read just before the cached topology (0 before the first read): the cached
     * topology reflects every partition and host change up to at least this version.
     */
    public long topologyVersion() {
        Snapshot s = snapshot;
        return s == null ? 0 : s.version();
    }

    private static TopologyAt advanced(Snapshot s) {
        Topology t = s.topology();
        long elapsed = System.nanoTime() - s.readNanos();
        return new TopologyAt(new Topology(t.partitions(), t.leaders(), t.hosts(), t.readAt().plusNanos(elapsed),
                t.candidates(), t.draining()),
                s.version());
    }

    private void markTopologyStale() {
        long now = System.nanoTime();
        topologyWantedAfter.accumulateAndGet(now, (prev, x) -> x - prev > 0 ? x : prev);
    }

    /** A snapshot whose read began at or after {@code notBefore}: the cached one, a running read's, or a new read. */
    private Snapshot loadTopology(long notBefore) {
        long waitUntil = System.nanoTime() + loadWaitNanos;
        while (true) {
            TopologyLoad running;
            synchronized (topologyLock) {
                Snapshot s = snapshot;
                if (s != null && s.readNanos() - notBefore >= 0) {
                    return s;
                }
                long now = System.nanoTime();
                running = topologyLoad;
                if (running == null || !reads.young(running.startNanos(), now)) {
                    TopologyLoad mine = new TopologyLoad(now, new CompletableFuture<>());
                    topologyLoad = mine;
                    running = mine;
                    reads.read(mine.result(), () -> readTopology(mine));
                }
            }
            Snapshot got = reads.await(running.result(), waitUntil, "the topology");
            if (running.startNanos() - notBefore >= 0) {
                return got;
            }
            // That read began before we asked: start (or join) one that begins after.
        }
    }

    private Snapshot readTopology(TopologyLoad mine) {
        try {
            topologyReads.increment();
            long version = control.readTopologyVersion();
            Topology t = control.readTopology();
            Snapshot s = new Snapshot(t, version, mine.startNanos());
            synchronized (topologyLock) {
                Snapshot cur = snapshot;
                if (cur == null || s.readNanos() - cur.readNanos() > 0) {
                    snapshot = s;
                }
            }
            return s;
        } finally {
            synchronized (topologyLock) {
                if (topologyLoad == mine) {
                    topologyLoad = null;
                }
            }
        }
    }

    // ---- counters ------------------------------------------------------------------------------

    /** Notifications received on {@value #CHANNEL}. */
    public long notifications() {
        return notifications.sum();
    }

    /** Polls completed: topology re-read and current bindings dropped. */
    public long polls() {
        return polls.sum();
    }

    /** Polls that could not read the topology (and kept what was cached). */
    public long pollFailures() {
        return pollFailures.sum();
    }

    /** Reads of the control database this cache made: {@link #bindingReads()} plus {@link #topologyReads()}. */
    public long reads() {
        return bindingReads.sum() + topologyReads.sum();
    }

    /** Reads of a current binding or a binding version. */
    public long bindingReads() {
        return bindingReads.sum();
    }

    /** Reads of the topology (each is the topology version and the topology, two short transactions). */
    public long topologyReads() {
        return topologyReads.sum();
    }

    /** Times the listen connection was established again after it broke (or could not be opened at start). */
    public long reconnects() {
        return listener.reconnects();
    }

    /** The payload of the last notification received, for tests. */
    String lastNotification() {
        return lastNotification;
    }

    // ---- notifications (CatalogListener hands them over) -------------------------------------------

    /** Applies one notification; returns whether it says the topology changed. */
    private boolean handle(String payload) {
        notifications.increment();
        lastNotification = payload;
        if (payload.equals("topology")) {
            markTopologyStale();
            return true;
        }
        if (payload.equals("bindings")) {
            invalidateCurrentBindings();
            return false;
        }
        if (payload.equals("access")) {
            accessChanged();
            return false;
        }
        if (payload.startsWith("binding:")) {
            String qualified = payload.substring("binding:".length());
            int slash = qualified.indexOf('/');
            if (slash >= 0 && qualified.indexOf('/', slash + 1) < 0) {
                invalidateBinding(qualified.substring(0, slash), qualified.substring(slash + 1));
            } else {
                // A '/' inside a tenant or a name: drop every key that spells the same.
                calls.invalidateSpelled(qualified);
                handlers.invalidateSpelled(qualified);
            }
            return false;
        }
        // A payload this build does not know (a newer node's): assume anything changed.
        invalidateAll();
        return true;
    }

    // ---- the poll ------------------------------------------------------------------------------

    private void pollLoop() {
        long nextPoll = System.nanoTime() + pollNanos;
        while (!closed) {
            long wait = nextPoll - System.nanoTime();
            if (wait > 0) {
                boolean woken;
                try {
                    woken = refreshNow.tryAcquire(wait, TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    break;
                }
                if (closed) {
                    break;
                }
                if (woken) {
                    refreshNow.drainPermits();
                    refreshAfterNotification();
                    continue;
                }
            }
            poll();
            nextPoll = System.nanoTime() + pollNanos;
        }
    }

    /** A notification said the topology changed: read it now, so callers rarely wait for it. */
    private void refreshAfterNotification() {
        try {
            loadTopology(topologyWantedAfter.get());
        } catch (RuntimeException e) {
            log.debug("{}: topology refresh after a notification failed: {}", nodeName, e.toString());
        }
    }

    private void poll() {
        try {
            loadTopology(System.nanoTime());
            invalidateCurrentBindings();
            polls.increment();
            accessChanged();
            if (pollFailing) {
                pollFailing = false;
                log.info("{}: the control database answers the topology poll again", nodeName);
            }
        } catch (RuntimeException e) {
            pollFailures.increment();
            if (!pollFailing) {
                pollFailing = true;
                log.warn("{}: topology poll failed ({}); keeping the cached topology and bindings, retrying every {} ms",
                        nodeName, e.getMessage(), TimeUnit.NANOSECONDS.toMillis(pollNanos));
            }
        }
    }

    // ---- closing ------------------------------------------------------------------------------

    /** Stops both threads (waiting for each at most two seconds) and closes the listen connection. */
    @Override
    public void close() {
        closed = true;
        for (Thread t : new Thread[] {poller, listener.thread()}) {
            if (t != null) {
                t.interrupt();
            }
        }
        for (Thread t : new Thread[] {poller, listener.thread()}) {
            if (t != null) {
                try {
                    t.join(CLOSE_WAIT_MS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        listener.closeConnection(); // when the listener did not stop in time
    }
}
