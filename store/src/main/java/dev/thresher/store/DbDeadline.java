package dev.thresher.store;

import dev.thresher.limits.Deadline;
import java.util.Optional;

/**
 * The deadline every database wait of the current thread is bounded by, while a call's work runs on it:
 * taking a connection from a pool, the socket and each statement ({@link Pools#bounded}). A call sets it
 * where its work enters a thread ({@code try (var s = DbDeadline.enter(call.deadline)) { ... }}); code
 * outside any scope (a node's upkeep) waits as its pool's own timeouts allow.
 */
public final class DbDeadline implements AutoCloseable {
    private static final ThreadLocal<Deadline> CURRENT = new ThreadLocal<>();

    private final Deadline previous;

    private DbDeadline(Deadline previous) {
        this.previous = previous;
    }

    /** Bounds this thread's database waits by {@code deadline} until the returned scope is closed. */
    public static DbDeadline enter(Deadline deadline) {
        DbDeadline scope = new DbDeadline(CURRENT.get());
        CURRENT.set(deadline);
        return scope;
    }

    /** The deadline of the innermost scope on this thread, if any. */
    public static Optional<Deadline> current() {
        return Optional.ofNullable(CURRENT.get());
    }

    /** Whether this thread is in a scope whose deadline has passed. */
    public static boolean passed() {
        Deadline d = CURRENT.get();
        return d != null && d.passed();
    }

    @Override
    public void close() {
        if (previous == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(previous);
        }
    }
}
