package dev.thresher.server.node;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class FrontDoorCallsTest {
    private static final CallRequest REQUEST = CallRequest.of("default", "p", "b", "{}");

    @Test
    void aCallCountsUntilItsAnswerIsHandedToTheFrontDoor() {
        CompletableFuture<CallResult> coordinator = new CompletableFuture<>();
        FrontDoorCalls calls = new FrontDoorCalls("n1", r -> coordinator);
        CompletableFuture<CallResult> answer = calls.call(REQUEST);
        AtomicInteger countSeenByTheDoor = new AtomicInteger(-1);
        answer.whenComplete((r, e) -> countSeenByTheDoor.set(calls.inFlight()));
        assertThat(calls.inFlight()).isEqualTo(1);
        coordinator.complete(new CallResult("c1", "{}"));
        assertThat(answer).isCompletedWithValue(new CallResult("c1", "{}"));
        assertThat(countSeenByTheDoor).as("still counted while the door takes the answer").hasValue(1);
        assertThat(calls.inFlight()).isZero();
    }

    @Test
    void aFailedCallIsPassedOnAndNoLongerCounted() {
        CompletableFuture<CallResult> coordinator = new CompletableFuture<>();
        FrontDoorCalls calls = new FrontDoorCalls("n1", r -> coordinator);
        CompletableFuture<CallResult> answer = calls.call(REQUEST);
        coordinator.completeExceptionally(new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "late"));
        assertThat(answer).isCompletedExceptionally();
        assertThat(ThresherException.of(answer.handle((r, e) -> e).join()).code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
        assertThat(calls.inFlight()).isZero();
    }

    @Test
    void onceStoppedNewCallsAreRefusedAsHostUnreachableAndNeverReachTheCoordinator() {
        AtomicInteger reached = new AtomicInteger();
        FrontDoorCalls calls = new FrontDoorCalls("n1", r -> {
            reached.incrementAndGet();
            return new CompletableFuture<>();
        });
        CompletableFuture<CallResult> inFlight = calls.call(REQUEST);
        calls.stopAdmitting();
        CompletableFuture<CallResult> refused = calls.call(REQUEST);
        ThresherException e = ThresherException.of(refused.handle((r, x) -> x).join());
        assertThat(e.code()).isEqualTo(ErrorCode.HOST_UNREACHABLE);
        assertThat(e.getMessage()).contains("node n1 is stopping");
        assertThat(reached).hasValue(1);
        assertThat(inFlight).isNotDone();
        assertThat(calls.inFlight()).as("the call admitted before still counts").isEqualTo(1);
    }
}
