package dev.thresher.server.node;

import dev.thresher.bindings.access.AccessService;
import dev.thresher.bindings.access.AccessStatement;
import dev.thresher.bindings.access.Account;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Identifiers;
import dev.thresher.bindings.access.Principal;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.bindings.access.Scram;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.AccessStore;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Users, tenants and grants as one node serves them: the whole of them in memory ({@link AccessStore.Snapshot}), read
 * at start and again whenever the catalog channel says they changed ({@code access}), the listen connection comes
 * back, or the topology poll runs — so a login or a call never reads the control database, and a grant or revoke
 * made on any node applies everywhere within moments (within one poll interval whatever happens to notifications).
 * A node that changed them itself reloads before it answers, so the session that granted sees its grant at once.
 */
final class NodeAccess implements AccessService, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(NodeAccess.class);

    private final AccessStore store;
    private final String nodeName;
    private final ExecutorService reloads;
    private final AtomicBoolean reloadQueued = new AtomicBoolean();
    private volatile AccessStore.Snapshot snapshot;
    private volatile boolean failing;

    NodeAccess(AccessStore store, String nodeName) {
        this.store = Objects.requireNonNull(store, "store");
        this.nodeName = nodeName;
        this.reloads = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name(nodeName + "-access").factory());
    }

    /** Reads the users now (the node's start); a failure is logged and left to the next reload. */
    void start() {
        try {
            reload();
        } catch (ThresherException e) {
            log.warn("{}: cannot read users yet ({}); logins wait for the control database", nodeName, e.getMessage());
        }
    }

    /**
     * Makes sure the configured first user exists, can log in with {@code password} (when given) and is admin of
     * {@code tenant}; a user created without a password gets a random one (it then logs in by trust only).
     */
    void ensureBootstrapUser(String user, Optional<String> password, String tenant) {
        Optional<Account> current = loaded().account(user);
        boolean fine = current.isPresent() && current.get().principal().tenant().equals(tenant)
                && current.get().principal().isAdmin()
                && password.map(p -> Scram.matches(current.get().verifier(), p)).orElse(true);
        if (fine) {
            return;
        }
        Scram.Verifier verifier;
        if (password.isPresent()) {
            verifier = Scram.verifier(password.get());
        } else if (current.isPresent()) {
            verifier = current.get().verifier();
        } else {
            verifier = Scram.verifier(randomPassword());
        }
        store.ensureAdmin(tenant, user, verifier, "node " + nodeName + " (pgwire.user)");
        log.info("{}: user {} is admin of tenant {} (pgwire.user)", nodeName, user, tenant);
        reload();
    }

    private static String randomPassword() {
        byte[] b = new byte[24];
        new java.security.SecureRandom().nextBytes(b);
        return java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /** Reloads soon on the node's access thread; many requests while one is queued are one reload. */
    void reloadSoon() {
        if (!reloadQueued.compareAndSet(false, true)) {
            return;
        }
        try {
            reloads.execute(() -> {
                reloadQueued.set(false);
                try {
                    reload();
                    if (failing) {
                        failing = false;
                        log.info("{}: users read again", nodeName);
                    }
                } catch (ThresherException e) {
                    if (!failing) {
                        failing = true;
                        log.warn("{}: cannot read users ({}); keeping those read before", nodeName, e.getMessage());
                    }
                }
            });
        } catch (RejectedExecutionException e) {
            reloadQueued.set(false); // closing
        }
    }

    private void reload() {
        snapshot = store.load();
    }

    private AccessStore.Snapshot loaded() {
        AccessStore.Snapshot s = snapshot;
        if (s == null) {
            reloadSoon();
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE,
                    "this node has not read its users from the control database yet");
        }
        return s;
    }

    @Override
    public Optional<Account> account(String user) {
        return loaded().account(user);
    }

    @Override
    public Optional<Principal> byToken(String token) {
        return loaded().byToken(token);
    }

    @Override
    public String execute(Principal by, AccessStatement statement) {
        Optional<String> tenant = Optional.of(by.tenant());
        String tag = switch (statement) {
            case AccessStatement.CreateUser c -> {
                by.checkAdmin("create users");
                store.createUser(by.tenant(), c.name(), c.password().verifier(), by.user());
                yield "CREATE ROLE";
            }
            case AccessStatement.AlterPassword a -> {
                if (!a.name().equals(by.user())) {
                    by.checkAdmin("change another user's password");
                }
                if (!store.setPassword(tenant, a.name(), a.password().verifier())) {
                    throw noSuchUser(a.name());
                }
                yield "ALTER ROLE";
            }
            case AccessStatement.DropUser d -> {
                by.checkAdmin("drop users");
                if (d.name().equals(by.user())) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the current user cannot be dropped");
                }
                if (!store.dropUser(tenant, d.name()) && !d.ifExists()) {
                    throw noSuchUser(d.name());
                }
                yield "DROP ROLE";
            }
            case AccessStatement.GrantTo g -> {
                by.checkAdmin("grant");
                if (!store.grant(tenant, g.user(), g.grant(), by.user())) {
                    throw noSuchUser(g.user());
                }
                yield "GRANT";
            }
            case AccessStatement.RevokeFrom r -> {
                by.checkAdmin("revoke");
                if (r.user().equals(by.user()) && r.grant().equals(Grant.of(Privilege.ADMIN))) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "an admin cannot revoke its own admin grant"
                            + " (another admin of the tenant can)");
                }
                if (!store.revoke(tenant, r.user(), r.grant())) {
                    throw noSuchUser(r.user());
                }
                yield "REVOKE";
            }
        };
        reload();
        return tag;
    }

    private static ThresherException noSuchUser(String name) {
        return new ThresherException(ErrorCode.INVALID_ARGUMENTS, "role " + Identifiers.quoted(name) + " does not exist");
    }

    @Override
    public void close() {
        reloads.shutdownNow();
        try {
            reloads.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
