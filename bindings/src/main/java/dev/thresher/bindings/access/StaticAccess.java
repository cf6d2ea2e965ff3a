package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Objects;
import java.util.Optional;

/**
 * Access without a control database: one configured user, admin of one tenant (a front door run on its own, as
 * the protocol tests do), or — {@link #anyUser} — every name admitted as such a user, for trust authentication on
 * loopback. It changes nothing: {@link #execute} is refused.
 */
public final class StaticAccess implements AccessService {
    private final String tenant;
    private final Optional<Account> account;
    private final boolean anyUser;

    private StaticAccess(String tenant, Optional<Account> account, boolean anyUser) {
        this.tenant = Objects.requireNonNull(tenant, "tenant");
        this.account = account;
        this.anyUser = anyUser;
    }

    /** One user with this password, admin of {@code tenant}. */
    public static StaticAccess of(String user, String password, String tenant) {
        return new StaticAccess(tenant, Optional.of(new Account(Principal.admin(user, tenant), Scram.verifier(password))),
                false);
    }

    /** Every user name, admin of {@code tenant}, with no password that matches: for trust authentication only. */
    public static StaticAccess anyUser(String tenant) {
        return new StaticAccess(tenant, Optional.empty(), true);
    }

    @Override
    public Optional<Account> account(String user) {
        if (anyUser) {
            return Optional.of(new Account(Principal.admin(user, tenant), ScramExchange.mockVerifier(user, new byte[32])));
        }
        return account.filter(a -> a.principal().user().equals(user));
    }

    @Override
    public Optional<Principal> byToken(String token) {
        return Optional.empty();
    }

    @Override
    public String execute(Principal by, AccessStatement statement) {
        throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                "users and grants: this server keeps no users (it runs without a control database)");
    }
}
