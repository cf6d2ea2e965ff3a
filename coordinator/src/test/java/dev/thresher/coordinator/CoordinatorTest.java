package dev.thresher.coordinator;

import static dev.thresher.coordinator.FakeLeaders.Failure.notStarted;
import static dev.thresher.coordinator.FakeLeaders.Failure.started;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.Partial;
import dev.thresher.coordinator.FakeLeaders.Sent;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.topology.Leadership;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRun;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The coordinator's logic over in-memory ports: dispatch, retry, admission, stop, the lowest slot's
 * cause, binding and lease fences. No database, no guest engine, no network.
 *
 * <p>{@link Plans#topology} puts slot {@code i} on partition {@code 100 - i}, led by {@code h(i % 3 + 1)}
 * under epoch 7.
 */
class CoordinatorTest {
    private static final Binding V1 = Plans.BINDING;
    private static final Binding V2 = new Binding("t", "b", 2, "sha256:" + "cd".repeat(32), V1.selector());

    private FakeControl control;
    private FakeLeaders leaders;
    private FakeReducer reducer;
    private ExecutorService calls;
    private ExecutorService reduces;

    @BeforeEach
    void setUp() {
        control = new FakeControl(V1, Plans.topology(3));
        leaders = new FakeLeaders(control);
        control.sendsSoFar = leaders.sent::size;
        reducer = new FakeReducer();
        calls = Executors.newVirtualThreadPerTaskExecutor();
        reduces = Executors.newFixedThreadPool(2);
    }

    @AfterEach
    void tearDown() {
        calls.shutdownNow();
        reduces.shutdownNow();
    }

    private Coordinator coordinator() {
        return coordinator(Limits.DEFAULTS);
    }

    private Coordinator coordinator(Limits limits) {
        return new Coordinator("c1", control, control, leaders, reducer, limits, calls, reduces, Failpoints.disabled());
    }

    private static CallRequest request() {
        return CallRequest.of("t", "alice", "b", "{}");
    }

    private static CallResult result(CompletableFuture<CallResult> call) throws Exception {
        return call.get(20, TimeUnit.SECONDS);
    }

    private static ThresherException failure(CompletableFuture<CallResult> call) throws Exception {
        try {
            CallResult r = call.get(20, TimeUnit.SECONDS);
            throw new AssertionError("the call succeeded: " + r);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(ThresherException.class);
            return (ThresherException) e.getCause();
        }
    }

    private static CompletableFuture<HostReply> done(HostReply reply) {
        return CompletableFuture.completedFuture(reply);
    }

    /** {@code base} with partition {@code partitionId} at {@code epoch}, led by {@code host}. */
    private static Topology moved(Topology base, int partitionId, String host, long epoch) {
        List<Partition> partitions = base.partitions().stream().map(p -> p.id() != partitionId ? p
                : new Partition(p.id(), p.tenant(), p.table(), p.slotLo(), p.slotHi(), p.shardId(), epoch)).toList();
        Map<Integer, Leadership> leaders = new HashMap<>(base.leaders());
        leaders.put(partitionId, new Leadership(partitionId, host, epoch, Plans.NOW.plusSeconds(30)));
        return new Topology(partitions, leaders, base.hosts(), base.readAt());
    }

    @Test
    void aCallOverThreeHostsSendsOneRequestPerHostWithItsSlotsInSlotOrderAndPublishesWhatReduceReturned()
            throws Exception {
        control.topology(Plans.topology(6));
        Coordinator coordinator = coordinator();

        CallResult r = result(coordinator.call(request()));

        assertThat(leaders.sent).hasSize(3);
        Map<String, List<Integer>> slotsByHost = Map.of("h1", List.of(0, 3), "h2", List.of(1, 4), "h3", List.of(2, 5));
        slotsByHost.forEach((host, slots) -> {
            assertThat(leaders.sentTo(host)).hasSize(1);
            HostRequest req = leaders.sentTo(host).get(0).request();
            assertThat(req.callId()).isEqualTo(r.callId());
            assertThat(req.tenant()).isEqualTo("t");
            assertThat(req.bindingName()).isEqualTo("b");
            assertThat(req.bindingVersion()).isEqualTo(1);
            assertThat(req.componentDigest()).isEqualTo(V1.componentDigest());
            assertThat(req.remainingBudgetMicros()).isPositive().isLessThanOrEqualTo(30_000_000);
            assertThat(req.runs()).extracting(ShardRun::runIndex).containsExactlyElementsOf(slots);
            for (ShardRun s : req.runs()) {
                assertThat(s.partitionId()).isEqualTo(100 - s.runIndex());
                assertThat(s.epoch()).isEqualTo(7);
                assertThat(s.wireId()).isEqualTo(r.callId() + "/shard/" + s.runIndex());
                assertThat(s.attempt()).isEqualTo(1);
            }
        });
        assertThat(reducer.inputs).hasSize(1);
        List<Partial> merged = reducer.inputs.get(0);
        assertThat(merged).isSorted().extracting(Partial::key)
                .containsExactlyInAnyOrder("p100", "p99", "p98", "p97", "p96", "p95");
        assertThat(reducer.digests).containsExactly(V1.componentDigest());
        assertThat(r.resultJson()).isEqualTo(FakeReducer.asJson(merged).resultJson());
        FakeControl.Invocation inv = control.invocations.get(UUID.fromString(r.callId()));
        assertThat(inv.state).isEqualTo("succeeded");
        assertThat(inv.result).isEqualTo(r.resultJson());
        assertThat(control.journaled("t", r.callId() + "/reduce")).get().satisfies(j -> {
            assertThat(j.succeeded()).isTrue();
            assertThat(new String(j.payload(), StandardCharsets.UTF_8)).isEqualTo(r.resultJson());
        });
        assertThat(control.startReduces).hasValue(1);
        assertThat(control.publishes).hasValue(1);
        assertThat(control.refreshes).hasValue(0);
        assertThat(leaders.stops).isEmpty();
        assertThat(coordinator.shardRetries()).isZero();
        assertThat(coordinator.failedShardRuns()).isZero();
    }

    @Test
    void aRetryableSlotThatProvablyRanNoGuestIsSentOnceMoreToItsReResolvedLeaderAndTheCallSucceeds() throws Exception {
        control.dbTopology(moved(Plans.topology(3), 99, "h3", 8)); // the cache still says h2, epoch 7
        leaders.answer = (host, req) -> done(leaders.reply(host, req,
                host.equals("h2") ? Map.of(1, notStarted(ErrorCode.TARGET_STALE)) : Map.of()));
        Coordinator coordinator = coordinator();

        CallResult r = result(coordinator.call(request()));

        assertThat(leaders.sent).hasSize(4);
        assertThat(leaders.carrying(1)).hasSize(2);
        Sent again = leaders.carrying(1).get(1);
        assertThat(again.host()).isEqualTo("h3");
        assertThat(again.request().runs()).singleElement().satisfies(s -> {
            assertThat(s.runIndex()).isEqualTo(1);
            assertThat(s.partitionId()).isEqualTo(99);
            assertThat(s.epoch()).isEqualTo(8);
            assertThat(s.attempt()).isEqualTo(2);
            assertThat(s.wireId()).isEqualTo(r.callId() + "/shard/1");
        });
        assertThat(coordinator.shardRetries()).isEqualTo(1);
        assertThat(coordinator.failedShardRuns()).isZero();
        assertThat(control.refreshes).hasValue(1);
        assertThat(reducer.inputs.get(0)).extracting(Partial::key).containsExactly("p100", "p98", "p99");
    }

    @Test
    void aRetryableFailureAfterTheGuestStartedIsNotRetriedAndFailsTheCall() throws Exception {
        leaders.answer = (host, req) -> done(leaders.reply(host, req,
                host.equals("h2") ? Map.of(1, started(ErrorCode.TARGET_STALE)) : Map.of()));
        Coordinator coordinator = coordinator();

        ThresherException e = failure(coordinator.call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(e.getMessage()).contains("slot 1");
        assertThat(e.guestCodeRan()).isTrue();
        assertThat(leaders.carrying(1)).hasSize(1);
        assertThat(leaders.sent).hasSizeLessThanOrEqualTo(3);
        assertThat(control.refreshes).hasValue(0);
        assertThat(coordinator.shardRetries()).isZero();
        assertThat(coordinator.failedShardRuns()).isEqualTo(1);
        assertThat(control.startReduces).hasValue(0);
        assertThat(control.onlyInvocation().getValue().error).isEqualTo(ErrorCode.TARGET_STALE);
    }

    @Test
    void anAmbiguousTransportOutcomeIsNeverRetried() throws Exception {
        leaders.answer = (host, req) -> host.equals("h2")
                ? CompletableFuture.failedFuture(new ThresherException(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN,
                        "connection lost after the request was written"))
                : done(leaders.reply(host, req, Map.of()));
        Coordinator coordinator = coordinator();

        ThresherException e = failure(coordinator.call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
        assertThat(e.guestCodeRan()).isTrue();
        assertThat(leaders.carrying(1)).hasSize(1);
        assertThat(leaders.sent).hasSizeLessThanOrEqualTo(3);
        assertThat(control.refreshes).hasValue(0);
        assertThat(coordinator.shardRetries()).isZero();
        assertThat(control.onlyInvocation().getValue().error).isEqualTo(ErrorCode.TRANSPORT_OUTCOME_UNKNOWN);
    }

    @Test
    void aRequestThatNeverLeftSendsEverySlotOfThatHostAgain() throws Exception {
        Topology six = Plans.topology(6);
        control.topology(six);
        control.dbTopology(moved(moved(six, 99, "h3", 8), 96, "h3", 8)); // h2's partitions moved to h3
        AtomicBoolean unreachable = new AtomicBoolean(true);
        leaders.answer = (host, req) -> host.equals("h2") && unreachable.getAndSet(false)
                ? CompletableFuture.failedFuture(new ThresherException(ErrorCode.HOST_UNREACHABLE, "connection refused"))
                : done(leaders.reply(host, req, Map.of()));
        Coordinator coordinator = coordinator();

        CallResult r = result(coordinator.call(request()));

        assertThat(r.resultJson()).contains("p99", "p96");
        assertThat(leaders.sent).hasSize(4);
        assertThat(leaders.sentTo("h2")).hasSize(1);
        assertThat(leaders.sentTo("h3")).hasSize(2);
        Sent again = leaders.sentTo("h3").stream().filter(s -> s.runIndexes().contains(1)).findFirst().orElseThrow();
        assertThat(again.runIndexes()).containsExactly(1, 4);
        assertThat(again.attempts()).containsExactly(2, 2);
        assertThat(again.request().runs()).extracting(ShardRun::epoch).containsExactly(8L, 8L);
        assertThat(coordinator.shardRetries()).isEqualTo(2);
    }

    @Test
    void theAttemptBudgetIsTwoAttemptsInAll() throws Exception {
        assertThat(Limits.DEFAULTS.attemptBudget()).isEqualTo(2);
        leaders.answer = (host, req) -> done(leaders.reply(host, req,
                host.equals("h2") ? Map.of(1, notStarted(ErrorCode.TARGET_STALE)) : Map.of()));
        Coordinator coordinator = coordinator();

        ThresherException e = failure(coordinator.call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(leaders.carrying(1)).hasSize(2);
        assertThat(leaders.carrying(1)).extracting(Sent::attempts).containsExactly(List.of(1), List.of(2));
        assertThat(coordinator.shardRetries()).isEqualTo(1);
        assertThat(coordinator.failedShardRuns()).isEqualTo(1);
    }

    /** Order in which the held replies of slots 0, 1, 2 (on h1, h2, h3) complete. */
    @ParameterizedTest
    @ValueSource(strings = {"2,1,0", "1,2,0", "0,1,2", "2,0,1", "1,0,2"})
    void severalFailuresSurfaceTheLowestStartedSlotWhateverTheArrivalOrder(String order) throws Exception {
        leaders.answer = leaders::hold;
        Map<Integer, ErrorCode> codes = Map.of(0, ErrorCode.GUEST_TRAP, 1, ErrorCode.GUEST_REPORTED_FAILURE,
                2, ErrorCode.GUEST_INVALID_RESULT);
        Coordinator coordinator = coordinator();
        CompletableFuture<CallResult> call = coordinator.call(request());
        Map<Integer, Sent> bySlot = new HashMap<>();
        for (int i = 0; i < 3; i++) {
            Sent s = leaders.nextHeld();
            bySlot.put(s.runIndexes().get(0), s);
        }

        List<Integer> slots = Arrays.stream(order.split(",")).map(Integer::parseInt).toList();
        for (int k = 0; k < slots.size(); k++) {
            int slot = slots.get(k);
            leaders.complete(bySlot.get(slot), Map.of(slot, started(codes.get(slot))));
            if (k == 0) {
                leaders.nextStopped(); // the first failure has been judged before the next one arrives
                leaders.nextStopped();
            }
        }

        ThresherException e = failure(call);
        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP);
        assertThat(e.getMessage()).contains("slot 0");
        assertThat(coordinator.failedShardRuns()).isEqualTo(3);
    }

    @Test
    void aSlotFailedForGoodStopsTheOtherHostsOnceAndASlotNotStartedAfterTheStopIsNoCause() throws Exception {
        leaders.answer = leaders::hold;
        Coordinator coordinator = coordinator();
        CompletableFuture<CallResult> call = coordinator.call(request());
        Map<String, Sent> byHost = new HashMap<>();
        for (int i = 0; i < 3; i++) {
            Sent s = leaders.nextHeld();
            byHost.put(s.host(), s);
        }

        leaders.complete(byHost.get("h2"), Map.of(1, started(ErrorCode.GUEST_TRAP)));
        assertThat(List.of(leaders.nextStopped(), leaders.nextStopped())).containsExactlyInAnyOrder("h1", "h3");
        leaders.complete(byHost.get("h3"), Map.of(2, started(ErrorCode.GUEST_REPORTED_FAILURE)));
        // h1 had not started slot 0 when the stop reached it
        leaders.complete(byHost.get("h1"), Map.of(0, notStarted(ErrorCode.DEADLINE_EXCEEDED)));

        ThresherException e = failure(call);
        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP);
        assertThat(e.getMessage()).contains("slot 1");
        String callId = control.onlyInvocation().getKey().toString();
        assertThat(leaders.stops).containsExactlyInAnyOrder("h1 " + callId, "h3 " + callId);
        assertThat(coordinator.failedShardRuns()).isEqualTo(2);
        assertThat(coordinator.shardRetries()).isZero();
        assertThat(control.onlyInvocation().getValue().error).isEqualTo(ErrorCode.GUEST_TRAP);
    }

    @Test
    void aSlotWhoseReResolutionFailsForGoodStopsTheOtherHosts() throws Exception {
        Topology three = Plans.topology(3);
        List<Partition> without99 = three.partitions().stream().filter(p -> p.id() != 99).toList();
        control.dbTopology(new Topology(without99, three.leaders(), three.hosts(), three.readAt()));
        // h1 (sent first, in slot order) is still running when slot 1 fails; h3 may not have been admitted yet
        leaders.answer = (host, req) -> switch (host) {
            case "h1" -> leaders.hold(host, req);
            case "h2" -> done(leaders.reply(host, req, Map.of(1, notStarted(ErrorCode.TARGET_STALE))));
            default -> done(leaders.reply(host, req, Map.of()));
        };
        Coordinator coordinator = coordinator();
        CompletableFuture<CallResult> call = coordinator.call(request());
        Sent running = leaders.nextHeld();

        assertThat(List.of(leaders.nextStopped(), leaders.nextStopped())).containsExactlyInAnyOrder("h1", "h3");
        leaders.complete(running, Map.of());

        // The partition is gone: the call is planned again, and the table no longer tiles.
        ThresherException e = failure(call);
        assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE);
        assertThat(coordinator.replans()).isEqualTo(1);
        assertThat(leaders.carrying(1)).hasSize(1);
        assertThat(coordinator.failedShardRuns()).isEqualTo(1);
    }

    @Test
    void aDeadlinePassedWhileWaitingIsTheAnswerEvenWhenTheLeaderWasAlsoReplaced() throws Exception {
        // kills: awaitReply's deadline check before the superseded check (a coordinator stalled past its deadline
        // answered a retryable stale target long after it)
        leaders.answer = (host, req) -> {
            if (host.equals("h2")) {
                control.topology(moved(Plans.topology(3), 99, "h3", 8)); // replaced as soon as it was sent
                return leaders.hold(host, req);
            }
            return done(leaders.reply(host, req, Map.of()));
        };
        ThresherException e = failure(coordinator().call(request(200)));
        assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
    }

    @Test
    void aRequestToALeaderThatWasReplacedIsGivenUpWhenTheCacheSeesTheNewEpochNotAtTheDeadline() throws Exception {
        // h2 froze holding partition 99's slot; another host took its lease over, moving the partition to epoch 8
        leaders.answer = (host, req) -> host.equals("h2") ? leaders.hold(host, req) : done(leaders.reply(host, req, Map.of()));
        Coordinator coordinator = coordinator();
        long started = System.nanoTime();
        CompletableFuture<CallResult> call = coordinator.call(request(20_000));
        Sent frozen = leaders.nextHeld();
        control.topology(moved(Plans.topology(3), 99, "h3", 8));

        ThresherException e = failure(call);
        assertThat(e.code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(e.getMessage()).contains("new epoch");
        assertThat(e.guestCodeRan()).as("the frozen leader may have started its guest").isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(10_000);
        assertThat(frozen.reply().isCancelled()).isTrue();
        assertThat(coordinator.supersededRequests()).isEqualTo(1);
        assertThat(control.publishes).hasValue(0);
    }

    @Test
    void aRequestToALeaderThatTookItsPartitionAgainUnderANewEpochIsAnsweredByItAndRetried() throws Exception {
        // h2 leads partition 99 again under epoch 8 (its lease lapsed and it took it back): it is alive, so its
        // answer is waited for, and its epoch fence refusing the slot before any guest leaves the slot retryable
        leaders.answer = (host, req) -> host.equals("h2") ? leaders.hold(host, req) : done(leaders.reply(host, req, Map.of()));
        Coordinator coordinator = coordinator();
        CompletableFuture<CallResult> call = coordinator.call(request(20_000));
        Sent first = leaders.nextHeld();
        control.topology(moved(Plans.topology(3), 99, "h2", 8));
        // the coordinator looked at the cache, which shows the new epoch, while the request was out
        int reads = control.cachedTopologyReads.get();
        while (control.cachedTopologyReads.get() < reads + 2 && !call.isDone()) {
            Thread.onSpinWait();
        }
        assertThat(call).isNotDone();
        leaders.complete(first, Map.of(1, notStarted(ErrorCode.TARGET_STALE)));
        Sent second = leaders.nextHeld();
        assertThat(second.request().runs()).singleElement().satisfies(s -> assertThat(s.epoch()).isEqualTo(8));
        leaders.complete(second, Map.of());

        result(call);
        assertThat(coordinator.supersededRequests()).isZero();
        assertThat(coordinator.shardRetries()).isEqualTo(1);
    }

    @Test
    void aSlotWhosePartitionWasSplitIsPlannedAgainAsANewInvocationThatCoversBothHalves() throws Exception {
        Topology three = Plans.topology(3);
        Partition p99 = three.partition(99).orElseThrow();
        int mid = (p99.slotLo() + p99.slotHi()) / 2;
        List<Partition> split = new java.util.ArrayList<>(three.partitions().stream().filter(p -> p.id() != 99).toList());
        split.add(new Partition(99, p99.tenant(), p99.table(), p99.slotLo(), mid, p99.shardId(), 8));
        split.add(new Partition(50, p99.tenant(), p99.table(), mid + 1, p99.slotHi(), p99.shardId(), 8));
        Map<Integer, Leadership> leads = new HashMap<>(three.leaders());
        leads.put(99, new Leadership(99, "h2", 8, Plans.NOW.plusSeconds(30)));
        leads.put(50, new Leadership(50, "h2", 8, Plans.NOW.plusSeconds(30)));
        control.dbTopology(new Topology(split, leads, three.hosts(), three.readAt()));
        // the first plan's slot 1 (partition 99 at epoch 7) is refused by h2: it leads 99 at epoch 8 only
        leaders.answer = (host, req) -> done(leaders.reply(host, req, req.runs().stream()
                .filter(sl -> sl.epoch() == 7 && sl.partitionId() == 99)
                .collect(java.util.stream.Collectors.toMap(ShardRun::runIndex, sl -> notStarted(ErrorCode.TARGET_STALE)))));
        Coordinator coordinator = coordinator();

        CallResult r = result(coordinator.call(request()));

        assertThat(coordinator.replans()).isEqualTo(1);
        assertThat(control.invocations).hasSize(2);
        assertThat(control.invocations.get(UUID.fromString(r.callId())).state).isEqualTo("succeeded");
        assertThat(control.invocations.values()).filteredOn(i -> i.state.equals("failed")).singleElement()
                .satisfies(i -> assertThat(i.error).isEqualTo(ErrorCode.TARGET_STALE));
        assertThat(leaders.sent.stream().filter(sn -> sn.request().callId().equals(r.callId()))
                .flatMap(sn -> sn.request().runs().stream()).map(ShardRun::partitionId))
                .containsExactlyInAnyOrder(100, 99, 50, 98);
    }

    @Test
    void aRetryableSlotIsNotSentAgainOnceAnotherSlotFailedForGood() throws Exception {
        leaders.answer = leaders::hold;
        Coordinator coordinator = coordinator();
        CompletableFuture<CallResult> call = coordinator.call(request());
        Map<String, Sent> byHost = new HashMap<>();
        for (int i = 0; i < 3; i++) {
            Sent s = leaders.nextHeld();
            byHost.put(s.host(), s);
        }

        leaders.complete(byHost.get("h2"), Map.of(1, started(ErrorCode.GUEST_TRAP)));
        leaders.nextStopped();
        leaders.nextStopped();
        leaders.complete(byHost.get("h1"), Map.of(0, notStarted(ErrorCode.TARGET_STALE)));
        leaders.complete(byHost.get("h3"), Map.of());

        ThresherException e = failure(call);
        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP);
        assertThat(e.getMessage()).contains("slot 1");
        assertThat(leaders.carrying(0)).hasSize(1);
        assertThat(control.refreshes).hasValue(0);
        assertThat(coordinator.shardRetries()).isZero();
        assertThat(coordinator.failedShardRuns()).isEqualTo(1);
    }

    @Test
    void planningWaitsForAMissingLeaderByReadingTheTopologyAgain() throws Exception {
        Topology three = Plans.topology(3);
        Map<Integer, Leadership> noLeaderFor99 = new HashMap<>(three.leaders());
        noLeaderFor99.remove(99);
        control.topology(new Topology(three.partitions(), noLeaderFor99, three.hosts(), three.readAt()));
        control.dbTopology(three); // a leader has taken partition 99 since the cache was read

        CallResult r = result(coordinator().call(request()));

        assertThat(r.resultJson()).contains("p99");
        assertThat(control.refreshes.get()).isPositive();
        assertThat(control.refused).isEmpty();
        assertThat(leaders.carrying(1)).singleElement().satisfies(s -> assertThat(s.host()).isEqualTo("h2"));
    }

    @Test
    void aPartitionWithoutALeaderPastTheActivationWindowIsRefusedCellUnavailable() throws Exception {
        Topology three = Plans.topology(3);
        Map<Integer, Leadership> noLeaderFor99 = new HashMap<>(three.leaders());
        noLeaderFor99.remove(99);
        control.topology(new Topology(three.partitions(), noLeaderFor99, three.hosts(), three.readAt()));

        ThresherException e = failure(coordinator(Limits.fromProperties(Map.of("limits.activationWindowMs", "1")))
                .call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.CELL_UNAVAILABLE);
        assertThat(control.refused).singleElement().satisfies(ref ->
                assertThat(ref.code()).isEqualTo(ErrorCode.CELL_UNAVAILABLE));
        assertThat(leaders.sent).isEmpty();
    }

    @Test
    void aPartitionWithoutALeaderUntilNearTheDeadlineIsRefusedAndRecordedAsSuchNotAsTheDeadline() throws Exception {
        // kills: planWithActivationWait waiting up to the deadline, and the refusal recorded under the call's own
        // expired deadline (answered 57014 "deadline passed ... before a connection was taken", no invocation left)
        Topology three = Plans.topology(3);
        Map<Integer, Leadership> noLeaderFor99 = new HashMap<>(three.leaders());
        noLeaderFor99.remove(99);
        control.topology(new Topology(three.partitions(), noLeaderFor99, three.hosts(), three.readAt()));
        control.refreshDelayMs = 120; // each read of the topology takes a while, as a loaded control database's

        ThresherException e = failure(coordinator(Limits.fromProperties(Map.of("limits.activationWindowMs", "10000")))
                .call(request(350)));

        assertThat(e.code()).as(e.getMessage()).isEqualTo(ErrorCode.CELL_UNAVAILABLE);
        assertThat(control.refused).singleElement().satisfies(ref ->
                assertThat(ref.code()).isEqualTo(ErrorCode.CELL_UNAVAILABLE));
        assertThat(leaders.sent).isEmpty();
    }

    @Test
    void aStaleCachedBindingIsResolvedAgainBeforeAnythingIsSent() throws Exception {
        control.redeploy(V2); // the database has version 2; the cache still holds version 1

        CallResult r = result(coordinator().call(request()));

        assertThat(control.inserted).containsExactly(V1, V2);
        assertThat(control.sendsAtInsert).containsExactly(0, 0);
        assertThat(control.invalidations).hasValue(1);
        assertThat(leaders.sent).hasSize(3).allSatisfy(s -> {
            assertThat(s.request().bindingVersion()).isEqualTo(2);
            assertThat(s.request().componentDigest()).isEqualTo(V2.componentDigest());
        });
        assertThat(reducer.digests).containsExactly(V2.componentDigest());
        assertThat(control.invocations.get(UUID.fromString(r.callId())).binding).isEqualTo(V2);
    }

    @Test
    void aCallPinningTheCurrentVersionRunsItAndOnePinningAnotherIsTargetStaleBeforeAnything() throws Exception {
        CallResult r = result(coordinator().call(request().pinned(1)));
        assertThat(control.invocations.get(UUID.fromString(r.callId())).binding).isEqualTo(V1);
        int sent = leaders.sent.size();

        ThresherException old = failure(coordinator().call(request().pinned(7)));
        assertThat(old.code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(old.getMessage()).contains("is at version 1; the call pinned version 7");
        assertThat(old.guestCodeRan()).isFalse();
        assertThat(leaders.sent).as("nothing sent for the refused call").hasSize(sent);
        assertThat(control.inserted).containsExactly(V1);

        control.redeploy(V2); // the cache still holds version 1: a pin of version 2 reads the database again
        CallResult two = result(coordinator().call(request().pinned(2)));
        assertThat(control.invocations.get(UUID.fromString(two.callId())).binding).isEqualTo(V2);
    }

    @Test
    void theDeadlinePassingWhileAHostRequestWaitsForAPoolPlaceAdmitsNothingMoreAndFailsDeadlineExceeded()
            throws Exception {
        control.topology(Plans.topology(1));
        leaders.answer = leaders::hold;
        Coordinator coordinator = coordinator(Limits.fromProperties(Map.of("limits.shardConcurrency", "1")));
        CompletableFuture<CallResult> first = coordinator.call(request());
        Sent holdingThePlace = leaders.nextHeld();

        CompletableFuture<CallResult> second = coordinator.call(new CallRequest("t", "bob", "b", "{}", Optional.of(300L)));
        ThresherException e = failure(second);

        assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
        assertThat(e.getMessage()).contains("admitted");
        assertThat(e.guestCodeRan()).isFalse();
        leaders.complete(holdingThePlace, Map.of());
        CallResult r = result(first);
        assertThat(leaders.sent).hasSize(1).allSatisfy(s -> assertThat(s.request().callId()).isEqualTo(r.callId()));
        UUID secondId = control.invocations.keySet().stream().filter(id -> !id.toString().equals(r.callId()))
                .findFirst().orElseThrow();
        assertThat(control.invocations.get(secondId).error).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
    }

    @Test
    void aCallRefusedAtPlanningIsRecordedAsRefused() throws Exception {
        control.topology(Plans.topology(65));

        ThresherException e = failure(coordinator().call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_COORDINATION_SLOTS);
        assertThat(control.refused).singleElement().satisfies(ref -> {
            assertThat(ref.code()).isEqualTo(ErrorCode.TOO_MANY_COORDINATION_SLOTS);
            assertThat(ref.binding()).isEqualTo(V1);
            assertThat(ref.message()).isEqualTo(e.getMessage());
        });
        assertThat(control.inserted).isEmpty();
        assertThat(control.invocations).isEmpty();
        assertThat(leaders.sent).isEmpty();
    }

    @Test
    void anUnknownBindingIsAskedOfTheDatabaseOnceAndRefused() throws Exception {
        ThresherException e = failure(coordinator().call(CallRequest.of("t", "alice", "nope", "{}")));

        assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_BINDING);
        assertThat(control.invalidations).hasValue(1);
        assertThat(control.inserted).isEmpty();
        assertThat(leaders.sent).isEmpty();
    }

    @Test
    void aReduceLeaseNotGrantedIsReduceLeaseLost() throws Exception {
        control.grantReduceLease = false;

        ThresherException e = failure(coordinator().call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.REDUCE_LEASE_LOST);
        assertThat(e.guestCodeRan()).isTrue();
        assertThat(reducer.inputs).isEmpty();
        assertThat(control.publishes).hasValue(0);
        assertThat(control.onlyInvocation().getValue().error).isEqualTo(ErrorCode.REDUCE_LEASE_LOST);
    }

    @Test
    void aBindingReplacedDuringTheCallIsTargetStaleAndNothingIsPublished() throws Exception {
        leaders.answer = (host, req) -> {
            control.redeploy(V2);
            return done(leaders.reply(host, req, Map.of()));
        };

        ThresherException e = failure(coordinator().call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(e.guestCodeRan()).isTrue();
        assertThat(reducer.inputs).hasSize(1);
        FakeControl.Invocation inv = control.onlyInvocation().getValue();
        assertThat(inv.state).isEqualTo("failed");
        assertThat(inv.result).isNull();
        assertThat(inv.error).isEqualTo(ErrorCode.TARGET_STALE);
    }

    @Test
    void aJournaledReductionIsPublishedWithoutRunningReduceAgain() throws Exception {
        leaders.answer = (host, req) -> {
            UUID callId = UUID.fromString(req.callId());
            control.journal(new JournalEntry("t", CallPlanner.reduceWireId(callId), callId, JournalEntry.REDUCE, "c0",
                    -1, -1, true, 0, null, 0, 0, "{\"earlier\":1}".getBytes(StandardCharsets.UTF_8), 7));
            return done(leaders.reply(host, req, Map.of()));
        };

        CallResult r = result(coordinator().call(request()));

        assertThat(r.resultJson()).isEqualTo("{\"earlier\":1}");
        assertThat(reducer.inputs).isEmpty();
    }

    @Test
    void aReduceRefusedBeforeTheGuestIsNotJournaledAndAGuestFailureIs() throws Exception {
        reducer.behaviour = merged -> {
            throw FakeReducer.refused(ErrorCode.DEADLINE_EXCEEDED);
        };
        CompletableFuture<CallResult> refused = coordinator().call(request());
        assertThat(failure(refused).code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
        UUID refusedId = control.onlyInvocation().getKey();
        assertThat(control.journaled("t", CallPlanner.reduceWireId(refusedId))).isEmpty();
        assertThat(control.publishes).hasValue(0);

        reducer.behaviour = merged -> {
            throw new ThresherException(ErrorCode.GUEST_TRAP, "unreachable executed");
        };
        ThresherException e = failure(coordinator().call(request()));
        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP);
        UUID trappedId = control.invocations.keySet().stream().filter(id -> !id.equals(refusedId)).findFirst()
                .orElseThrow();
        assertThat(control.journaled("t", CallPlanner.reduceWireId(trappedId))).get().satisfies(j -> {
            assertThat(j.succeeded()).isFalse();
            assertThat(j.errorCode()).isEqualTo(ErrorCode.GUEST_TRAP.code());
        });
        assertThat(control.invocations.get(trappedId).error).isEqualTo(ErrorCode.GUEST_TRAP);
    }

    @Test
    void hostRequestsAreAdmittedInTheOrderOfTheirLowestSlot() throws Exception {
        // With one pool place, hosts are admitted one at a time: in the order of their lowest slot.
        control.topology(Plans.topology(6));
        CallResult r = result(coordinator(Limits.fromProperties(Map.of("limits.shardConcurrency", "1")))
                .call(request()));

        assertThat(r.resultJson()).isNotEmpty();
        List<String> order = new ArrayList<>();
        leaders.sent.forEach(s -> order.add(s.host()));
        assertThat(order).containsExactly("h1", "h2", "h3");
    }

    // ---- the deadline at each step after dispatch, and the result bound ---------------------------------

    private static CallRequest request(long deadlineMs) {
        return new CallRequest("t", "alice", "b", "{}", Optional.of(deadlineMs));
    }

    @Test
    void aHostThatNeverRepliesIsWaitedForUntilTheDeadlineOnlyAndItsRequestIsGivenUp() throws Exception {
        leaders.answer = leaders::hold;

        CompletableFuture<CallResult> call = coordinator().call(request(300));
        List<Sent> held = List.of(leaders.nextHeld(), leaders.nextHeld(), leaders.nextHeld());
        ThresherException e = failure(call);

        assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
        assertThat(held).allSatisfy(s -> assertThat(s.reply().isCancelled())
                .as("the request to %s is given up: its late reply is dropped", s.host()).isTrue());
        assertThat(reducer.inputs).isEmpty();
        assertThat(control.publishes).hasValue(0);
        FakeControl.Invocation inv = control.onlyInvocation().getValue();
        assertThat(inv.state).isEqualTo("failed");
        assertThat(inv.error).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
    }

    @Test
    void aReduceStillRunningAtTheDeadlineFailsTheCallAndNothingIsJournaledOrPublished() throws Exception {
        java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
        reducer.behaviour = merged -> {
            try {
                never.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
            }
            return FakeReducer.asJson(merged);
        };
        try {
            ThresherException e = failure(coordinator().call(request(300)));

            assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
            assertThat(e.guestCodeRan()).isTrue();
            UUID callId = control.onlyInvocation().getKey();
            assertThat(control.journaled("t", CallPlanner.reduceWireId(callId))).as("a cut reduce has no outcome").isEmpty();
            assertThat(control.publishes).hasValue(0);
            assertThat(control.onlyInvocation().getValue().error).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
        } finally {
            never.countDown();
        }
    }

    @Test
    void aResultPastTheResultBoundIsResultTooLargeJournaledAsTheReductionAndNeverVisible() throws Exception {
        Coordinator small = coordinator(Limits.fromProperties(Map.of("limits.resultMaxBytes", "8")));
        reducer.behaviour = merged -> new dev.thresher.cellhost.ReduceOutcome("{\"far\":\"more than eight bytes\"}", 1);

        ThresherException e = failure(small.call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.RESULT_TOO_LARGE);
        UUID callId = control.onlyInvocation().getKey();
        assertThat(control.journaled("t", CallPlanner.reduceWireId(callId))).get().satisfies(j -> {
            assertThat(j.succeeded()).isFalse();
            assertThat(j.errorCode()).isEqualTo(ErrorCode.RESULT_TOO_LARGE.code());
        });
        FakeControl.Invocation inv = control.onlyInvocation().getValue();
        assertThat(inv.result).isNull();
        assertThat(inv.error).isEqualTo(ErrorCode.RESULT_TOO_LARGE);
    }

    @ParameterizedTest
    @ValueSource(strings = {"call.before-reduce", "call.after-reduce-before-publish"})
    void theDeadlinePassingAroundReduceFailsTheCallAndPublishesNothing(String point) throws Exception {
        Failpoints failpoints = Failpoints.enabled();
        dev.thresher.failpoints.Failpoint at = Arrays.stream(dev.thresher.failpoints.Failpoint.values())
                .filter(f -> f.id().equals(point)).findFirst().orElseThrow();
        // A stall (a long GC pause, a slow control database) that outlasts the call's deadline.
        failpoints.arm(at, 1, Failpoints.Action.delay(java.time.Duration.ofMillis(500)));
        Coordinator stalled = new Coordinator("c1", control, control, leaders, reducer, Limits.DEFAULTS, calls, reduces,
                failpoints);

        ThresherException e = failure(stalled.call(request(300)));

        assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
        assertThat(e.guestCodeRan()).isTrue();
        assertThat(reducer.inputs).as("reduce ran").hasSize(at == dev.thresher.failpoints.Failpoint.BEFORE_REDUCE ? 0 : 1);
        assertThat(control.publishes).as("nothing journaled or published").hasValue(0);
        FakeControl.Invocation inv = control.onlyInvocation().getValue();
        assertThat(inv.result).isNull();
        assertThat(inv.error).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
    }

    @Test
    void everyCallHasItsOwnIdentityAndEverySlotAndReductionItsOwnWireIdentity() throws Exception {
        int n = 200;
        List<CompletableFuture<CallResult>> running = new ArrayList<>();
        Coordinator coordinator = coordinator();
        for (int i = 0; i < n; i++) {
            running.add(coordinator.call(request()));
        }
        java.util.Set<String> callIds = new java.util.HashSet<>();
        for (CompletableFuture<CallResult> c : running) {
            callIds.add(result(c).callId());
        }
        assertThat(callIds).hasSize(n);
        List<String> wireIds = leaders.sent.stream().flatMap(s -> s.request().runs().stream()).map(ShardRun::wireId).toList();
        assertThat(wireIds).hasSize(n * 3).doesNotHaveDuplicates();
        List<String> reduceIds = callIds.stream().map(id -> CallPlanner.reduceWireId(UUID.fromString(id))).toList();
        assertThat(reduceIds).doesNotHaveDuplicates().doesNotContainAnyElementsOf(wireIds);
        assertThat(wireIds).allSatisfy(w -> assertThat(callIds).contains(w.substring(0, w.indexOf('/'))));
    }

    // ---- what a call is refused for before anything is recorded -----------------------------------------

    @Test
    void aDeadlineIsOneMillisecondToTheMaximumInclusive() throws Exception {
        long max = Limits.DEFAULTS.maxCallDeadlineMs();
        for (long bad : new long[] {0, -1, max + 1}) {
            assertThat(failure(coordinator().call(request(bad))).code()).as("deadline %d", bad)
                    .isEqualTo(ErrorCode.INVALID_DEADLINE);
        }
        assertThat(control.invocations).as("refused calls are not recorded").isEmpty();
        assertThat(leaders.sent).isEmpty();
        assertThat(result(coordinator().call(request(max))).resultJson()).isNotEmpty();
    }

    @Test
    void argumentsAreOneJsonValueOfAtMostTheDirectPayloadBound() throws Exception {
        Coordinator small = coordinator(Limits.fromProperties(Map.of("limits.directCallPayloadBytes", "16")));
        for (String bad : new String[] {"", "  ", "{", "{} {}", "1 2", "{\"a\":}", "nope"}) {
            assertThat(failure(small.call(CallRequest.of("t", "alice", "b", bad))).code()).as("arguments '%s'", bad)
                    .isEqualTo(ErrorCode.INVALID_ARGUMENTS);
        }
        // 17 bytes (é is two): one past the bound.
        assertThat(failure(small.call(CallRequest.of("t", "alice", "b", "\"abcdefghijklmé\""))).code())
                .isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
        assertThat(control.invocations).as("refused calls are not recorded").isEmpty();
        assertThat(leaders.sent).isEmpty();
        // Exactly 16 bytes is a call.
        assertThat(result(small.call(CallRequest.of("t", "alice", "b", "\"abcdefghijklmn\""))).resultJson()).isNotEmpty();
    }

    @Test
    void aResultOfExactlyTheResultBoundIsPublished() throws Exception {
        Coordinator small = coordinator(Limits.fromProperties(Map.of("limits.resultMaxBytes", "8")));
        reducer.behaviour = merged -> new dev.thresher.cellhost.ReduceOutcome("{\"a\":12}", 1);

        assertThat(result(small.call(request())).resultJson()).isEqualTo("{\"a\":12}");
    }

    /** A failure before any guest code started anywhere is retryable, even one whose code is otherwise ambiguous. */
    @Test
    void aStoreFailureBeforeAnyGuestStartedIsRetryableAndOneAfterIsAmbiguous() throws Exception {
        // kills: Coordinator's beforeGuestCode() for calls in which no guest code may have run
        control.topology(Plans.topology(1));
        leaders.answer = (host, req) -> done(leaders.reply(host, req, Map.of(0, notStarted(ErrorCode.STORE_UNAVAILABLE))));
        ThresherException before = failure(coordinator().call(request()));
        assertThat(tuple(before.code(), before.noGuestCodeRan(), before.retryClass()))
                .isEqualTo(tuple(ErrorCode.STORE_UNAVAILABLE, true, dev.thresher.errors.RetryClass.RETRYABLE));

        leaders.answer = (host, req) -> done(leaders.reply(host, req, Map.of(0, started(ErrorCode.STORE_UNAVAILABLE))));
        ThresherException after = failure(coordinator().call(request()));
        assertThat(tuple(after.code(), after.guestCodeRan(), after.retryClass()))
                .isEqualTo(tuple(ErrorCode.STORE_UNAVAILABLE, true, dev.thresher.errors.RetryClass.AMBIGUOUS));
    }

    @Test
    void aPublicationWhoseAnswerWasLostIsAnsweredByTheJournalOrAsUnknownNeverAsAFailure() throws Exception {
        // kills: Coordinator answering from failInvocation's published result (a call published while the control
        // database's answer was lost was answered DEADLINE_EXCEEDED though its result was visible)
        control.publicationAnswerLost = new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                "deadline passed waiting for the control database's answer");
        CallResult result = coordinator().call(request()).get(10, TimeUnit.SECONDS);
        assertThat(control.invocations.get(java.util.UUID.fromString(result.callId())).state).isEqualTo("succeeded");
        assertThat(result.resultJson()).isEqualTo(control.invocations.get(java.util.UUID.fromString(result.callId())).result);

        // kills: the ambiguous answer when neither the publication's answer nor the call's state can be read
        control.failureRecordFails = new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: cut off");
        ThresherException unknown = failure(coordinator().call(request()));
        assertThat(tuple(unknown.code(), unknown.retryClass())).isEqualTo(tuple(ErrorCode.STORE_UNAVAILABLE,
                dev.thresher.errors.RetryClass.AMBIGUOUS));
        assertThat(unknown.getMessage()).contains("may have been").contains("SHOW CALL");

        // a failure before the publication was sent is not unknown: it stays what it was
        control.publicationAnswerLost = null;
        leaders.answer = (host, req) -> done(leaders.reply(host, req, Map.of(0, started(ErrorCode.GUEST_TRAP))));
        control.topology(Plans.topology(1));
        assertThat(failure(coordinator().call(request())).code()).isEqualTo(ErrorCode.GUEST_TRAP);
    }

    @Test
    void aReducedResultHoldingANulIsTheGuestsInvalidResultNotAStoreFailure() throws Exception {
        // kills: the NUL check before the reduction is journaled (PostgreSQL text cannot hold it)
        reducer.behaviour = merged -> new dev.thresher.cellhost.ReduceOutcome("{\"a\":\"x\u0000y\"}", 1);
        ThresherException e = failure(coordinator().call(request()));
        assertThat(tuple(e.code(), e.getMessage().contains("NUL"))).isEqualTo(tuple(ErrorCode.GUEST_INVALID_RESULT, true));
    }

    /** Whether guest code of a failed call ran is said from the slots' own evidence, not guessed. */
    @Test
    void aFailedCallSaysWhetherItsGuestCodeRanFromTheSlotsEvidence() throws Exception {
        control.topology(Plans.topology(1));
        leaders.answer = (host, req) -> done(leaders.reply(host, req, Map.of(0, started(ErrorCode.GUEST_TRAP))));
        ThresherException ran = failure(coordinator().call(request()));
        assertThat(ran.code()).isEqualTo(ErrorCode.GUEST_TRAP);
        assertThat(ran.guestCodeRan()).as("the only slot's guest started").isTrue();

        leaders.answer = (host, req) -> done(leaders.reply(host, req, Map.of(0, notStarted(ErrorCode.TARGET_STALE))));
        ThresherException refused = failure(coordinator().call(request()));
        assertThat(refused.code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(refused.guestCodeRan()).as("both attempts refused before the guest").isFalse();
    }

    @Test
    void aFailureThatSettlesWhileAHostRequestWaitsForThePoolAdmitsNothingMore() throws Exception {
        // One pool place: h1's request holds it and fails for good; h2's, admitted only then, is not sent.
        leaders.answer = (host, req) -> done(leaders.reply(host, req,
                host.equals("h1") ? Map.of(0, started(ErrorCode.GUEST_TRAP)) : Map.of()));
        Coordinator one = coordinator(Limits.fromProperties(Map.of("limits.shardConcurrency", "1")));

        ThresherException e = failure(one.call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP);
        assertThat(leaders.sent).extracting(Sent::host).containsExactly("h1");
    }

    @Test
    void aReplyWithoutAnOutcomeForASlotItCarriedFailsTheCallAndNothingIsPublished() throws Exception {
        // h2 answers with no outcome at all: a reply the protocol does not allow, not a success.
        leaders.answer = (host, req) -> done(host.equals("h2") ? new HostReply(req.requestId(), 0, List.of())
                : leaders.reply(host, req, Map.of()));

        ThresherException e = failure(coordinator().call(request()));

        assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
        assertThat(e.getMessage()).contains("slot 1").contains("no outcome");
        assertThat(reducer.inputs).isEmpty();
        assertThat(control.publishes).hasValue(0);
    }
}
