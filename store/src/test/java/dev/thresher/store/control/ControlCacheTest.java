package dev.thresher.store.control;

import static dev.thresher.store.TestPostgres.await;
import static dev.thresher.store.control.ControlFixture.DIGEST;
import static dev.thresher.store.control.ControlFixture.SELECTOR_1;
import static dev.thresher.store.control.ControlFixture.SELECTOR_2;
import static dev.thresher.store.control.ControlFixture.SELECTOR_3;
import static dev.thresher.store.control.ControlFixture.TENANT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.thresher.bindings.Binding;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** ControlCache on a real PostgreSQL: push through LISTEN/NOTIFY, the reconcile poll, read-through. */
class ControlCacheTest {
    /** A poll that never runs within a test: what the cache learns, it learns by push or by reading. */
    private static final long NO_POLL = 600_000;
    private static final Duration WAIT = Duration.ofSeconds(10);

    private ControlFixture f;

    @BeforeEach
    void setUp() {
        f = ControlFixture.create();
    }

    @AfterEach
    void tearDown() throws Exception {
        f.close();
    }

    private static int version(ControlCache cache, String name) {
        return cache.currentBinding(TENANT, name).map(Binding::version).orElse(0);
    }

    private static Optional<String> leader(ControlCache cache, int partitionId) {
        Topology t = cache.topology();
        return t.leaderOf(t.partition(partitionId).orElseThrow()).map(Host::hostId);
    }

    @Test
    void aNewBindingVersionIsSeenAfterItsNotification() {
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        ControlCache cache = f.cache(NO_POLL);
        long reads = cache.bindingReads();
        assertThat(version(cache, "revenue")).isEqualTo(1);
        assertThat(version(cache, "revenue")).isEqualTo(1);
        assertThat(cache.currentBinding(TENANT, "absent")).isEmpty();
        assertThat(cache.currentBinding(TENANT, "absent")).isEmpty();
        assertThat(cache.bindingReads()).as("one read per name, then hits").isEqualTo(reads + 2);
        // The current version is also an immutable version, known without a read.
        assertThat(cache.binding(TENANT, "revenue", 1)).map(Binding::selector).map(s -> s.sql()).contains(SELECTOR_1);
        assertThat(cache.bindingReads()).isEqualTo(reads + 2);

        long notified = cache.notifications();
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_2);
        await(WAIT, "version 2 through the cache", () -> version(cache, "revenue") == 2);
        assertThat(cache.currentBinding(TENANT, "revenue").orElseThrow().selector().sql()).isEqualTo(SELECTOR_2);
        assertThat(cache.notifications()).isGreaterThan(notified);
        assertThat(cache.polls()).as("no poll ran: the notification did it").isZero();

