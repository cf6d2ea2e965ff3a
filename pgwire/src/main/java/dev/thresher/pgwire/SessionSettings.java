package dev.thresher.pgwire;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The settings of one connection that Thresher acts on, with PostgreSQL's transaction semantics: a session
 * {@code SET} lasts for the session but is undone when its transaction block rolls back; a {@code SET LOCAL} lasts
 * until its transaction ends, whether it commits or rolls back (a later session {@code SET} of the same setting in
 * the block supersedes it); {@code RESET} goes back to the value the session started with (its startup packet's,
 * else the server's default). Values are kept in their canonical text; the connection reads them through
 * {@link #get}. Touched on the connection's event loop only.
 */
final class SessionSettings {
    /** The values the session started with, the targets of RESET. */
    private final Map<String, String> initial;
    private Map<String, String> session;
    /** SET LOCAL values of the transaction in progress. */
    private final Map<String, String> local = new HashMap<>();
    /** The session values when the transaction in progress began; null outside a transaction. */
    private Map<String, String> atBegin;

    /** @param initial every setting kept, with the value the session starts with */
    SessionSettings(Map<String, String> initial) {
        this.initial = new LinkedHashMap<>(initial);
        this.session = new HashMap<>(initial);
    }

    /** Whether {@code name} is one of the settings kept here. */
    boolean has(String name) {
        return initial.containsKey(name);
    }

    /** The value in effect: the transaction's SET LOCAL, else the session's. */
    String get(String name) {
        String value = local.get(name);
        return value != null ? value : session.get(name);
    }

    /** Changes a setting as a session SET does (and as the startup packet does, before any transaction). */
    void set(String name, String value) {
        requireKnown(name);
        session.put(name, value);
        local.remove(name);
    }

    /** Changes a setting until the end of the transaction in progress; false (and no effect) outside one. */
    boolean setLocal(String name, String value) {
        requireKnown(name);
        if (atBegin == null) {
            return false;
        }
        local.put(name, value);
        return true;
    }

    /** The value the session started with. */
    String initial(String name) {
        requireKnown(name);
        return initial.get(name);
    }

    /** RESET: back to the value the session started with. */
    void reset(String name) {
        set(name, initial.get(name));
    }

    /** RESET ALL. */
    void resetAll() {
        initial.keySet().forEach(this::reset);
    }

    /** Makes the current values the ones RESET goes back to: after the startup packet's settings were applied. */
    void startupDone() {
        initial.replaceAll((name, value) -> session.get(name));
    }

    boolean inTransaction() {
        return atBegin != null;
    }

    /** A transaction begins (BEGIN, or the implicit block of a simple query of several statements); idempotent. */
    void begin() {
        if (atBegin == null) {
            atBegin = new HashMap<>(session);
        }
    }

    /** The transaction commits: its session SETs stay, its SET LOCALs end. No effect outside a transaction. */
    void commit() {
        local.clear();
        atBegin = null;
    }

    /** The transaction rolls back: its SETs are undone and its SET LOCALs end. No effect outside a transaction. */
    void rollback() {
        if (atBegin != null) {
            session = atBegin;
        }
        local.clear();
        atBegin = null;
    }

    private void requireKnown(String name) {
        if (!initial.containsKey(name)) {
            throw new IllegalArgumentException("not a kept setting: " + name);
        }
    }
}
