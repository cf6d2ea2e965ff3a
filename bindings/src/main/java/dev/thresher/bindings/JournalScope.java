package dev.thresher.bindings;

import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Principal;
import dev.thresher.bindings.access.Privilege;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Whose calls a read of the journal sees ({@code SHOW CALL}, {@code SHOW CALLS}, {@code thresher.invocations},
 * {@code thresher.shard_runs}, {@code /admin/invocations}): one tenant's, and within it the calls of every binding or
 * only of some.
 *
 * <p>The rule, one for every front door: a call, its outcome and its result are visible to whoever may
 * call its binding <em>now</em> (an admin of the tenant, a holder of {@code call on all bindings}, or of {@code call on
 * binding NAME}) and to no one else, its own caller included once its grant is gone. A call of a binding one may not
 * see is answered exactly as a call that does not exist.
 *
 * @param tenant the tenant whose calls are read
 * @param bindings the bindings whose calls are visible, empty for every binding of the tenant
 */
public record JournalScope(String tenant, Optional<Set<String>> bindings) {
    public JournalScope {
        Objects.requireNonNull(tenant, "tenant");
        bindings = bindings.map(Set::copyOf);
    }

    /** Every call of {@code tenant}: its admins, the node's operator, internal readers. */
    public static JournalScope wholeTenant(String tenant) {
        return new JournalScope(tenant, Optional.empty());
    }

    /** Only the calls of {@code names} in {@code tenant}. */
    public static JournalScope bindings(String tenant, Set<String> names) {
        return new JournalScope(tenant, Optional.of(names));
    }

    /** What {@code principal} may see now: its tenant's calls of the bindings its current grants let it call. */
    public static JournalScope of(Principal principal) {
        if (principal.isAdmin() || principal.grants().contains(Grant.callAll())) {
            return wholeTenant(principal.tenant());
        }
        return bindings(principal.tenant(), principal.grants().stream()
                .filter(g -> g.privilege() == Privilege.CALL)
                .flatMap(g -> g.binding().stream())
                .collect(Collectors.toUnmodifiableSet()));
    }

    /** Whether a call of {@code binding} in this scope's tenant is visible. */
    public boolean sees(String binding) {
        return bindings.map(b -> b.contains(binding)).orElse(true);
    }
}
