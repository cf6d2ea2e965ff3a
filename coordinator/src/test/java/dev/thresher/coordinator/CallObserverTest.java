package dev.thresher.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ShardRunRow;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.ShardRun;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What the coordinator tells its {@link CallObserver}: each call's end, by resolved binding and outcome, and rejected slots. */
class CallObserverTest {
    private record Ended(Optional<String> binding, ErrorCode failure, long nanos) {}

    private final List<Ended> ended = new CopyOnWriteArrayList<>();
    private final List<ErrorCode> rejected = new CopyOnWriteArrayList<>();
    private final CallObserver observer = new CallObserver() {
        @Override
        public void callEnded(Optional<String> binding, ErrorCode failure, long nanos) {
            ended.add(new Ended(binding, failure, nanos));
        }

        @Override
        public void slotRejected(ErrorCode reason) {
            rejected.add(reason);
        }
    };

    private FakeControl control;
    private FakeLeaders leaders;
    private ExecutorService calls;
    private ExecutorService reduces;
    private Coordinator coordinator;

    @BeforeEach
    void setUp() {
        control = new FakeControl(Plans.BINDING, Plans.topology(3));
        leaders = new FakeLeaders(control);
        control.sendsSoFar = leaders.sent::size;
        calls = Executors.newVirtualThreadPerTaskExecutor();
        reduces = Executors.newFixedThreadPool(2);
        coordinator = new Coordinator("c1", control, control, leaders, new FakeReducer(), Limits.DEFAULTS, calls, reduces,
                Failpoints.disabled(), observer);
    }

    @AfterEach
    void tearDown() {
        calls.shutdownNow();
        reduces.shutdownNow();
    }

    private static ErrorCode failure(CompletableFuture<?> call) {
        try {
            call.get(20, TimeUnit.SECONDS);
            throw new AssertionError("the call succeeded");
        } catch (ExecutionException e) {
            return dev.thresher.errors.ThresherException.of(e.getCause()).code();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void aPublishedCallEndsAsASuccessOfItsBindingAndTheirPhasesAreSummed() throws Exception {
        coordinator.call(CallRequest.of("t", "alice", "b", "{}")).get(20, TimeUnit.SECONDS);

        assertThat(ended).singleElement().satisfies(e -> {
            assertThat(e.binding()).contains("b");
            assertThat(e.failure()).isNull();
            assertThat(e.nanos()).isPositive();
        });
        assertThat(rejected).isEmpty();
        assertThat(coordinator.phases().calls()).isEqualTo(1);
        assertThat(coordinator.phases().totalNanos(CallPhases.Phase.PLAN)).isPositive();
        assertThat(coordinator.phases().totalNanos(CallPhases.Phase.GUEST))
                .as("the leaders' reported guest time").isEqualTo(3 * TimeUnit.MICROSECONDS.toNanos(20));
        assertThat(coordinator.hostRequestsOut()).isZero();
        assertThat(coordinator.hostRequestsWaiting()).isZero();
    }

    @Test
    void aCallThatEndsBeforeItsBindingIsResolvedNamesNoBinding() {
        assertThat(failure(coordinator.call(CallRequest.of("t", "alice", "nope", "{}")))).isEqualTo(ErrorCode.UNKNOWN_BINDING);
        assertThat(failure(coordinator.call(CallRequest.of("t", "alice", "b", "{not json"))))
                .isEqualTo(ErrorCode.INVALID_ARGUMENTS);

        assertThat(ended).extracting(Ended::binding).containsOnly(Optional.empty());
        assertThat(ended).extracting(Ended::failure).containsExactlyInAnyOrder(ErrorCode.UNKNOWN_BINDING,
                ErrorCode.INVALID_ARGUMENTS);
        assertThat(coordinator.phases().calls()).as("only published calls have phases").isZero();
    }

    @Test
    void aSlotRejectedBeforeReduceIsToldWithItsReasonAndTheCallEndsWithIt() {
        // every slot is published with its lease already ended
        leaders.answer = (host, req) -> {
            HostReply reply = leaders.reply(host, req, Map.of());
            for (ShardRun slot : req.runs()) {
                control.publishShardRun(UUID.fromString(req.callId()), new ShardRunRow(slot.runIndex(), slot.partitionId(),
                        slot.epoch(), slot.wireId(), host, 1, 1, 1, PartialsCodec.encode(List.of(
                        new dev.thresher.bindings.Partial("p" + slot.partitionId(), 1))), false, slot.epoch()));
            }
            return CompletableFuture.completedFuture(reply);
        };

        assertThat(failure(coordinator.call(CallRequest.of("t", "alice", "b", "{}")))).isEqualTo(ErrorCode.SLOT_EXPIRED);

        assertThat(rejected).containsExactly(ErrorCode.SLOT_EXPIRED);
        assertThat(ShardRunValidator.REASONS).contains(ErrorCode.SLOT_EXPIRED);
        assertThat(ended).singleElement().satisfies(e -> {
            assertThat(e.binding()).contains("b");
            assertThat(e.failure()).isEqualTo(ErrorCode.SLOT_EXPIRED);
        });
    }

    @Test
    void anObserverThatThrowsDoesNotChangeTheCall() throws Exception {
        Coordinator c = new Coordinator("c1", control, control, leaders, new FakeReducer(), Limits.DEFAULTS, calls, reduces,
                Failpoints.disabled(), new CallObserver() {
                    @Override
                    public void callEnded(Optional<String> binding, ErrorCode failure, long nanos) {
                        throw new IllegalStateException("observer broken");
                    }

                    @Override
                    public void slotRejected(ErrorCode reason) {
                        throw new IllegalStateException("observer broken");
                    }
                });

        assertThat(c.call(CallRequest.of("t", "alice", "b", "{}")).get(20, TimeUnit.SECONDS).resultJson()).isNotEmpty();
        assertThatThrownBy(() -> c.call(CallRequest.of("t", "alice", "nope", "{}")).get(20, TimeUnit.SECONDS))
                .hasCauseInstanceOf(dev.thresher.errors.ThresherException.class);
    }
}
