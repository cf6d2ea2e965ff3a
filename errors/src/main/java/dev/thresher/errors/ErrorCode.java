package dev.thresher.errors;

import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Every failure Thresher reports. Names may change; numeric codes never do and are never reused.
 * Codes are grouped by category in thousands: 1xxx invalid input, 2xxx authentication,
 * 3xxx batch or partial bound, 4xxx guest, 5xxx deadline, 6xxx host cell, 7xxx stale target,
 * 8xxx transport, 9xxx internal.
 */
public enum ErrorCode {
    SYNTAX_ERROR(1001, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    UNSUPPORTED_STATEMENT(1002, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    UNKNOWN_BINDING(1003, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    INVALID_ARGUMENTS(1004, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    PAYLOAD_TOO_LARGE(1005, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    INVALID_SELECTOR(1006, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    INVALID_DEADLINE(1007, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    INVALID_CONFIGURATION(1008, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    PROTOCOL_VIOLATION(1009, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    TOO_MANY_PREPARED_STATEMENTS(1010, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    INVALID_TEXT_ENCODING(1011, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    UNKNOWN_SETTING(1012, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    PARTITIONS_DO_NOT_TILE(1013, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    TOPOLOGY_CHANGE_REFUSED(1014, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    /** No call of the tenant has that id (never, or its record passed the coordination retention). */
    UNKNOWN_CALL(1015, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    /** An Idempotency-Key already journaled for a different request (another route or body). */
    IDEMPOTENCY_KEY_REUSED(1016, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    /** A query of the journal views names a column the view does not have. */
    UNKNOWN_COLUMN(1017, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    /** An identifier (a binding, table, column or setting name) longer than 63 bytes, PostgreSQL's NAMEDATALEN - 1. */
    NAME_TOO_LONG(1018, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    /** A statement or an admin request names a table the tenant does not have. */
    UNKNOWN_TABLE(1019, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    /** A number is outside the range of the column or value it stands for (a journal filter past bigint). */
    NUMBER_OUT_OF_RANGE(1020, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    /** An interval or timestamp is outside what it can hold (an interval of more hours than a bigint counts). */
    DATETIME_OUT_OF_RANGE(1021, Category.INVALID_STATEMENT_OR_ARGUMENTS, RetryClass.TERMINAL),
    AUTHENTICATION_TIMEOUT(2003, Category.AUTHENTICATION_OR_AUTHORIZATION, RetryClass.TERMINAL),

    AUTHENTICATION_FAILED(2001, Category.AUTHENTICATION_OR_AUTHORIZATION, RetryClass.TERMINAL),
    PERMISSION_DENIED(2002, Category.AUTHENTICATION_OR_AUTHORIZATION, RetryClass.TERMINAL),

    BATCH_TOO_MANY_ROWS(3001, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    EMIT_LIMIT_EXCEEDED(3002, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    SLOT_TOO_LARGE(3003, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    MERGED_PARTIALS_TOO_LARGE(3004, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    PARTIAL_MALFORMED(3005, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    PARTIAL_NON_NUMERIC(3006, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    PARTIAL_KEY_DUPLICATED(3007, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    TOO_MANY_COORDINATION_SLOTS(3008, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    SLOT_MISSING(3009, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    RESULT_TOO_LARGE(3010, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    BATCH_TOO_LARGE(3011, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),
    /** An HTTP handler asked for more nested distributed calls than {@code limits.nestedCallsPerRequest} in one request. */
    NESTED_CALL_LIMIT_EXCEEDED(3012, Category.BATCH_OR_PARTIAL_BOUND, RetryClass.TERMINAL),

    GUEST_TRAP(4001, Category.GUEST_FAILURE, RetryClass.TERMINAL),
    GUEST_REPORTED_FAILURE(4002, Category.GUEST_FAILURE, RetryClass.TERMINAL),
    GUEST_INVALID_RESULT(4003, Category.GUEST_FAILURE, RetryClass.TERMINAL),
    GUEST_ABI_MISMATCH(4004, Category.GUEST_FAILURE, RetryClass.TERMINAL),
    GUEST_INVALID_MODULE(4005, Category.GUEST_FAILURE, RetryClass.TERMINAL),

    DEADLINE_EXCEEDED(5001, Category.DEADLINE, RetryClass.TERMINAL),
    /** A pgwire session sat idle longer than {@code limits.pgwireIdleSessionTimeoutMs} and was closed; reconnect. */
    IDLE_SESSION_TIMEOUT(5002, Category.DEADLINE, RetryClass.TERMINAL),

    CELL_UNAVAILABLE(6001, Category.HOST_CELL_UNAVAILABLE, RetryClass.RETRYABLE),
    HOST_UNREACHABLE(6002, Category.HOST_CELL_UNAVAILABLE, RetryClass.RETRYABLE),
    /** A node or one user holds as many connections as its limit allows; the new one was refused before any work. */
    TOO_MANY_CONNECTIONS(6003, Category.HOST_CELL_UNAVAILABLE, RetryClass.RETRYABLE),

    TARGET_STALE(7001, Category.TARGET_STALE, RetryClass.RETRYABLE),
    SLOT_STALE(7002, Category.TARGET_STALE, RetryClass.RETRYABLE),
    SLOT_EXPIRED(7003, Category.TARGET_STALE, RetryClass.RETRYABLE),
    REDUCE_LEASE_LOST(7004, Category.TARGET_STALE, RetryClass.RETRYABLE),

    TRANSPORT_OUTCOME_UNKNOWN(8001, Category.UNCLASSIFIED_TRANSPORT, RetryClass.AMBIGUOUS),
    /** The node coordinating the call stopped or restarted while it ran; recorded by the reconciler. */
    COORDINATOR_LOST(8002, Category.UNCLASSIFIED_TRANSPORT, RetryClass.AMBIGUOUS),

    INTERNAL_ERROR(9001, Category.INTERNAL, RetryClass.TERMINAL),
    STORE_UNAVAILABLE(9002, Category.INTERNAL, RetryClass.AMBIGUOUS);

    private static final Map<Integer, ErrorCode> BY_CODE =
            Stream.of(values()).collect(Collectors.toUnmodifiableMap(ErrorCode::code, Function.identity()));

    private final int code;
    private final Category category;
    private final RetryClass retryClass;

    ErrorCode(int code, Category category, RetryClass retryClass) {
        this.code = code;
        this.category = category;
        this.retryClass = retryClass;
    }

    public int code() {
        return code;
    }

    public Category category() {
        return category;
    }

    public RetryClass retryClass() {
        return retryClass;
    }

    /** The code with this number, or {@link #INTERNAL_ERROR} for a number this build does not know. */
    public static ErrorCode ofCode(int code) {
        return BY_CODE.getOrDefault(code, INTERNAL_ERROR);
    }
}