        // A name that did not exist is announced as well.
        f.control.putBinding(TENANT, "absent", DIGEST, SELECTOR_1);
        await(WAIT, "a new name through the cache", () -> version(cache, "absent") == 1);
    }

    @Test
    void anHttpHandlersNewVersionIsSeenAfterItsNotificationAndItsAbsenceIsCachedToo() {
        String manifest = "sha256:" + "1".repeat(64);
        BindingCatalog.Pins handler = new BindingCatalog.Pins(DIGEST, manifest, null, null, dev.thresher.bindings.Budgets.NONE);
        ControlCache cache = f.cache(NO_POLL);
        long reads = cache.bindingReads();
        assertThat(cache.currentVersion(TENANT, "hello")).isEmpty();
        assertThat(cache.currentVersion(TENANT, "hello")).isEmpty();
        assertThat(cache.bindingReads()).as("its absence read once").isEqualTo(reads + 1);

        f.control.bindings().deploy(TENANT, "hello", handler, null, "{\"binding\":\"hello\"}", "test");
        await(WAIT, "the handler through the cache", () -> cache.currentVersion(TENANT, "hello").isPresent());
        BindingCatalog.Current v1 = cache.currentVersion(TENANT, "hello").orElseThrow();
        assertThat(v1.handler()).isTrue();
        assertThat(v1.manifest()).isEqualTo("{\"binding\":\"hello\"}");
        assertThat(cache.currentBinding(TENANT, "hello")).as("not a distributed call").isEmpty();
        long hits = cache.bindingReads();
        cache.currentVersion(TENANT, "hello");
        assertThat(cache.bindingReads()).as("then a hit").isEqualTo(hits);

        f.control.bindings().deploy(TENANT, "hello", new BindingCatalog.Pins(DIGEST, "sha256:" + "2".repeat(64), null, null,
                dev.thresher.bindings.Budgets.NONE), null, "{\"binding\":\"hello\",\"v\":2}", "test");
        await(WAIT, "version 2 through the cache", () -> cache.currentVersion(TENANT, "hello").orElseThrow().version() == 2);
        assertThat(cache.polls()).as("no poll ran: the notification did it").isZero();
    }

    @Test
    void bindingVersionsAreKeptInAnLruOf1024() {
        f.update("""
                INSERT INTO bindings (tenant, name, version, package_digest, selector_sql)
                SELECT ?, 'many', g, ?, ? FROM generate_series(1, 1025) g""", TENANT, DIGEST, SELECTOR_1);
        ControlCache cache = f.deafCache(NO_POLL);
        for (int v = 1; v <= 1025; v++) {
            assertThat(cache.binding(TENANT, "many", v)).map(Binding::version).contains(v);
        }
        assertThat(cache.bindingReads()).isEqualTo(1025);
        assertThat(cache.binding(TENANT, "many", 1025)).isPresent();
        assertThat(cache.binding(TENANT, "many", 2)).isPresent();
        assertThat(cache.bindingReads()).as("cached").isEqualTo(1025);
        assertThat(cache.binding(TENANT, "many", 1)).isPresent();
        assertThat(cache.bindingReads()).as("version 1 was evicted by version 1025").isEqualTo(1026);
        // An absent version is not remembered: it may be created yet.
        assertThat(cache.binding(TENANT, "many", 1026)).isEmpty();
        assertThat(cache.binding(TENANT, "many", 1026)).isEmpty();
        assertThat(cache.bindingReads()).isEqualTo(1028);
    }

    @Test
    void aLeaseTakeoverIsPushedAndASameHostRenewalIsNot() {
        ControlCache cache = f.cache(NO_POLL);
        assertThat(leader(cache, 1)).isEmpty();
        f.topology.acquireLeadership("h1", 1, 1_000);
        await(WAIT, "h1 to lead partition 1 in the cache", () -> leader(cache, 1).equals(Optional.of("h1")));

        long beforeTakeover = cache.notifications();
        await(WAIT, "h2 to take over", () -> f.topology.acquireLeadership("h2", 1, 30_000).size() == 2);
        await(WAIT, "h2 to lead partition 1 in the cache", () -> leader(cache, 1).equals(Optional.of("h2")));
        assertThat(cache.notifications()).isGreaterThan(beforeTakeover);

        // Notifications arrive in commit order: once the sentinel is in, a renewal's would have been too.
        long beforeRenewals = cache.notifications();
        for (int i = 0; i < 3; i++) {
            f.topology.acquireLeadership("h2", 1, 30_000);
        }
        String sentinel = f.notifySentinel();
        await(WAIT, "the sentinel", () -> sentinel.equals(cache.lastNotification()));
        assertThat(cache.notifications()).as("only the sentinel").isEqualTo(beforeRenewals + 1);
        assertThat(cache.polls()).isZero();
    }

    @Test
    void aLostNotificationConvergesWithinOnePollInterval() {
        long pollMs = 300;
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        ControlCache cache = f.deafCache(pollMs);
        assertThat(version(cache, "revenue")).isEqualTo(1);
        assertThat(cache.topology().partition(3)).isEmpty();

        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_2);
        f.control.putPartition(new Partition(3, TENANT, "orders", 0, 10, 2, 1));
        long committed = System.nanoTime();
        long polls = cache.polls();
        await(WAIT, "the poll to bring version 2 and partition 3",
                () -> version(cache, "revenue") == 2 && cache.topology().partition(3).isPresent());
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - committed);

        assertThat(cache.notifications()).as("this cache hears nothing").isZero();
        assertThat(cache.polls()).isGreaterThan(polls);
        assertThat(cache.topologyVersion()).isEqualTo(f.topologyVersion());
        // One interval, plus the time to read and a generous allowance for a loaded machine.
        assertThat(tookMs).isLessThan(pollMs + 2_000);
    }

    @Test
    void theListenerReconnectsAfterItsBackendIsTerminatedAndInvalidatesEverything() throws Exception {
        AtomicInteger opened = new AtomicInteger();
        CountDownLatch mayReopen = new CountDownLatch(1);
        Callable<Connection> listen = () -> {
            if (opened.incrementAndGet() > 1 && !mayReopen.await(20, TimeUnit.SECONDS)) {
                throw new SQLException("not yet (test)");
            }
            return java.sql.DriverManager.getConnection(f.url + "&ApplicationName=control-cache-listener");
        };
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        ControlCache cache = f.cache(NO_POLL, listen, ControlCache.DEFAULT_LOAD_WAIT_MS);
        assertThat(version(cache, "revenue")).isEqualTo(1);

        assertThat(f.queryLong("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = 'control-cache-listener'""")).isEqualTo(1);
        await(WAIT, "the listener to notice and try to reconnect", () -> opened.get() == 2);

        // Nobody listens now: this notification is lost, and the cache does not know.
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_2);
        f.control.putPartition(new Partition(3, TENANT, "orders", 0, 10, 2, 1));
        assertThat(version(cache, "revenue")).isEqualTo(1);
        assertThat(cache.topology().partition(3)).isEmpty();

        mayReopen.countDown();
        await(WAIT, "the reconnect to invalidate the cache",
                () -> version(cache, "revenue") == 2 && cache.topology().partition(3).isPresent());
        assertThat(cache.reconnects()).isEqualTo(1);
        assertThat(cache.polls()).isZero();

        // And push works again.
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_3);
        await(WAIT, "version 3 pushed", () -> version(cache, "revenue") == 3);
        assertThat(f.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'control-cache-listener'"))
                .isEqualTo(1);
    }

    @Test
    void aPartitionChangeBumpsTheCachedTopologyVersion() {
        ControlCache cache = f.cache(NO_POLL);
        long v = cache.topologyVersion();
        assertThat(v).isEqualTo(f.topologyVersion()).isPositive();
        f.control.putPartition(new Partition(3, TENANT, "orders", 0, 10, 2, 1));
        await(WAIT, "the new version in the cache", () -> cache.topologyVersion() == v + 1);
        ControlCache.TopologyAt at = cache.topologyAt();
        assertThat(at.version()).isEqualTo(v + 1);
        assertThat(at.topology().partition(3)).isPresent();
        assertThat(cache.polls()).isZero();
    }

    @Test
    void topologyReadAtAdvancesByTheElapsedLocalTimeWithoutReading() {
        ControlCache cache = f.cache(NO_POLL);
        long reads = cache.reads();
        long before1 = System.nanoTime();
        Topology t1 = cache.topology();
        long after1 = System.nanoTime();
        await(WAIT, "50 ms to pass", () -> System.nanoTime() - after1 > TimeUnit.MILLISECONDS.toNanos(50));
        long before2 = System.nanoTime();
        Topology t2 = cache.topology();
        long after2 = System.nanoTime();

        long advanced = Duration.between(t1.readAt(), t2.readAt()).toNanos();
        assertThat(advanced).isBetween(before2 - after1, after2 - before1);
        assertThat(t2.partitions()).isEqualTo(t1.partitions());
        assertThat(cache.reads()).isEqualTo(reads);
    }

    @Test
    void anExpiredLeaseLosesItsLeaderAsOfNowWithoutAReread() {
        ControlCache cache = f.cache(NO_POLL);
        f.topology.acquireLeadership("h1", 1, 1_500);
        await(WAIT, "h1 to lead partition 2 in the cache", () -> leader(cache, 2).equals(Optional.of("h1")));
        long reads = cache.topologyReads();
        await(WAIT, "the lease to end in the cached topology", () -> leader(cache, 2).isEmpty());
        assertThat(cache.topologyReads()).isEqualTo(reads);
    }

    @Test
    void concurrentMissesShareOneRead() throws Exception {
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        FaultyDataSource faulty = new FaultyDataSource(f.pool);
        ControlCache cache = f.track(ControlCache.start(new ControlStore(faulty.dataSource()), f::connect, NO_POLL, "gated"));

        faulty.hold("FROM bindings");
        List<AtomicReference<Optional<Binding>>> results = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            AtomicReference<Optional<Binding>> r = new AtomicReference<>();
            results.add(r);
            threads.add(Thread.ofPlatform().unstarted(() -> r.set(cache.currentBinding(TENANT, "revenue"))));
        }
        threads.getFirst().start();
        faulty.awaitHeld();
        threads.subList(1, threads.size()).forEach(Thread::start);
        await(WAIT, "the others to wait for the first read", () -> threads.subList(1, threads.size()).stream()
                .allMatch(t -> t.getState() == Thread.State.TIMED_WAITING));
        faulty.release();
        for (Thread t : threads) {
            t.join(WAIT.toMillis());
        }
        assertThat(results).allSatisfy(r -> assertThat(r.get()).map(Binding::version).contains(1));
        assertThat(cache.bindingReads()).isEqualTo(1);
    }

    @Test
    void everyCallerWaitsForAReadAtMostTheBoundAndAHungReadIsAbandoned() throws Exception {
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        FaultyDataSource faulty = new FaultyDataSource(f.pool);
        ControlCache cache = f.track(ControlCache.start(new ControlStore(faulty.dataSource()), f::connect, NO_POLL,
                "hung", 300));
        faulty.hold("FROM bindings"); // the read hangs, as on a connection that stopped answering
        long start = System.nanoTime();
        assertThatThrownBy(() -> cache.currentBinding(TENANT, "revenue"))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE));
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));
        faulty.awaitHeld();
        assertThat(cache.bindingReads()).isEqualTo(1);

        // That read is older than the bound now: the next caller does not join it but reads again.
        assertThatThrownBy(() -> cache.currentBinding(TENANT, "revenue"))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE));
        assertThat(cache.bindingReads()).isEqualTo(2);

        faulty.release();
        await(WAIT, "the binding once the database answers", () -> version(cache, "revenue") == 1);
    }

    @Test
    void aFailedPollKeepsWhatIsCachedLogsOnceAndRecovers() {
        ch.qos.logback.classic.Logger logger = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(ControlCache.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        try {
            f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
            FaultyDataSource faulty = new FaultyDataSource(f.pool);
            ControlCache cache = f.track(ControlCache.start(new ControlStore(faulty.dataSource()), f::connect, 100, "flaky"));
            Topology cached = cache.topology();

            faulty.failing = "topology_version"; // the poll's first read
            long failures = cache.pollFailures();
            await(WAIT, "a failed poll", () -> cache.pollFailures() > failures);
            assertThat(version(cache, "revenue")).isEqualTo(1);
            long reads = cache.bindingReads();
            await(WAIT, "two more failed polls", () -> cache.pollFailures() > failures + 2);
            assertThat(version(cache, "revenue")).isEqualTo(1);
            assertThat(cache.bindingReads()).as("failed polls keep the cached bindings").isEqualTo(reads);
            assertThat(cache.topology().partitions()).isEqualTo(cached.partitions());
            assertThat(cache.topology().readAt()).isAfter(cached.readAt());
            assertThatThrownBy(cache::refreshTopology).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE));

            faulty.down = true; // now nothing answers: misses fail, hits are still served
            assertThatThrownBy(() -> cache.currentBinding(TENANT, "other")).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE));
            assertThat(version(cache, "revenue")).isEqualTo(1);

            faulty.down = false;
            faulty.failing = null;
            long polls = cache.polls();
            await(WAIT, "a poll to succeed again", () -> cache.polls() > polls);
            assertThat(logged.list.stream().filter(e -> e.getLevel() == Level.WARN
                    && e.getFormattedMessage().contains("topology poll failed"))).as("one warning per outage").hasSize(1);
            assertThat(logged.list.stream().filter(e -> e.getFormattedMessage().contains("answers the topology poll again")))
                    .hasSize(1);
        } finally {
            logger.detachAppender(logged);
        }
    }

    @Test
    void itStartsWhileTheControlDatabaseIsDownAndCatchesUp() {
        FaultyDataSource faulty = new FaultyDataSource(f.pool);
        faulty.down = true;
        AtomicInteger listenAttempts = new AtomicInteger();
        Callable<Connection> listen = () -> {
            listenAttempts.incrementAndGet();
            if (faulty.down) {
                throw new SQLException("the control database is down (test)");
            }
            return f.connect();
        };
        ControlCache cache = f.track(ControlCache.start(new ControlStore(faulty.dataSource()), listen, NO_POLL, "late",
                ControlCache.DEFAULT_LOAD_WAIT_MS));
        assertThatThrownBy(cache::topology).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE));
        await(WAIT, "the listener to retry", () -> listenAttempts.get() >= 3);

        faulty.down = false;
        await(WAIT, "the listener to connect", () -> cache.reconnects() == 1);
        assertThat(cache.topology().partitions()).hasSize(2);
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        assertThat(version(cache, "revenue")).isEqualTo(1);
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_2);
        await(WAIT, "version 2 pushed", () -> version(cache, "revenue") == 2);
    }

    @Test
    void invalidateBindingAndRefreshTopologyReadAgain() {
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        ControlCache cache = f.deafCache(NO_POLL);
        assertThat(version(cache, "revenue")).isEqualTo(1);
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_2);
        assertThat(version(cache, "revenue")).as("stale: nothing told the cache").isEqualTo(1);
        cache.invalidateBinding(TENANT, "revenue");
        assertThat(version(cache, "revenue")).isEqualTo(2);

        f.control.putPartition(new Partition(3, TENANT, "orders", 0, 10, 2, 1));
        assertThat(cache.topology().partition(3)).isEmpty();
        assertThat(cache.refreshTopology().partition(3)).isPresent();
        assertThat(cache.topology().partition(3)).isPresent();
        assertThat(cache.topologyVersion()).isEqualTo(f.topologyVersion());
    }

    @Test
    void closeStopsItsThreadsAndItsListenConnection() throws Exception {
        ControlCache cache = ControlCache.start(f.control,
                () -> java.sql.DriverManager.getConnection(f.url + "&ApplicationName=closing-listener"), 50, "closing");
        await(WAIT, "a poll", () -> cache.polls() > 0);
        cache.close();
        assertThat(Thread.getAllStackTraces().keySet()).noneMatch(t -> t.getName().endsWith("-closing") && t.isAlive());
        await(WAIT, "the listen connection to go", () -> f.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'closing-listener'") == 0);
    }
}
