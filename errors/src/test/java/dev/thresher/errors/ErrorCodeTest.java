package dev.thresher.errors;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ErrorCodeTest {
    @Test
    void codesAreUniqueAndGroupedByCategory() {
        Set<Integer> seen = new HashSet<>();
        for (ErrorCode c : ErrorCode.values()) {
            assertThat(seen.add(c.code())).as("duplicate code %s", c.code()).isTrue();
            assertThat(c.code() / 1000).as("%s is in its category's thousand", c)
                    .isEqualTo(c.category().ordinal() + 1);
        }
    }

    @Test
    void retryClassFollowsTheContract() {
        for (ErrorCode c : ErrorCode.values()) {
            switch (c.category()) {
                case HOST_CELL_UNAVAILABLE, TARGET_STALE -> assertThat(c.retryClass()).isEqualTo(RetryClass.RETRYABLE);
                case UNCLASSIFIED_TRANSPORT -> assertThat(c.retryClass()).isEqualTo(RetryClass.AMBIGUOUS);
                case INTERNAL -> assertThat(c.retryClass()).isNotEqualTo(RetryClass.RETRYABLE);
                default -> assertThat(c.retryClass()).isEqualTo(RetryClass.TERMINAL);
            }
        }
    }

    @Test
    void pinnedCodesNeverChange() {
        assertThat(ErrorCode.UNKNOWN_BINDING.code()).isEqualTo(1003);
        assertThat(ErrorCode.INVALID_ARGUMENTS.code()).isEqualTo(1004);
        assertThat(ErrorCode.EMIT_LIMIT_EXCEEDED.code()).isEqualTo(3002);
        assertThat(ErrorCode.DEADLINE_EXCEEDED.code()).isEqualTo(5001);
        assertThat(ErrorCode.TARGET_STALE.code()).isEqualTo(7001);
        assertThat(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN.code()).isEqualTo(8001);
        assertThat(ErrorCode.ofCode(3007)).isEqualTo(ErrorCode.PARTIAL_KEY_DUPLICATED);
        assertThat(ErrorCode.NESTED_CALL_LIMIT_EXCEEDED.code()).isEqualTo(3012);
        assertThat(ErrorCode.NAME_TOO_LONG.code()).isEqualTo(1018);
        assertThat(ErrorCode.IDLE_SESSION_TIMEOUT.code()).isEqualTo(5002);
        assertThat(ErrorCode.TOO_MANY_CONNECTIONS.code()).isEqualTo(6003);
        assertThat(ErrorCode.ofCode(123456)).isEqualTo(ErrorCode.INTERNAL_ERROR);
    }

    @Test
    void expectedFailuresSkipStackCapture() {
        assertThat(new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "late").getStackTrace()).isEmpty();
        assertThat(new ThresherException(ErrorCode.INTERNAL_ERROR, "bug").getStackTrace()).isNotEmpty();
    }
}
