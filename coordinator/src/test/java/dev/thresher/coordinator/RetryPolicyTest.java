package dev.thresher.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.coordinator.RetryPolicy.Verdict;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class RetryPolicyTest {

    @Test
    void aRetryableRefusalThatProvablyRanNothingIsRetriedWhileTheBudgetLasts() {
        assertThat(RetryPolicy.decide(ErrorCode.TARGET_STALE, true, 1, 2, false, false)).isEqualTo(Verdict.RETRY);
        assertThat(RetryPolicy.decide(ErrorCode.HOST_UNREACHABLE, true, 1, 3, false, false)).isEqualTo(Verdict.RETRY);
        assertThat(RetryPolicy.decide(ErrorCode.HOST_UNREACHABLE, true, 2, 3, false, false)).isEqualTo(Verdict.RETRY);
    }

    @Test
    void theBudgetCountsTheFirstAttempt() {
        assertThat(RetryPolicy.decide(ErrorCode.TARGET_STALE, true, 2, 2, false, false)).isEqualTo(Verdict.BUDGET_SPENT);
        assertThat(RetryPolicy.decide(ErrorCode.TARGET_STALE, true, 1, 1, false, false)).isEqualTo(Verdict.BUDGET_SPENT);
    }

    @Test
    void aRetryableFailureAfterTheGuestMayHaveRunIsNotRetried() {
        assertThat(RetryPolicy.decide(ErrorCode.TARGET_STALE, false, 1, 2, false, false))
                .isEqualTo(Verdict.GUEST_MAY_HAVE_RUN);
    }

    @ParameterizedTest
    @EnumSource(ErrorCode.class)
    void onlyRetryableCodesAreEverRetried(ErrorCode code) {
        Verdict v = RetryPolicy.decide(code, true, 1, 2, false, false);
        assertThat(v.retry()).isEqualTo(code.retryClass() == RetryClass.RETRYABLE);
        if (code.retryClass() == RetryClass.AMBIGUOUS) {
            assertThat(v).isEqualTo(Verdict.AMBIGUOUS);
        }
        if (code.retryClass() == RetryClass.TERMINAL) {
            assertThat(v).isEqualTo(Verdict.TERMINAL);
        }
    }

    @Test
    void nothingIsSentAfterAnotherSlotFailedOrPastTheDeadline() {
        assertThat(RetryPolicy.decide(ErrorCode.TARGET_STALE, true, 1, 2, true, false)).isEqualTo(Verdict.CALL_STOPPED);
        assertThat(RetryPolicy.decide(ErrorCode.TARGET_STALE, true, 1, 2, false, true))
                .isEqualTo(Verdict.DEADLINE_PASSED);
    }

    @Test
    void ambiguousIsNeverRetriedWhateverElseHolds() {
        assertThat(Arrays.stream(ErrorCode.values()).filter(c -> c.retryClass() == RetryClass.AMBIGUOUS))
                .isNotEmpty()
                .allSatisfy(c -> assertThat(RetryPolicy.decide(c, true, 1, 10, false, false).retry()).isFalse());
    }
}
