package dev.thresher.store.control;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.DbDeadline;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * How the control database's stores run their statements: one short transaction or one auto-commit round trip on a
 * connection of {@code db}, text bound as PostgreSQL can store it, and a failure of the database as a typed one. Only
 * this package runs SQL against the control database; the stores beside this class each own their tables.
 */
final class ControlSql {
    @FunctionalInterface
    interface SqlFunction<T, R> {
        R apply(T t) throws SQLException;
    }

    private final DataSource db;

    ControlSql(DataSource db) {
        this.db = db;
    }

    DataSource dataSource() {
        return db;
    }

    /**
     * Runs work on a connection in auto-commit mode: one statement, or several sent by one {@code execute}
     * (pgjdbc sends them with a single Sync, so PostgreSQL runs them in one implicit transaction, all or
     * nothing, in one round trip).
     */
    <R> R autoCommit(SqlFunction<Connection, R> work) {
        try (Connection c = db.getConnection()) {
            try {
                return work.apply(c);
            } catch (AssertionError e) {
                // pgjdbc run with -ea asserts on a connection that died inside a batch: the database is gone
                throw unavailable(new SQLException("connection lost: " + e.getMessage(), "08006", e));
            }
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    /** Runs work in one transaction: committed when it returns, rolled back when it throws. */
    <R> R inTransaction(SqlFunction<Connection, R> work) {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                R r = work.apply(c);
                c.commit();
                return r;
            } catch (SQLException | RuntimeException e) {
                rollbackKeeping(c, e);
                throw e;
            } catch (AssertionError e) {
                // pgjdbc run with -ea asserts on a connection that died inside a batch: the database is gone
                rollbackKeeping(c, e);
                throw unavailable(new SQLException("connection lost: " + e.getMessage(), "08006", e));
            }
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    /** Rolls back; a rollback that fails too (the connection died) is kept beside the original failure, not instead of it. */
    private static void rollbackKeeping(Connection c, Throwable original) {
        try {
            c.rollback();
        } catch (SQLException | RuntimeException rollbackFailure) {
            original.addSuppressed(rollbackFailure);
        }
    }

    /** One statement in auto-commit mode; the rows it changed. */
    int update(String sql, Object... args) {
        return autoCommit(c -> update(c, sql, args));
    }

    /** One statement on {@code c}; the rows it changed. */
    static int update(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            return ps.executeUpdate();
        }
    }

    /** The first row of a query, read by {@code row}; empty when there is none. */
    <R> Optional<R> queryOne(String sql, SqlFunction<ResultSet, R> row, Object... args) {
        return autoCommit(c -> queryOne(c, sql, row, args));
    }

    static <R> Optional<R> queryOne(Connection c, String sql, SqlFunction<ResultSet, R> row, Object... args)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(row.apply(rs)) : Optional.empty();
            }
        }
    }

    /** Every row of a query, each read by {@code row}. */
    <R> List<R> queryList(String sql, SqlFunction<ResultSet, R> row, Object... args) {
        return autoCommit(c -> queryList(c, sql, row, args));
    }

    static <R> List<R> queryList(Connection c, String sql, SqlFunction<ResultSet, R> row, Object... args)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, args);
            List<R> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(row.apply(rs));
                }
            }
            return out;
        }
    }

    /** Serialises writers of one key (a binding's versions, a table's partitions) until the transaction ends. */
    static void lock(Connection c, String key) throws SQLException {
        try (PreparedStatement lock = c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
            lock.setString(1, key);
            lock.execute();
        }
    }

    static void bind(PreparedStatement ps, Object... args) throws SQLException {
        bindFrom(ps, 1, args);
    }

    /** Binds {@code args} to the parameters from {@code first} on; text as {@link #storable} makes it. */
    static void bindFrom(PreparedStatement ps, int first, Object... args) throws SQLException {
        for (int i = 0; i < args.length; i++) {
            ps.setObject(first + i, args[i] instanceof String text ? storable(text) : args[i]);
        }
    }

    /**
     * Text as PostgreSQL can store it: a NUL (which no PostgreSQL text may hold) and a lone UTF-16 surrogate
     * (which has no UTF-8 form) read as U+FFFD. Messages that quote guest output or keys are kept, not refused.
     */
    static String storable(String text) {
        if (text == null) {
            return null;
        }
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            boolean bad = ch == 0;
            if (Character.isHighSurrogate(ch)) {
                if (i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                    if (out != null) {
                        out.append(ch).append(text.charAt(i + 1));
                    }
                    i++;
                    continue;
                }
                bad = true;
            } else if (Character.isLowSurrogate(ch)) {
                bad = true;
            }
            if (bad && out == null) {
                out = new StringBuilder(text.length()).append(text, 0, i);
            }
            if (out != null) {
                out.append(bad ? '\uFFFD' : ch);
            }
        }
        return out == null ? text : out.toString();
    }

    /**
     * A failure of the control database as a typed one: {@code DEADLINE_EXCEEDED} when the thread's call
     * deadline ({@link DbDeadline}) is what ended the wait, {@code STORE_UNAVAILABLE} otherwise.
     */
    static ThresherException unavailable(SQLException e) {
        if (DbDeadline.passed()) {
            return new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting for the control database: "
                    + e.getMessage(), e);
        }
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: " + e.getMessage(), e);
    }
}
