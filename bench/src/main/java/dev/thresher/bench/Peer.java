package dev.thresher.bench;

import java.sql.SQLException;

/**
 * One system the bench measures. A peer opens one {@link Client} per client thread; a client holds that
 * thread's connections and prepared statements, so a measured call does no setup.
 */
interface Peer extends AutoCloseable {
    /** Short name: the {@code --peers} value and the report's row label. */
    String name();

    /** One line on what a call of this peer does. */
    String description();

    /** A client for {@code shape}; {@code index} spreads clients over nodes or members. */
    Client open(Shape shape, int index) throws Exception;

    @Override
    default void close() {
    }

    interface Client extends AutoCloseable {
        /** One call, answered in the peer's own form (not yet compared). */
        Object call() throws Exception;

        /** What {@link #call} returned, as an {@link Answer}. */
        Answer answer(Object raw);

        @Override
        void close() throws SQLException;
    }
}
