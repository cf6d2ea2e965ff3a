package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class AuthThrottleTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final AuthThrottle throttle = new AuthThrottle(now::get);

    private void advanceMs(long ms) {
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    @Test
    void noFailuresNoWait() {
        assertThat(throttle.admit("10.0.0.1")).isZero();
        assertThat(throttle.admit("10.0.0.1")).isZero();
    }

    @Test
    void eachFailureDoublesTheWaitUpToItsBound() {
        throttle.failed("10.0.0.1", "ann");
        assertThat(throttle.admit("10.0.0.1")).isEqualTo(AuthThrottle.BASE_MS);
        for (int i = 0; i < 10; i++) {
            throttle.failed("10.0.0.1", "ann");
        }
        assertThat(AuthThrottle.penaltyMs(11)).isEqualTo(AuthThrottle.MAX_MS);
        assertThat(throttle.admit("10.0.0.1")).isGreaterThanOrEqualTo(AuthThrottle.MAX_MS);
    }

    @Test
    void parallelAttemptsQueueRatherThanAllWaitingTheSame() {
        for (int i = 0; i < 3; i++) {
            throttle.failed("10.0.0.1", "ann");
        }
        long first = throttle.admit("10.0.0.1");
        long second = throttle.admit("10.0.0.1");
        long third = throttle.admit("10.0.0.1");
        assertThat(second).isGreaterThan(first);
        assertThat(third).isGreaterThan(second);
    }

    @Test
    void anAddressIsSlowedForEveryUserAndAUsersFailuresAreAnsweredLateButNeverDelayAnAttempt() {
        // kills: admit keyed on the user name too (a stranger's guesses queued the user's own right password)
        for (int i = 0; i < 6; i++) {
            throttle.failed("10.0.0.1", "ann");
        }
        assertThat(throttle.admit("10.0.0.1")).as("the guessing address, for any user").isPositive();
        assertThat(throttle.admit("10.9.9.9")).as("the user from an address of its own").isZero();
        assertThat(throttle.admit("10.9.9.9")).isZero();
        // a failure for the user is answered after the doubling wait of the user's failures, from any address
        assertThat(throttle.failed("10.9.9.9", "ann")).isEqualTo(AuthThrottle.penaltyMs(7));
        assertThat(throttle.failed("10.9.9.8", "zed")).isEqualTo(AuthThrottle.BASE_MS);
    }

    @Test
    void attemptsAbandonedOnAGuessingAddressDoNotQueueAnyOtherAddress() {
        throttle.failed("10.0.0.1", "ann");
        for (int i = 0; i < 15; i++) {
            throttle.admit("10.0.0.1"); // startups left unanswered: each reserved a turn of its address
        }
        assertThat(throttle.admit("10.0.0.1")).isGreaterThan(AuthThrottle.BASE_MS);
        assertThat(throttle.admit("10.0.0.2")).isZero();
    }

    @Test
    void failuresAreForgottenAfterAQuietMinuteAndMemoryIsBounded() {
        throttle.failed("10.0.0.1", "ann");
        advanceMs(AuthThrottle.FORGET_MS + 1);
        assertThat(throttle.admit("10.0.0.1")).isZero();
        assertThat(throttle.failed("10.0.0.1", "ann")).isEqualTo(AuthThrottle.BASE_MS);
        for (int i = 0; i < AuthThrottle.KEYS * 2; i++) {
            throttle.failed("10.1." + (i >> 8) + "." + (i & 255), "user" + i);
        }
        assertThat(throttle.remembered()).isLessThanOrEqualTo(AuthThrottle.KEYS);
    }
}
