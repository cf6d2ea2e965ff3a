package dev.thresher.bindings.access;

import java.util.Objects;

/**
 * A user who may log in: who it is and how its password is checked.
 *
 * @param principal name, tenant and grants
 * @param verifier its password's SCRAM-SHA-256 verifier
 */
public record Account(Principal principal, Scram.Verifier verifier) {
    public Account {
        Objects.requireNonNull(principal, "principal");
        Objects.requireNonNull(verifier, "verifier");
    }
}
