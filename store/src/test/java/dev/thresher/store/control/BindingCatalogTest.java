package dev.thresher.store.control;

import static dev.thresher.store.control.ControlFixture.DIGEST;
import static dev.thresher.store.control.ControlFixture.SELECTOR_1;
import static dev.thresher.store.control.ControlFixture.SELECTOR_2;
import static dev.thresher.store.control.ControlFixture.TENANT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.BindingService.Deployed;
import dev.thresher.bindings.BindingService.Version;
import dev.thresher.bindings.Budgets;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link BindingCatalog} on a real PostgreSQL: the one place binding versions are numbered. Each test uses binding names
 * of its own. Each names, in a one-line comment, the guard whose removal makes it fail.
 */
class BindingCatalogTest {
    private static final String MANIFEST_1 = "sha256:" + "01".repeat(32);
    private static final String MANIFEST_2 = "sha256:" + "02".repeat(32);
    private static final Budgets BUDGETS = new Budgets(1_000, 65_536 * 4, 0, 0, 10, 0);
    private static final AtomicInteger names = new AtomicInteger();

    private static ControlFixture fixture;
    private static BindingCatalog catalog;

    @BeforeAll
    static void start() {
        fixture = ControlFixture.create();
        catalog = fixture.control.bindings();
    }

    @AfterAll
    static void stop() throws Exception {
        fixture.close();
    }

    private static String fresh() {
        return "b" + names.incrementAndGet();
    }

    private static BindingCatalog.Pins call(String manifest, String selector, Budgets budgets) {
        return new BindingCatalog.Pins(DIGEST, manifest, 2, selector, budgets);
    }

    private static BindingCatalog.Pins handler(String manifest) {
        return new BindingCatalog.Pins(DIGEST, manifest, null, null, Budgets.NONE);
    }

    /** A manifest text per stand-in digest: MANIFEST_1 and MANIFEST_2 are two different manifests of the binding. */
    private static String manifestText(String name, String standIn) {
        return standIn == null ? null : "{\"binding\":\"" + name + "\", \"description\": \"" + standIn + "\"}";
    }

    private static Deployed deploy(String name, BindingCatalog.Pins pins) {
        return catalog.deploy(TENANT, name, pins, null, manifestText(name, pins.manifestDigest()), "test");
    }

