package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Optional;

/**
 * Users, tenants and grants as a node serves them. Lookups answer from memory (they run on I/O threads, at every
 * login and every call) and see changes made anywhere in the cluster within moments; {@link #execute} writes.
 */
public interface AccessService {
    /**
     * The account of a user name.
     *
     * @throws ThresherException {@link ErrorCode#STORE_UNAVAILABLE} while the node has not read users yet
     */
    Optional<Account> account(String user);

    /** The principal of a user name now (its current grants), if it exists. */
    default Optional<Principal> principal(String user) {
        return account(user).map(Account::principal);
    }

    /**
     * The principal an HTTP bearer token stands for, if it is one.
     *
     * @throws ThresherException {@link ErrorCode#STORE_UNAVAILABLE} while the node has not read users yet
     */
    Optional<Principal> byToken(String token);

    /**
     * Runs a user or grant statement as {@code by} (blocking: it writes the control database); the node that ran it
     * sees the change at once.
     *
     * @return the command tag ({@code CREATE ROLE}, {@code GRANT}, ...)
     * @throws ThresherException {@link ErrorCode#PERMISSION_DENIED} unless {@code by} may, and the statement's
     *     own errors
     */
    String execute(Principal by, AccessStatement statement);
}
