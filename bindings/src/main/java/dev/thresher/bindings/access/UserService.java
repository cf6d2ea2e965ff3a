package dev.thresher.bindings.access;

import java.util.List;
import java.util.Optional;

/**
 * Users, their grants and their bearer tokens, as the admin routes ({@code /admin/users}, {@code /admin/grants}) and
 * {@code thresher user}, {@code grant} and {@code revoke} change them. A {@code tenant} of {@link Optional#empty()}
 * finds a user in whichever tenant holds the name (user names are the cluster's); a present one only in that tenant.
 * A user who does not exist is {@code INVALID_ARGUMENTS} ({@code no user "name"}).
 */
public interface UserService {
    /** One user as an operator lists it. */
    record User(String name, String tenant, List<String> grants, int tokens) {
        public User {
            grants = List.copyOf(grants);
        }
    }

    /**
     * Adds a user to {@code tenant} with its SCRAM verifier (never its password), and {@code admin} of it if asked.
     *
     * @return the tenant it was added to
     */
    String add(String tenant, String name, Scram.Verifier verifier, boolean admin, String by);

    /** Removes a user with its grants and tokens. */
    void remove(Optional<String> tenant, String name);

    /** The users of {@code tenant}, or of every tenant, by name. */
    List<User> list(Optional<String> tenant);

    void setPassword(Optional<String> tenant, String name, Scram.Verifier verifier);

    /** Keeps a bearer token for the user's HTTP requests (as its digest). */
    void addToken(Optional<String> tenant, String name, String token, String by);

    /** Revokes every bearer token of the user; how many there were. */
    int revokeTokens(Optional<String> tenant, String name);

    void grant(Optional<String> tenant, String user, Grant grant, String by);

    void revoke(Optional<String> tenant, String user, Grant grant);
}
