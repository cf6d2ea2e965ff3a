package dev.thresher.bindings;

/**
 * Reads the coordination journal for operators: the {@link JournalView}s of one tenant's calls, in the control
 * database. Blocking: front doors call it off their event loops. Every query is bounded: at most
 * {@value JournalSelect#MAX_ROWS} rows, and a statement timeout.
 */
@FunctionalInterface
public interface JournalService {
    /**
     * The rows of {@code select.view()} that {@code scope} sees (its tenant's calls of the bindings it sees) and
     * that pass the filter, in the query's order.
     *
     * @throws dev.thresher.errors.ThresherException {@code STORE_UNAVAILABLE} when the control database cannot
     *     answer, {@code DEADLINE_EXCEEDED} when it did not within the statement timeout
     * @throws IllegalArgumentException when {@code select} still holds parameters
     */
    JournalRows select(JournalScope scope, JournalSelect select);
}
