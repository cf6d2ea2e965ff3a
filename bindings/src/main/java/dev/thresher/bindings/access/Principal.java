package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * An authenticated user as the node knows it now: name, tenant and grants. Everything it does happens in its tenant.
 *
 * @param user the user name
 * @param tenant the tenant it belongs to
 * @param grants what it may do there
 */
public record Principal(String user, String tenant, Set<Grant> grants) {
    public Principal {
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(tenant, "tenant");
        grants = Set.copyOf(grants);
    }

    /** A principal allowed everything in {@code tenant}: the node's configured operator, tests. */
    public static Principal admin(String user, String tenant) {
        return new Principal(user, tenant, Set.of(Grant.of(Privilege.ADMIN)));
    }

    public boolean isAdmin() {
        return grants.contains(Grant.of(Privilege.ADMIN));
    }

    public boolean mayDeploy() {
        return isAdmin() || grants.contains(Grant.of(Privilege.DEPLOY));
    }

    public boolean mayCall(String binding) {
        return isAdmin() || grants.contains(Grant.callAll()) || grants.contains(Grant.call(binding));
    }

    /**
     * Refuses a call this principal may not make, before the binding is looked up: the answer is the same whether
     * the binding exists or not.
     *
     * @throws ThresherException {@link ErrorCode#PERMISSION_DENIED}
     */
    public void checkCall(String binding) {
        if (!mayCall(binding)) {
            throw denied("call binding " + Identifiers.quoted(binding), "grant call on binding "
                    + Identifiers.quoted(binding) + " to " + Identifiers.quoted(user));
        }
    }

    /** @throws ThresherException {@link ErrorCode#PERMISSION_DENIED} unless this principal may deploy */
    public void checkDeploy(String what) {
        if (!mayDeploy()) {
            throw denied(what, "grant deploy to " + Identifiers.quoted(user));
        }
    }

    /** @throws ThresherException {@link ErrorCode#PERMISSION_DENIED} unless this principal is an admin */
    public void checkAdmin(String what) {
        if (!isAdmin()) {
            throw denied(what, "grant admin to " + Identifiers.quoted(user));
        }
    }

    private ThresherException denied(String what, String needs) {
        return new ThresherException(ErrorCode.PERMISSION_DENIED, "permission denied: user " + Identifiers.quoted(user)
                + " may not " + what + " (needs: " + needs + ")");
    }

    /** The grant of a call privilege on one binding, if this principal holds exactly that. */
    public Optional<Grant> callGrant(String binding) {
        return grants.contains(Grant.call(binding)) ? Optional.of(Grant.call(binding)) : Optional.empty();
    }
}
