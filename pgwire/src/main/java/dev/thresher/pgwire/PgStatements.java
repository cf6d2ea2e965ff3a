package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A session's prepared statements and portals, by name (the unnamed ones under {@code ""}), within their bounds: at
 * most {@code limits.pgwireStatementsPerConnection} of each, and together at most
 * {@code limits.pgwireStatementBytesPerConnection} bytes of names, SQL text and bound values. Closing a statement
 * closes the portals bound from it. Touched on the connection's event loop only.
 */
final class PgStatements {
    /**
     * A named or unnamed prepared statement; {@code parameterTypes} are the resolved OIDs; {@code bytes} what it
     * holds against {@code limits.pgwireStatementBytesPerConnection} (its name and SQL text in UTF-8).
     */
    record Prepared(ParsedStatement statement, List<Integer> parameterTypes, long bytes) {
    }

    /**
     * A bound statement (an INSERT's {@code prepared} holds its command with the values in their places); {@code
     * bound} is a call's JSON arguments when it takes {@code $1}, else null; {@code bytes} what it holds against
     * {@code limits.pgwireStatementBytesPerConnection} (its name and bound values).
     */
    record Portal(Prepared prepared, String bound, short resultFormat, boolean executed,
                  JournalResults.Cursor cursor, SessionQueries.Answer answer, long bytes) {
        /** The same portal, run once. */
        Portal ran() {
            return new Portal(prepared, bound, resultFormat, true, cursor, answer, bytes);
        }
    }

    private final Limits limits;
    private final Map<String, Prepared> statements = new HashMap<>();
    private final Map<String, Portal> portals = new HashMap<>();

    PgStatements(Limits limits) {
        this.limits = limits;
    }

    /** The prepared statement of that name, or null. */
    Prepared statement(String name) {
        return statements.get(name);
    }

    boolean hasStatement(String name) {
        return statements.containsKey(name);
    }

    /** The portal of that name, or null. */
    Portal portal(String name) {
        return portals.get(name);
    }

    /**
     * Drops the unnamed statement, as PostgreSQL does at the start of every Parse of it; portals bound from it stay
     * (a Parse does not close them).
     */
    void dropUnnamed() {
        statements.remove("");
    }

    /**
     * Keeps a prepared statement under {@code name} (replacing one of that name).
     *
     * @throws ThresherException {@link ErrorCode#TOO_MANY_PREPARED_STATEMENTS} past either bound
     */
    Prepared prepare(String name, String sql, ParsedStatement statement, List<Integer> parameterTypes) {
        if (!statements.containsKey(name) && statements.size() >= limits.pgwireStatementsPerConnection()) {
            throw new ThresherException(ErrorCode.TOO_MANY_PREPARED_STATEMENTS, "this connection holds "
                    + statements.size() + " prepared statements; limits.pgwireStatementsPerConnection is "
                    + limits.pgwireStatementsPerConnection() + " (close some)");
        }
        long bytes = Quoted.utf8Length(name) + Quoted.utf8Length(sql);
        checkHeldBytes("prepared statement", bytes, 0);
        Prepared prepared = new Prepared(statement, List.copyOf(parameterTypes), bytes);
        statements.put(name, prepared);
        return prepared;
    }

    /**
     * Keeps a portal under {@code name} (replacing one of that name); {@code values} are the bound values, counted
     * against the bytes' bound.
     *
     * @throws ThresherException {@link ErrorCode#TOO_MANY_PREPARED_STATEMENTS} past either bound
     */
    void bind(String name, Prepared prepared, String bound, short resultFormat, JournalResults.Cursor cursor,
              SessionQueries.Answer answer, List<byte[]> values) {
        if (!portals.containsKey(name) && portals.size() >= limits.pgwireStatementsPerConnection()) {
            throw new ThresherException(ErrorCode.TOO_MANY_PREPARED_STATEMENTS, "this connection holds "
                    + portals.size() + " portals; limits.pgwireStatementsPerConnection is "
                    + limits.pgwireStatementsPerConnection() + " (close some)");
        }
        long bytes = Quoted.utf8Length(name);
        for (byte[] value : values) {
            bytes += value == null ? 0 : value.length;
        }
        Portal replaced = portals.get(name);
        checkHeldBytes("portal", bytes, replaced == null ? 0 : replaced.bytes());
        portals.put(name, new Portal(prepared, bound, resultFormat, false, cursor, answer, bytes));
    }

    /** The portal of that name has run once. */
    void ran(String name, Portal portal) {
        portals.put(name, portal.ran());
    }

    /**
     * Closes a prepared statement and the portals built from it (identity: equal statements may differ).
     *
     * @return whether there was one of that name
     */
    boolean closeStatement(String name) {
        Prepared closed = statements.remove(name);
        if (closed == null) {
            return false;
        }
        portals.values().removeIf(portal -> portal.prepared() == closed);
        return true;
    }

    void closePortal(String name) {
        portals.remove(name);
    }

    /** The end of a transaction (or CLOSE ALL) closes every portal. */
    void closePortals() {
        portals.clear();
    }

    /** DEALLOCATE ALL, DISCARD ALL. */
    void closeAll() {
        statements.clear();
        portals.clear();
    }

    /**
     * Bytes this connection's prepared statements and portals hold, as {@code limits.pgwireStatementBytesPerConnection}
     * counts them; summed when asked (a Parse or Bind), over at most {@code limits.pgwireStatementsPerConnection} of each.
     */
    long heldBytes() {
        long held = 0;
        for (Prepared prepared : statements.values()) {
            held += prepared.bytes();
        }
        for (Portal portal : portals.values()) {
            held += portal.bytes();
        }
        return held;
    }

    /**
     * Refuses ({@link ErrorCode#TOO_MANY_PREPARED_STATEMENTS}, {@code 54000}) to store {@code bytes} more, in place of
     * {@code replaced} bytes, past {@code limits.pgwireStatementBytesPerConnection}.
     */
    private void checkHeldBytes(String what, long bytes, long replaced) {
        long limit = limits.pgwireStatementBytesPerConnection();
        long held = heldBytes() - replaced;
        if (held + bytes > limit) {
            throw new ThresherException(ErrorCode.TOO_MANY_PREPARED_STATEMENTS, "this connection's prepared statements"
                    + " and portals hold " + held + " bytes; a " + what + " of " + bytes + " bytes more would pass"
                    + " limits.pgwireStatementBytesPerConnection (" + limit + "; close some)");
        }
    }
}
