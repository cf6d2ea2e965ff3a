package dev.thresher.cellhost;

import dev.thresher.bindings.Partial;
import java.util.List;

/**
 * What one successful {@code run} produced.
 *
 * @param partials the emitted partials in emit order, values bit-exact and not yet judged
 * @param emitCount the {@code emit} calls the guest made (equal to {@code partials.size()} on success)
 * @param guestNanos wall time spent inside the guest's {@code run} export
 */
public record RunOutcome(List<Partial> partials, int emitCount, long guestNanos) {
    public RunOutcome {
        partials = List.copyOf(partials);
    }
}
