package dev.thresher.limits;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Work counts from before it starts until its outcome's callbacks ran; a start that throws or gives nothing does not. */
class InFlightTest {
    private final InFlight inFlight = new InFlight();

    @Test
    void workCountsUntilTheCallbacksOfItsOutcomeRan() {
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> tracked = inFlight.track(() -> work);
        AtomicInteger countSeenByCallback = new AtomicInteger(-1);
        tracked.whenComplete((v, e) -> countSeenByCallback.set(inFlight.get()));
        assertThat(inFlight.get()).isEqualTo(1);
        work.complete("done");
        assertThat(countSeenByCallback.get()).as("still counted while the outcome is handed on").isEqualTo(1);
        assertThat(inFlight.get()).isZero();
        assertThat(tracked.join()).isEqualTo("done");

        CompletableFuture<String> failing = new CompletableFuture<>();
        CompletableFuture<String> failed = inFlight.track(() -> failing);
        failing.completeExceptionally(new IllegalStateException("no"));
        assertThat(failed).isCompletedExceptionally();
        assertThat(inFlight.get()).isZero();
    }

    @Test
    void aStartThatThrowsOrGivesNothingIsNotCounted() {
        assertThatThrownBy(() -> inFlight.track(() -> {
            throw new IllegalArgumentException("refused");
        })).isInstanceOf(IllegalArgumentException.class);
        assertThat(inFlight.<String>track(() -> null)).isNull();
        assertThat(inFlight.get()).isZero();
    }
}
