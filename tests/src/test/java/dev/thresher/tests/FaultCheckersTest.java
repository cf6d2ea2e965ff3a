package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.tests.FaultCalls.Call;
import dev.thresher.tests.FaultCalls.Kind;
import dev.thresher.tests.FaultCheckers.FaultRun;
import java.sql.Timestamp;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The fault suite's checkers that need no cluster fail on what they are meant to catch, and only on that. */
class FaultCheckersTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);
    private static final long INJECT = 100 * S;
    private static final long HEAL = 110 * S;

    private static Call ok(double startS, double endS) {
        return new Call(0, (long) (startS * S), (long) (endS * S), Kind.SUCCESS, "id", "{}", null, null, null, null, null);
    }

    private static Call error(double startS, double endS) {
        return new Call(0, (long) (startS * S), (long) (endS * S), Kind.ERROR, "id", null, null, "57014", 5001, "late",
                "TERMINAL");
    }

    private static FaultRun run(boolean hitsCoordinator, Call... calls) {
        return new FaultRun("f", "f", 4_000, 10_000, 0, List.of(calls), 0, INJECT, HEAL, new Timestamp(0), true,
                hitsCoordinator, "");
    }

    @Test
    void anAnswerPastTheDeadlinePlusOneSecondFailsCheckerFiveUnlessItsCoordinatorWasStoppedUnderIt() {
        assertThat(FaultCheckers.answersWithinDeadline(run(false, ok(90, 94.9), error(101, 105))).passed()).isTrue();
        assertThat(FaultCheckers.answersWithinDeadline(run(false, error(101, 106.2))).passed()).isFalse();
        assertThat(FaultCheckers.answersWithinDeadline(run(true, error(101, 112))).passed()).isTrue();
        assertThat(FaultCheckers.answersWithinDeadline(run(true, error(111, 117))).passed())
                .as("a call started after the heal counts whatever the fault was").isFalse();
    }

    @Test
    void checkerSevenWantsASuccessStartedAfterTheHealWithinTenSecondsAndNoFailureAfterThat() {
        assertThat(FaultCheckers.recovery(run(false, ok(111, 112))).passed()).isTrue();
        assertThat(FaultCheckers.recovery(run(false, ok(90, 91), error(111, 115))).passed()).isFalse();
        assertThat(FaultCheckers.recovery(run(false, ok(119, 120.5))).passed()).as("10.5 s after the heal").isFalse();
        assertThat(FaultCheckers.recovery(run(false, ok(111, 112), error(121, 125))).passed()).isFalse();
    }
}
