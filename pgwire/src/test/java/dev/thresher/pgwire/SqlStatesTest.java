package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.Category;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SqlStatesTest {

    /** Pins every code; the switch has no default, so a new ErrorCode fails compilation until it is pinned. */
    private static String expected(ErrorCode code) {
        return switch (code) {
            case SYNTAX_ERROR -> "42601";
            case UNSUPPORTED_STATEMENT -> "0A000";
            case UNKNOWN_BINDING -> "42883";
            case INVALID_ARGUMENTS -> "22023";
            case PAYLOAD_TOO_LARGE -> "54000";
            case TOO_MANY_PREPARED_STATEMENTS -> "54000";
            case INVALID_TEXT_ENCODING -> "22021";
            case UNKNOWN_SETTING, UNKNOWN_CALL -> "42704";
            case UNKNOWN_COLUMN -> "42703";
            case NAME_TOO_LONG -> "42622";
            case UNKNOWN_TABLE -> "42P01";
            case NUMBER_OUT_OF_RANGE -> "22003";
            case DATETIME_OUT_OF_RANGE -> "22008";
            case INVALID_SELECTOR -> "42P17";
            case INVALID_DEADLINE, IDEMPOTENCY_KEY_REUSED -> "22023";
            case INVALID_CONFIGURATION -> "F0000";
            case PARTITIONS_DO_NOT_TILE -> "55000";
            case TOPOLOGY_CHANGE_REFUSED -> "55000";
            case PROTOCOL_VIOLATION -> "08P01";
            case AUTHENTICATION_FAILED -> "28P01";
            case AUTHENTICATION_TIMEOUT -> "28000";
            case PERMISSION_DENIED -> "42501";
            case BATCH_TOO_MANY_ROWS -> "53400";
            case EMIT_LIMIT_EXCEEDED -> "53400";
            case SLOT_TOO_LARGE -> "53400";
            case MERGED_PARTIALS_TOO_LARGE -> "53400";
            case PARTIAL_MALFORMED -> "39000";
            case PARTIAL_NON_NUMERIC -> "39000";
            case PARTIAL_KEY_DUPLICATED -> "39000";
            case TOO_MANY_COORDINATION_SLOTS -> "53400";
            case SLOT_MISSING -> "39000";
            case RESULT_TOO_LARGE -> "53400";
            case BATCH_TOO_LARGE -> "53400";
            case NESTED_CALL_LIMIT_EXCEEDED -> "53400";
            case GUEST_TRAP -> "38000";
            case GUEST_REPORTED_FAILURE -> "38000";
            case GUEST_INVALID_RESULT -> "38000";
            case GUEST_ABI_MISMATCH -> "38000";
            case GUEST_INVALID_MODULE -> "38000";
            case DEADLINE_EXCEEDED -> "57014";
            case IDLE_SESSION_TIMEOUT -> "57P05";
            case TOO_MANY_CONNECTIONS -> "53300";
            case CELL_UNAVAILABLE -> "57P03";
            case HOST_UNREACHABLE -> "57P03";
            case TARGET_STALE -> "40001";
            case SLOT_STALE -> "40001";
            case SLOT_EXPIRED -> "40001";
            case REDUCE_LEASE_LOST -> "40001";
            case TRANSPORT_OUTCOME_UNKNOWN, COORDINATOR_LOST -> "58000";
            case INTERNAL_ERROR -> "XX000";
            case STORE_UNAVAILABLE -> "XX000";
        };
    }

    @Test
    void everyCodeIsPinned() {
        for (ErrorCode code : ErrorCode.values()) {
            assertThat(SqlStates.of(code)).as(code.name()).isEqualTo(expected(code));
        }
    }

    @Test
    void sqlStatesAreWellFormed() {
        for (ErrorCode code : ErrorCode.values()) {
            assertThat(SqlStates.of(code)).as(code.name()).matches("[0-9A-Z]{5}");
        }
        assertThat(SqlStates.INVALID_SQL_STATEMENT_NAME).isEqualTo("26000");
        assertThat(SqlStates.INVALID_CURSOR_NAME).isEqualTo("34000");
        assertThat(SqlStates.DUPLICATE_PREPARED_STATEMENT).isEqualTo("42P05");
        assertThat(SqlStates.INDETERMINATE_DATATYPE).isEqualTo("42P18");
        assertThat(SqlStates.IN_FAILED_SQL_TRANSACTION).isEqualTo("25P02");
        assertThat(SqlStates.INVALID_AUTHORIZATION_SPECIFICATION).isEqualTo("28000");
    }

    @Test
    void eachSqlStateBelongsToOneCategory() {
        Map<String, Category> categoryOf = new HashMap<>();
        for (ErrorCode code : ErrorCode.values()) {
            Category previous = categoryOf.putIfAbsent(SqlStates.of(code), code.category());
            assertThat(previous == null || previous == code.category())
                    .as(code + " shares " + SqlStates.of(code) + " with category " + previous).isTrue();
        }
    }

    @Test
    void onlyRetryableCodesGetTheRetrySqlState() {
        for (ErrorCode code : ErrorCode.values()) {
            boolean retrySignal = SqlStates.of(code).equals("40001") || SqlStates.of(code).equals("57P03")
                    || SqlStates.of(code).equals("53300");
            assertThat(retrySignal).as(code.name())
                    .isEqualTo(code.retryClass() == dev.thresher.errors.RetryClass.RETRYABLE);
            assertThat(SqlStates.of(code)).as(code + " must not look like a broken connection")
                    .satisfiesAnyOf(s -> assertThat(s).doesNotStartWith("08"),
                            s -> assertThat(code).isEqualTo(ErrorCode.PROTOCOL_VIOLATION));
        }
    }

    @Test
    void errorResponseDetailCarriesCodeAndRetryClass() {
        PgError error = PgError.error(ErrorCode.TARGET_STALE, "moved");
        assertThat(error.detail()).isEqualTo("thresher_code=7001 category=TARGET_STALE retry_class=RETRYABLE");
        assertThat(error.hint()).startsWith("Safe to retry");
        assertThat(PgError.error(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN, "x").hint()).startsWith("Outcome unknown");
        assertThat(PgError.error(ErrorCode.GUEST_TRAP, "x").hint()).startsWith("Do not retry");
        assertThat(PgError.fatal(ErrorCode.TOO_MANY_CONNECTIONS, "x").hint()).startsWith("Safe to retry");
        assertThat(PgError.fatal(ErrorCode.IDLE_SESSION_TIMEOUT, "x").hint()).contains("open a new connection");
    }

    @Test
    void aRetryableFailureAfterGuestCodeRanDoesNotPromiseThatNothingRan() {
        ThresherException stale = new ThresherException(ErrorCode.SLOT_EXPIRED, "slot 3 expired");
        assertThat(PgError.of(stale).hint()).startsWith("Safe to retry");
        PgError after = PgError.of(stale.afterGuestCode());
        assertThat(after.code()).isEqualTo(ErrorCode.SLOT_EXPIRED);
        assertThat(after.sqlState()).isEqualTo("40001");
        assertThat(after.message()).isEqualTo("slot 3 expired");
        assertThat(after.hint()).startsWith("Retry after re-resolution").contains("guest code ran");
    }
}
