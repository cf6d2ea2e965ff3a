package dev.thresher.failpoints;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoints.Action;
import dev.thresher.failpoints.Failpoints.Outcome;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class FailpointsTest {
    private static final Site P1 = new Site("n1", 1, 0, "w0");
    private static final Site P2 = new Site("n1", 2, 1, "w1");

    @Test
    void disabledInstanceProceedsCountsNothingAndCannotBeArmed() {
        Failpoints f = Failpoints.disabled();
        assertThat(f.hit(Failpoint.WIRE_SEND, P1)).isEqualTo(Outcome.PROCEED);
        assertThat(f.hits(Failpoint.WIRE_SEND)).isZero();
        assertThatThrownBy(() -> f.arm(Failpoint.WIRE_SEND, 1, Action.drop())).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void failFiresOnSelectedSitesTheArmedNumberOfTimes() {
        Failpoints f = Failpoints.enabled();
        f.arm(Failpoint.BEFORE_GUEST_START, s -> s.partitionId() == 2, 1, Action.fail(ErrorCode.TARGET_STALE));
        assertThat(f.hit(Failpoint.BEFORE_GUEST_START, P1)).isEqualTo(Outcome.PROCEED);
        assertThatThrownBy(() -> f.hit(Failpoint.BEFORE_GUEST_START, P2)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.TARGET_STALE));
        assertThat(f.hit(Failpoint.BEFORE_GUEST_START, P2)).isEqualTo(Outcome.PROCEED);
        assertThat(f.hits(Failpoint.BEFORE_GUEST_START)).isEqualTo(3);
        assertThat(f.fired(Failpoint.BEFORE_GUEST_START)).isEqualTo(1);
    }

    @Test
    void severalActionsAtOnePointEachTakeTheHitsTheySelect() {
        Failpoints f = Failpoints.enabled();
        f.arm(Failpoint.AFTER_GUEST_START, s -> s.runIndex() == 0, 1, Action.fail(ErrorCode.GUEST_TRAP));
        f.arm(Failpoint.AFTER_GUEST_START, s -> s.runIndex() == 1, 1,
                Action.failAfter(java.time.Duration.ofMillis(1), ErrorCode.GUEST_REPORTED_FAILURE));
        assertThatThrownBy(() -> f.hit(Failpoint.AFTER_GUEST_START, P2)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE));
        assertThatThrownBy(() -> f.hit(Failpoint.AFTER_GUEST_START, P1)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP));
        assertThat(f.hit(Failpoint.AFTER_GUEST_START, P1)).isEqualTo(Outcome.PROCEED);
    }

    @Test
    void resetDisarmsReleasesAndZeroesTheCounts() throws Exception {
        Failpoints f = Failpoints.enabled();
        Action hold = Action.halt();
        f.arm(Failpoint.BEFORE_REDUCE, 1, hold);
        CompletableFuture<Outcome> held = CompletableFuture.supplyAsync(() -> f.hit(Failpoint.BEFORE_REDUCE, P1));
        while (f.fired(Failpoint.BEFORE_REDUCE) == 0) {
            Thread.onSpinWait();
        }
        f.arm(Failpoint.WIRE_SEND, -1, Action.drop());
        f.reset();
        assertThat(held.get(10, TimeUnit.SECONDS)).isEqualTo(Outcome.PROCEED);
        assertThat(f.hits(Failpoint.BEFORE_REDUCE)).isZero();
        assertThat(f.fired(Failpoint.BEFORE_REDUCE)).isZero();
        assertThat(f.hit(Failpoint.WIRE_SEND, P1)).isEqualTo(Outcome.PROCEED);
        assertThat(f.fired(Failpoint.WIRE_SEND)).isZero();
    }

    @Test
    void dropIsReportedToTheCallerUntilDisarmed() {
        Failpoints f = Failpoints.enabled();
        f.arm(Failpoint.WIRE_RECEIVE, -1, Action.drop());
        assertThat(f.hit(Failpoint.WIRE_RECEIVE, P1)).isEqualTo(Outcome.DROP);
        assertThat(f.hit(Failpoint.WIRE_RECEIVE, P2)).isEqualTo(Outcome.DROP);
        f.disarm(Failpoint.WIRE_RECEIVE);
        assertThat(f.hit(Failpoint.WIRE_RECEIVE, P1)).isEqualTo(Outcome.PROCEED);
    }

    @Test
    void haltHoldsUntilReleased() throws Exception {
        Failpoints f = Failpoints.enabled();
        Action halt = Action.halt();
        f.arm(Failpoint.BEFORE_REDUCE, 1, halt);
        CompletableFuture<Outcome> held = CompletableFuture.supplyAsync(() -> f.hit(Failpoint.BEFORE_REDUCE, P1));
        while (f.fired(Failpoint.BEFORE_REDUCE) == 0) {
            Thread.onSpinWait();
        }
        assertThat(held).isNotDone();
        f.release(halt);
        assertThat(held.get(10, TimeUnit.SECONDS)).isEqualTo(Outcome.PROCEED);
    }

    @Test
    void haltThenFailHoldsUntilReleasedThenFails() throws Exception {
        Failpoints f = Failpoints.enabled();
        Action halt = Action.haltThenFail(ErrorCode.TARGET_STALE);
        f.arm(Failpoint.WIRE_RECEIVE, 1, halt);
        CompletableFuture<Outcome> held = CompletableFuture.supplyAsync(() -> f.hit(Failpoint.WIRE_RECEIVE, P1));
        while (f.fired(Failpoint.WIRE_RECEIVE) == 0) {
            Thread.onSpinWait();
        }
        assertThat(held).isNotDone();
        f.release(halt);
        assertThatThrownBy(() -> held.get(10, TimeUnit.SECONDS)).cause().isInstanceOf(ThresherException.class)
                .satisfies(e -> assertThat(((ThresherException) e).code()).isEqualTo(ErrorCode.TARGET_STALE));
        // used up: the next hit proceeds
        assertThat(f.hit(Failpoint.WIRE_RECEIVE, P1)).isEqualTo(Outcome.PROCEED);
    }
}