    @Test
    void aManifestIsTheSameWhateverItsSpacingAndKeyOrderAndItsDigestIsOfItsCanonicalForm() throws Exception {
        // kills: BindingCatalog.manifestDigest's canonical form (a digest of the bytes as sent makes a new version)
        String name = fresh();
        Deployed first = catalog.deploy(TENANT, name, call(null, SELECTOR_1, BUDGETS), null,
                "{\"binding\": \"" + name + "\",\n  \"description\": \"x\"}", "cli");
        Deployed again = catalog.deploy(TENANT, name, call(null, SELECTOR_1, BUDGETS), null,
                "{\"description\":\"x\",\"binding\":\"" + name + "\"}", "http");
        assertThat(again).extracting(Deployed::version, Deployed::unchanged).containsExactly(1, true);
        assertThat(again.manifestDigest()).isEqualTo(first.manifestDigest());
        String canonical = "{\"binding\": \"" + name + "\", \"description\": \"x\"}"; // jsonb's text
        assertThat(first.manifestDigest()).isEqualTo("sha256:" + java.util.HexFormat.of().formatHex(
                java.security.MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8))));
        // the manifest is kept as first sent
        assertThat(catalog.manifest(first.manifestDigest())).hasValue("{\"binding\": \"" + name + "\",\n  \"description\": \"x\"}");
        // a different value is a new version
        assertThat(catalog.deploy(TENANT, name, call(null, SELECTOR_1, BUDGETS), null,
                "{\"binding\":\"" + name + "\",\"description\":\"y\"}", "http").version()).isEqualTo(2);
    }

    @Test
    void aVersionWhoseDigestWasOfTheBytesAsSentIsTheSameAsItsManifestRedeployed() throws Exception {
        // kills: Pins.samePins' comparison of manifests as JSON values (versions stored before digests were canonical)
        String name = fresh();
        String legacy = "sha256:" + "0a".repeat(32);
        try (java.sql.Connection c = fixture.pool.getConnection(); java.sql.Statement s = c.createStatement()) {
            s.execute("INSERT INTO manifests (digest, manifest) VALUES ('" + legacy + "', '{ \"binding\" : \"" + name
                    + "\" }') ON CONFLICT DO NOTHING");
        }
        // a version pinning the legacy digest, written as the catalog wrote them then
        Deployed v1 = catalog.deploy(TENANT, name, call(legacy, SELECTOR_1, BUDGETS), null, null, "old");
        assertThat(v1.version()).isEqualTo(1);
        try (java.sql.Connection c = fixture.pool.getConnection(); java.sql.Statement s = c.createStatement()) {
            s.execute("UPDATE bindings SET manifest_digest = '" + legacy + "' WHERE tenant = '" + TENANT + "' AND name = '"
                    + name + "'");
        }
        assertThat(catalog.deploy(TENANT, name, call(null, SELECTOR_1, BUDGETS), null,
                "{\"binding\":\"" + name + "\"}", "new")).extracting(Deployed::version, Deployed::unchanged)
                .containsExactly(1, true);
    }

    @Test
    void aManifestPostgreSqlCannotHoldIsRefusedAsConfiguration() {
        String name = fresh();
        assertThatThrownBy(() -> catalog.deploy(TENANT, name, call(null, SELECTOR_1, BUDGETS), null,
                "{\"binding\":\"" + name + "\",\"description\":\"a\\u0000b\"}", "test"))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION));
        assertThat(catalog.current(TENANT, name)).isEmpty();
    }

    @Test
    void versionsAreNumberedFromOneAndTheSamePinsChangeNothing() {
        // kills: BindingCatalog.deploy's samePins branch (the same deploy would make version 2)
        String name = fresh();
        assertThat(deploy(name, call(MANIFEST_1, SELECTOR_1, BUDGETS))).extracting(Deployed::version, Deployed::unchanged)
                .containsExactly(1, false);
        assertThat(deploy(name, call(MANIFEST_1, SELECTOR_1, BUDGETS))).extracting(Deployed::version, Deployed::unchanged)
                .containsExactly(1, true);
        // kills: Pins.samePins' manifest comparison (another manifest of the same module and selector is a new version)
        assertThat(deploy(name, call(MANIFEST_2, SELECTOR_1, BUDGETS)).version()).isEqualTo(2);
        assertThat(deploy(name, call(MANIFEST_2, SELECTOR_2, BUDGETS)).version()).isEqualTo(3);
        assertThat(catalog.history(TENANT, name)).extracting(Version::version).containsExactly(1, 2, 3);
        assertThat(catalog.currentCall(TENANT, name).orElseThrow().version()).isEqualTo(3);
        assertThat(catalog.currentCall(TENANT, name).orElseThrow().budgets()).isEqualTo(BUDGETS);
    }

    @Test
    void theControlStoresOwnWriterNumbersAsADeployDoes() {
        // kills: ControlStore.putBinding's same-pins check through the catalog (asked again, it would make version 4)
        String name = fresh();
        deploy(name, call(MANIFEST_1, SELECTOR_1, BUDGETS));
        deploy(name, call(MANIFEST_1, SELECTOR_2, BUDGETS));
        assertThat(fixture.control.putBinding(TENANT, name, DIGEST, SELECTOR_1).version()).isEqualTo(3);
        assertThat(fixture.control.putBinding(TENANT, name, DIGEST, SELECTOR_1).version()).isEqualTo(3);
        assertThat(catalog.history(TENANT, name)).extracting(Version::deployedBy).containsExactly("test", "test", "catalog");
    }

    @Test
    void aBindingKeepsItsKindWhicheverWriterAsks() {
        // kills: BindingCatalog.deploy's kind check (a call over a handler's name, numbered after the handler's versions)
        String handlerName = fresh();
        deploy(handlerName, handler("sha256:" + "%064x".formatted(names.incrementAndGet())));
        assertThatThrownBy(() -> deploy(handlerName, call(MANIFEST_1, SELECTOR_1, Budgets.NONE)))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION);
                    assertThat(e.getMessage()).contains("is an HTTP handler; a distributed call needs a name of its own");
                });
        assertThatThrownBy(() -> fixture.control.putBinding(TENANT, handlerName, DIGEST, SELECTOR_1))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION));
        String callName = fresh();
        deploy(callName, call(MANIFEST_1, SELECTOR_1, Budgets.NONE));
        assertThatThrownBy(() -> deploy(callName, handler(MANIFEST_2)))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.getMessage()).contains("is a distributed call; an HTTP handler needs a name of its own"));
        assertThat(catalog.history(TENANT, handlerName)).hasSize(1);
        assertThat(catalog.history(TENANT, callName)).hasSize(1);
        assertThat(catalog.currentCall(TENANT, handlerName)).isEmpty();
        assertThat(catalog.current(TENANT, handlerName).orElseThrow()).satisfies(c -> {
            assertThat(c.handler()).isTrue();
            assertThat(c.manifest()).startsWith("{\"binding\":\"" + handlerName + "\", \"description\"");
        });
    }

    @Test
    void aRollbackPinsWhatTheOlderVersionPinnedBudgetsIncluded() {
        // kills: the rollback's budgets (a rollback to a version with budgets would run without them)
        String name = fresh();
        deploy(name, call(MANIFEST_1, SELECTOR_1, BUDGETS));
        deploy(name, call(MANIFEST_2, SELECTOR_2, Budgets.NONE));
        List<Integer> checked = new ArrayList<>();
        Deployed back = catalog.rollback(TENANT, name, 1, "operator", v -> checked.add(v.version()));
        assertThat(back.version()).isEqualTo(3);
        assertThat(checked).containsExactly(1);
        Version v3 = catalog.history(TENANT, name).get(2);
        assertThat(v3).extracting(Version::manifestDigest, Version::selector, Version::note, Version::deployedBy)
                .containsExactly(catalog.history(TENANT, name).get(0).manifestDigest(), SELECTOR_1, "rollback to version 1",
                        "operator");
        assertThat(catalog.currentCall(TENANT, name).orElseThrow().budgets()).isEqualTo(BUDGETS);
    }

    @Test
    void aRollbackRefusedWritesNothing() {
        String name = fresh();
        deploy(name, call(MANIFEST_1, SELECTOR_1, Budgets.NONE));
        deploy(name, call(MANIFEST_1, SELECTOR_2, Budgets.NONE));
        // kills: the current-version check of BindingCatalog.rollback (a rollback to it would write version 3)
        assertThat(catalog.rollback(TENANT, name, 2, "operator", v -> {
            throw new AssertionError("nothing to check: nothing changes");
        })).extracting(Deployed::version, Deployed::unchanged).containsExactly(2, true);
        assertThatThrownBy(() -> catalog.rollback(TENANT, name, 7, "operator", v -> { }))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_BINDING);
                    assertThat(e.getMessage()).isEqualTo("binding " + name + " has no version 7; its versions are 1..2");
                });
        assertThatThrownBy(() -> catalog.rollback(TENANT, fresh(), 1, "operator", v -> { }))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_BINDING));
        // kills: the check's place inside the transaction (a refused check after the insert would leave version 3)
        assertThatThrownBy(() -> catalog.rollback(TENANT, name, 1, "operator", v -> {
            throw new ThresherException(ErrorCode.INVALID_SELECTOR, "no such table");
        })).isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR));
        assertThat(catalog.history(TENANT, name)).hasSize(2);
    }

    @Test
    void aRollbackToWhatTheCurrentVersionPinsAlreadyChangesNothing() {
        String name = fresh();
        deploy(name, call(MANIFEST_1, SELECTOR_1, Budgets.NONE));
        deploy(name, call(MANIFEST_1, SELECTOR_2, Budgets.NONE));
        assertThat(catalog.rollback(TENANT, name, 1, "operator", v -> { }))
                .extracting(Deployed::version, Deployed::unchanged).containsExactly(3, false);
        // version 3 pins what version 1 pinned: rolling back to 1 again, or to 3, writes nothing
        assertThat(catalog.rollback(TENANT, name, 1, "operator", v -> { }))
                .extracting(Deployed::version, Deployed::unchanged).containsExactly(3, true);
        assertThat(catalog.rollback(TENANT, name, 3, "operator", v -> { }))
                .extracting(Deployed::version, Deployed::unchanged).containsExactly(3, true);
        assertThat(catalog.history(TENANT, name)).hasSize(3);
    }

    @Test
    void aDeployWaitsForAnotherWriterOfTheSameBinding() throws Exception {
        // kills: ControlSql.lock in BindingCatalog.deploy (without it the deploy would not wait for the lock held here)
        String name = fresh();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Connection holder = fixture.connect()) {
            holder.setAutoCommit(false);
            try (PreparedStatement lock = holder.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
                lock.setString(1, TENANT + "/" + name);
                lock.execute();
            }
            Future<Deployed> deployed = pool.submit(() -> deploy(name, call(MANIFEST_1, SELECTOR_1, Budgets.NONE)));
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!waitingForAdvisoryLock(holder)) {
                assertThat(deployed.isDone()).as("the deploy finished while another writer held its binding's lock").isFalse();
                assertThat(System.nanoTime()).as("a deploy waiting for the binding's lock within 10 s").isLessThan(until);
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
            assertThat(deployed.isDone()).isFalse();
            holder.commit();
            assertThat(deployed.get(10, TimeUnit.SECONDS).version()).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    private static boolean waitingForAdvisoryLock(Connection c) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1) > 0;
        }
    }

    @Test
    void concurrentDeploysOfOneBindingEachGetAVersionOfTheirOwn() throws Exception {
        String name = fresh();
        List<String> selectors = List.of("SELECT region FROM orders", "SELECT amount FROM orders",
                "SELECT region, amount FROM orders", "SELECT amount, region FROM orders", "SELECT id FROM orders",
                "SELECT id, region FROM orders");
        ExecutorService pool = Executors.newFixedThreadPool(selectors.size());
        try {
            List<Future<Deployed>> done = new ArrayList<>();
            for (String s : selectors) {
                done.add(pool.submit(() -> deploy(name, call(MANIFEST_1, s, Budgets.NONE))));
            }
            List<Integer> versions = new ArrayList<>();
            for (Future<Deployed> f : done) {
                versions.add(f.get().version());
            }
            assertThat(versions).containsExactlyInAnyOrder(1, 2, 3, 4, 5, 6);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theReadersOfATableAreTheCallsWhoseCurrentVersionSelectsFromIt() {
        // kills: readersOf's current-version filter (a binding that moved to another table still held the old one)
        String reader = fresh();
        String moved = fresh();
        deploy(reader, call(MANIFEST_1, "SELECT region FROM orders_" + reader, Budgets.NONE));
        deploy(moved, call(MANIFEST_1, "SELECT region FROM orders_" + reader, Budgets.NONE));
        deploy(moved, call(MANIFEST_1, "SELECT region FROM lines_" + reader, Budgets.NONE));
        assertThat(catalog.readersOf(TENANT, "orders_" + reader)).containsExactly(reader);
        assertThat(catalog.readersOf(TENANT, "lines_" + reader)).containsExactly(moved);
    }
}
