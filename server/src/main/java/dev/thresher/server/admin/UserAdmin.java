package dev.thresher.server.admin;

import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Identifiers;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.bindings.access.Scram;
import dev.thresher.bindings.access.UserService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.AccessStore;
import java.util.List;
import java.util.Optional;

/**
 * {@link UserService} over the control database's users ({@link AccessStore}, their one writer): what a node's
 * {@code /admin/users} and {@code /admin/grants} routes change, and what {@code thresher user} changes directly before
 * any node runs. Every node reads the change within moments ({@code NOTIFY … 'access'}).
 */
public final class UserAdmin implements UserService {
    private final AccessStore users;

    public UserAdmin(AccessStore users) {
        this.users = users;
    }

    @Override
    public String add(String tenant, String name, Scram.Verifier verifier, boolean admin, String by) {
        users.createUser(tenant, Identifiers.userName(name), verifier, by);
        if (admin) {
            users.grant(Optional.of(tenant), name, Grant.of(Privilege.ADMIN), by);
        }
        return tenant;
    }

    @Override
    public void remove(Optional<String> tenant, String name) {
        found(users.dropUser(tenant, name), name);
    }

    @Override
    public List<User> list(Optional<String> tenant) {
        return users.list(tenant).stream().map(r -> new User(r.name(), r.tenant(), r.grants(), r.tokens())).toList();
    }

    @Override
    public void setPassword(Optional<String> tenant, String name, Scram.Verifier verifier) {
        found(users.setPassword(tenant, name, verifier), name);
    }

    @Override
    public void addToken(Optional<String> tenant, String name, String token, String by) {
        found(users.addToken(tenant, name, token, by), name);
    }

    @Override
    public int revokeTokens(Optional<String> tenant, String name) {
        return users.revokeTokens(tenant, name);
    }

    @Override
    public void grant(Optional<String> tenant, String user, Grant grant, String by) {
        found(users.grant(tenant, user, grant, by), user);
    }

    @Override
    public void revoke(Optional<String> tenant, String user, Grant grant) {
        found(users.revoke(tenant, user, grant), user);
    }

    private static void found(boolean found, String name) {
        if (!found) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "no user " + Identifiers.quoted(name));
        }
    }
}
