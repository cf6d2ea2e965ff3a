package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;

/**
 * The one place that maps a Thresher {@link ErrorCode} to a PostgreSQL SQLSTATE. Clients match on the
 * SQLSTATE (and on {@code thresher_code=} in the error's detail), never on message text.
 *
 * <p>Rules behind the table: each SQLSTATE belongs to exactly one error category, so a client can tell
 * the category from the SQLSTATE alone; only retryable categories get a SQLSTATE that clients and
 * frameworks already retry ({@code 40001}, {@code 57P03}, {@code 53300}); no code gets an {@code 08xxx} connection-exception state
 * unless the connection itself is broken, because pools (HikariCP) evict connections on class 08.
 *
 * <table>
 * <caption>ErrorCode to SQLSTATE</caption>
 * <tr><th>ErrorCode</th><th>SQLSTATE</th><th>why</th></tr>
 * <tr><td>SYNTAX_ERROR</td><td>42601 syntax_error</td><td>what PostgreSQL says for malformed SQL</td></tr>
 * <tr><td>UNSUPPORTED_STATEMENT</td><td>0A000 feature_not_supported</td><td>valid SQL that Thresher does not serve</td></tr>
 * <tr><td>UNKNOWN_BINDING</td><td>42883 undefined_function</td><td>what PostgreSQL says for CALL of an unknown procedure</td></tr>
 * <tr><td>INVALID_ARGUMENTS</td><td>22023 invalid_parameter_value</td><td>the argument value, not the statement, is wrong</td></tr>
 * <tr><td>PAYLOAD_TOO_LARGE, TOO_MANY_PREPARED_STATEMENTS</td><td>54000 program_limit_exceeded</td><td>the caller's input
 *     exceeds a fixed cap (argument bytes, statements or portals held by one connection)</td></tr>
 * <tr><td>INVALID_TEXT_ENCODING</td><td>22021 character_not_in_repertoire</td><td>what PostgreSQL says for an invalid byte
 *     sequence in the client's encoding (UTF8, the only one served)</td></tr>
 * <tr><td>UNKNOWN_SETTING, UNKNOWN_CALL</td><td>42704 undefined_object</td><td>what PostgreSQL says for SHOW of an unrecognized
 *     configuration parameter</td></tr>
 * <tr><td>UNKNOWN_TABLE</td><td>42P01 undefined_table</td><td>what PostgreSQL says for a table that does not
 * exist</td></tr>
 * <tr><td>NUMBER_OUT_OF_RANGE</td><td>22003 numeric_value_out_of_range</td><td>what PostgreSQL says for a number
 *     its type cannot hold</td></tr>
 * <tr><td>DATETIME_OUT_OF_RANGE</td><td>22008 datetime_field_overflow</td><td>what PostgreSQL says for an interval or
 *     timestamp out of range</td></tr>
 * <tr><td>UNKNOWN_COLUMN</td><td>42703 undefined_column</td><td>what PostgreSQL says for a column the table
 *     does not have (the journal views {@code thresher.invocations} and {@code thresher.shard_runs})</td></tr>
 * <tr><td>NAME_TOO_LONG</td><td>42622 name_too_long</td><td>an identifier past PostgreSQL's 63 bytes; PostgreSQL
 *     truncates it with a notice, Thresher refuses it, so a name is never silently changed</td></tr>
 * <tr><td>INVALID_SELECTOR</td><td>42P17 invalid_object_definition</td><td>the binding's declared selector is bad, not the call</td></tr>
 * <tr><td>INVALID_DEADLINE</td><td>22023 invalid_parameter_value</td><td>the requested deadline is an out-of-range argument</td></tr>
 * <tr><td>IDEMPOTENCY_KEY_REUSED</td><td>22023 invalid_parameter_value</td><td>the key is an argument that names
 * another request (HTTP only; HTTP answers 422)</td></tr>
 * <tr><td>INVALID_CONFIGURATION</td><td>F0000 config_file_error</td><td>the node's configuration, not the call, is wrong</td></tr>
 * <tr><td>PARTITIONS_DO_NOT_TILE</td><td>55000 object_not_in_prerequisite_state</td><td>the table's partitions leave
 * slots out or hold some twice; the topology must be fixed before the table can be called</td></tr>
 * <tr><td>TOPOLOGY_CHANGE_REFUSED</td><td>55000 object_not_in_prerequisite_state</td><td>a topology change the
 * topology's present state does not allow (a shard that still holds partitions, a drain that would leave a partition
 * without a candidate, a target outside the table's residency or not writable)</td></tr>
 * <tr><td>PROTOCOL_VIOLATION</td><td>08P01 protocol_violation</td><td>the client broke the wire protocol; PostgreSQL closes such connections</td></tr>
 * <tr><td>AUTHENTICATION_FAILED</td><td>28P01 invalid_password</td><td>what PostgreSQL says for a wrong user or password</td></tr>
 * <tr><td>AUTHENTICATION_TIMEOUT</td><td>28000 invalid_authorization_specification</td><td>the client did not finish authenticating within
 *     {@code limits.pgwireAuthTimeoutMs}; the connection is closed</td></tr>
 * <tr><td>PERMISSION_DENIED</td><td>42501 insufficient_privilege</td><td>what PostgreSQL says for a missing grant</td></tr>
 * <tr><td>BATCH_TOO_MANY_ROWS, EMIT_LIMIT_EXCEEDED, SLOT_TOO_LARGE, MERGED_PARTIALS_TOO_LARGE,
 *     TOO_MANY_COORDINATION_SLOTS, RESULT_TOO_LARGE, BATCH_TOO_LARGE, NESTED_CALL_LIMIT_EXCEEDED</td><td>53400 configuration_limit_exceeded</td>
 *     <td>a configured {@code limits.*} bound was hit; terminal until the design or budget changes</td></tr>
 * <tr><td>PARTIAL_MALFORMED, PARTIAL_NON_NUMERIC, PARTIAL_KEY_DUPLICATED, SLOT_MISSING</td>
 *     <td>39000 external_routine_invocation_exception</td><td>a shard's output broke the partial contract between
 *     run() and reduce()</td></tr>
 * <tr><td>GUEST_TRAP, GUEST_REPORTED_FAILURE, GUEST_INVALID_RESULT, GUEST_ABI_MISMATCH, GUEST_INVALID_MODULE</td>
 *     <td>38000 external_routine_exception</td><td>the guest component (an external routine) failed</td></tr>
 * <tr><td>DEADLINE_EXCEEDED</td><td>57014 query_canceled</td><td>what PostgreSQL says when statement_timeout fires</td></tr>
 * <tr><td>IDLE_SESSION_TIMEOUT</td><td>57P05 idle_session_timeout</td><td>what PostgreSQL says when idle_session_timeout
 *     closes a session ({@code limits.pgwireIdleSessionTimeoutMs})</td></tr>
 * <tr><td>CELL_UNAVAILABLE, HOST_UNREACHABLE</td><td>57P03 cannot_connect_now</td><td>a temporary capacity gap
 *     before guest code ran; retryable (HikariCP evicts the connection on it, which only costs a reconnect)</td></tr>
 * <tr><td>TOO_MANY_CONNECTIONS</td><td>53300 too_many_connections</td><td>what PostgreSQL says past max_connections
 *     or a role's connection limit; retryable once a connection closes (nothing ran)</td></tr>
 * <tr><td>TARGET_STALE, SLOT_STALE, SLOT_EXPIRED, REDUCE_LEASE_LOST</td><td>40001 serialization_failure</td><td>the
 *     state every client and framework already retries; the target is resolved again and no result was published</td></tr>
 * <tr><td>TRANSPORT_OUTCOME_UNKNOWN, COORDINATOR_LOST</td><td>58000 system_error</td><td>a failure outside the database whose outcome is
 *     unknown; not 08006, which makes pools drop a healthy connection and retry layers retry</td></tr>
 * <tr><td>INTERNAL_ERROR, STORE_UNAVAILABLE</td><td>XX000 internal_error</td><td>a fault of the node itself; the
 *     detail's retry_class tells that a store outage is ambiguous</td></tr>
 * </table>
 *
 * <p>Wire-protocol conditions that have no {@link ErrorCode} of their own are reported with
 * {@link ErrorCode#PROTOCOL_VIOLATION} as {@code thresher_code} and the precise SQLSTATEs below; a cleartext
 * connection to a server that requires TLS is {@link ErrorCode#AUTHENTICATION_FAILED} with
 * {@link #INVALID_AUTHORIZATION_SPECIFICATION}, PostgreSQL's SQLSTATE for a connection it has no rule to admit.
 */
