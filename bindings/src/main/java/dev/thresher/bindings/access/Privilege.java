package dev.thresher.bindings.access;

import java.util.Locale;

/** What a grant allows, within the user's tenant. */
public enum Privilege {
    /** Call a binding (one, or every binding of the tenant): {@code CALL BINDING}, the HTTP call and handler routes. */
    CALL,
    /** Deploy and drop bindings, create, alter and drop tables, load and insert rows. */
    DEPLOY,
    /** Everything in the tenant: calls, deployments, users and grants, the {@code /admin} HTTP routes. */
    ADMIN;

    /** The word in statements and listings. */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }
}
