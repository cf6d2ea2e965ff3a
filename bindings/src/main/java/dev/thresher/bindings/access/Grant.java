package dev.thresher.bindings.access;

import java.util.Objects;
import java.util.Optional;

/**
 * One grant to a user.
 *
 * @param privilege what it allows
 * @param binding for {@link Privilege#CALL}, the one binding it names, or empty for every binding of the tenant;
 *     always empty for the others
 */
public record Grant(Privilege privilege, Optional<String> binding) {
    public Grant {
        Objects.requireNonNull(privilege, "privilege");
        Objects.requireNonNull(binding, "binding");
        if (binding.isPresent() && privilege != Privilege.CALL) {
            throw new IllegalArgumentException("only a call grant names a binding");
        }
    }

    public static Grant call(String binding) {
        return new Grant(Privilege.CALL, Optional.of(binding));
    }

    public static Grant callAll() {
        return new Grant(Privilege.CALL, Optional.empty());
    }

    public static Grant of(Privilege privilege) {
        return new Grant(privilege, Optional.empty());
    }

    /** As a GRANT statement spells it: {@code call on binding x}, {@code call on all bindings}, {@code deploy}, {@code admin}. */
    public String text() {
        if (privilege != Privilege.CALL) {
            return privilege.word();
        }
        return binding.map(b -> "call on binding " + b).orElse("call on all bindings");
    }
}