public final class SqlStates {
    /** {@code 26000}: Bind, Describe or Close named a prepared statement that does not exist. */
    public static final String INVALID_SQL_STATEMENT_NAME = "26000";
    /** {@code 25P02}: a statement other than COMMIT or ROLLBACK in a transaction block that failed. */
    public static final String IN_FAILED_SQL_TRANSACTION = "25P02";
    /** {@code 34000}: Describe or Execute named a portal that does not exist. */
    public static final String INVALID_CURSOR_NAME = "34000";
    /** {@code 42P18}: Parse declared a parameter the statement does not use without giving its type. */
    public static final String INDETERMINATE_DATATYPE = "42P18";
    /** {@code 42P05}: Parse reused the name of an existing prepared statement. */
    public static final String DUPLICATE_PREPARED_STATEMENT = "42P05";
    /**
     * {@code 28000}: a connection without TLS to a server that requires it ({@code AUTHENTICATION_FAILED}), as
     * PostgreSQL refuses one that no {@code pg_hba.conf} line admits.
     */
    public static final String INVALID_AUTHORIZATION_SPECIFICATION = "28000";
    /** {@code 25001}: a statement that cannot run inside a transaction block (DISCARD ALL) ran inside one. */
    public static final String ACTIVE_SQL_TRANSACTION = "25001";
    /** {@code 25P01}: the WARNING of SET LOCAL outside a transaction block, which has no effect there. */
    public static final String NO_ACTIVE_SQL_TRANSACTION = "25P01";

