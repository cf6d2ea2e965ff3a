package dev.thresher.store.control;

import dev.thresher.bindings.CallOutcome;
import dev.thresher.bindings.CallOutcomes;
import dev.thresher.bindings.JournalScope;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * {@link CallOutcomes} over the control database's {@code invocations} table: one primary-key read,
 * restricted to the scope's tenant; a call of a binding the scope does not see is not there. Blocking plain JDBC; front doors run it off their event loops.
 */
public final class InvocationLookup implements CallOutcomes {
    static final String SQL = """
            SELECT call_id, binding_name, state, error_code, error_message, result_json, created_at, finished_at,
                   deadline_at
            FROM invocations WHERE call_id = ? AND tenant = ?""";

    private final DataSource db;

    public InvocationLookup(DataSource db) {
        this.db = Objects.requireNonNull(db, "db");
    }

    @Override
    public Optional<CallOutcome> lookup(JournalScope scope, UUID callId) {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(callId, "callId");
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(SQL)) {
            ps.setObject(1, callId);
            ps.setString(2, scope.tenant());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || !scope.sees(rs.getString("binding_name"))) {
                    return Optional.empty();
                }
                int code = rs.getInt("error_code");
                Integer errorCode = rs.wasNull() ? null : code;
                return Optional.of(new CallOutcome(rs.getObject("call_id", UUID.class), rs.getString("binding_name"),
                        rs.getString("state"), errorCode, rs.getString("error_message"), rs.getString("result_json"),
                        instant(rs.getTimestamp("created_at")), instant(rs.getTimestamp("finished_at")),
                        instant(rs.getTimestamp("deadline_at"))));
            }
        } catch (SQLException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: " + e.getMessage(), e);
        }
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }
}
