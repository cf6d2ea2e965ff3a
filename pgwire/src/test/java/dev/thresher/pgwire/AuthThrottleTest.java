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
        assertThat(throttle.admit("10.0.0.1", "ann")).isZero();
        assertThat(throttle.admit("10.0.0.1", "ann")).isZero();
    }

    @Test
    void eachFailureDoublesTheWaitUpToItsBound() {
        throttle.failed("10.0.0.1", "ann");
        assertThat(throttle.admit("10.0.0.1", "ann")).isEqualTo(AuthThrottle.BASE_MS);
        for (int i = 0; i < 10; i++) {
            throttle.failed("10.0.0.1", "ann");
        }
        assertThat(AuthThrottle.penaltyMs(11)).isEqualTo(AuthThrottle.MAX_MS);
        assertThat(throttle.admit("10.0.0.1", "ann")).isGreaterThanOrEqualTo(AuthThrottle.MAX_MS);
    }

    @Test
    void parallelAttemptsQueueRatherThanAllWaitingTheSame() {
        for (int i = 0; i < 3; i++) {
            throttle.failed("10.0.0.1", "ann");
        }
        long first = throttle.admit("10.0.0.1", "mallory");
        long second = throttle.admit("10.0.0.1", "mallory2");
        long third = throttle.admit("10.0.0.1", "mallory3");
        assertThat(second).isGreaterThan(first);
        assertThat(third).isGreaterThan(second);
    }

    @Test
    void aUserIsSlowedFromEveryAddressAndAnAddressForEveryUser() {
        throttle.failed("10.0.0.1", "ann");
        assertThat(throttle.admit("10.9.9.9", "ann")).isPositive();
        assertThat(throttle.admit("10.0.0.1", "zed")).isPositive();
        assertThat(throttle.admit("10.9.9.8", "zed")).isZero();
    }

    @Test
    void failuresAreForgottenAfterAQuietMinuteAndMemoryIsBounded() {
        throttle.failed("10.0.0.1", "ann");
        advanceMs(AuthThrottle.FORGET_MS + 1);
        assertThat(throttle.admit("10.0.0.1", "ann")).isZero();
        for (int i = 0; i < AuthThrottle.KEYS * 2; i++) {
            throttle.failed("10.1." + (i >> 8) + "." + (i & 255), "user" + i);
        }
        assertThat(throttle.remembered()).isLessThanOrEqualTo(AuthThrottle.KEYS);
    }
}