    private SqlStates() {
    }

    /** The SQLSTATE of {@code code}; see the class comment for the table and the reasons. */
    public static String of(ErrorCode code) {
        return switch (code) {
            case SYNTAX_ERROR -> "42601";
            case UNSUPPORTED_STATEMENT -> "0A000";
            case UNKNOWN_BINDING -> "42883";
            case INVALID_ARGUMENTS, INVALID_DEADLINE, IDEMPOTENCY_KEY_REUSED -> "22023";
            case PAYLOAD_TOO_LARGE, TOO_MANY_PREPARED_STATEMENTS -> "54000";
            case INVALID_TEXT_ENCODING -> "22021";
            case UNKNOWN_SETTING, UNKNOWN_CALL -> "42704";
            case UNKNOWN_COLUMN -> "42703";
            case UNKNOWN_TABLE -> "42P01";
            case NUMBER_OUT_OF_RANGE -> "22003";
            case DATETIME_OUT_OF_RANGE -> "22008";
            case NAME_TOO_LONG -> "42622";
            case INVALID_SELECTOR -> "42P17";
            case INVALID_CONFIGURATION -> "F0000";
            case PARTITIONS_DO_NOT_TILE, TOPOLOGY_CHANGE_REFUSED -> "55000";
            case PROTOCOL_VIOLATION -> "08P01";
            case AUTHENTICATION_FAILED -> "28P01";
            case AUTHENTICATION_TIMEOUT -> "28000";
            case PERMISSION_DENIED -> "42501";
            case BATCH_TOO_MANY_ROWS, EMIT_LIMIT_EXCEEDED, SLOT_TOO_LARGE, MERGED_PARTIALS_TOO_LARGE,
                    TOO_MANY_COORDINATION_SLOTS, RESULT_TOO_LARGE, BATCH_TOO_LARGE, NESTED_CALL_LIMIT_EXCEEDED -> "53400";
            case PARTIAL_MALFORMED, PARTIAL_NON_NUMERIC, PARTIAL_KEY_DUPLICATED, SLOT_MISSING -> "39000";
            case GUEST_TRAP, GUEST_REPORTED_FAILURE, GUEST_INVALID_RESULT, GUEST_ABI_MISMATCH,
                    GUEST_INVALID_MODULE -> "38000";
            case DEADLINE_EXCEEDED -> "57014";
            case IDLE_SESSION_TIMEOUT -> "57P05";
            case TOO_MANY_CONNECTIONS -> "53300";
            case CELL_UNAVAILABLE, HOST_UNREACHABLE -> "57P03";
            case TARGET_STALE, SLOT_STALE, SLOT_EXPIRED, REDUCE_LEASE_LOST -> "40001";
            case TRANSPORT_OUTCOME_UNKNOWN, COORDINATOR_LOST -> "58000";
            case INTERNAL_ERROR, STORE_UNAVAILABLE -> "XX000";
        };
    }

    /** Retry guidance for the error's hint field, from the code's retry class. */
    static String hint(ErrorCode code) {
        return hint(code, code.retryClass(), false);
    }

    /**
     * Retry guidance for the error's hint field, from the code's retry class and whether guest code
     * of the failed call ran: a retryable failure after guest code ran (a slot that went stale or
     * expired, a lease lost) is still worth a new call, but that call runs the guest again.
     */
    static String hint(ErrorCode code, RetryClass retryClass, boolean guestCodeRan) {
        if (code == ErrorCode.DEADLINE_EXCEEDED) {
            // a deadline is terminal for its invocation, but a stall that caused it may be over
            return (guestCodeRan ? "The deadline passed after guest code of this call ran or may have run; a new call runs"
                    + " it again." : "The deadline passed before guest code of this call ran.")
                    + " This invocation is over; a new call may succeed if the delay was transient (a database or"
                    + " node stall): measure before raising the deadline.";
        }
        if (code == ErrorCode.IDLE_SESSION_TIMEOUT) {
            return "The session was closed after it sat idle; open a new connection (a pool does so by itself).";
        }
        if (code == ErrorCode.TOO_MANY_CONNECTIONS) {
            return "Safe to retry: nothing ran; connect again once connections close, or use fewer (a pool).";
        }
        if (code == ErrorCode.COORDINATOR_LOST) {
            return "Outcome unknown: the node coordinating the call stopped; nothing was published, but guest code may"
                    + " have run; retry only if re-executing its effects is acceptable.";
        }
        return switch (retryClass) {
            case TERMINAL -> "Do not retry: the same call fails the same way until the request, binding or limits change.";
            case RETRYABLE -> guestCodeRan
                    ? "Retry after re-resolution: nothing of this call was published, but its guest code ran; a new call runs it again."
                    : code.retryClass() == RetryClass.AMBIGUOUS
                    ? "Safe to retry: the call failed before any guest code started; nothing ran and nothing was published."
                    : "Safe to retry: guest code did not run; the target is resolved again on the next attempt.";
            case AMBIGUOUS -> "Outcome unknown: guest code may have run; retry only if re-executing its effects is acceptable.";
        };
    }
}
