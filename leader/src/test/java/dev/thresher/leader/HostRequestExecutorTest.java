package dev.thresher.leader;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.limits.FairPlaces;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.CallJournal.ShardRunPublication;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.topology.Partition;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The leader's host run over in-memory ports: replay, leadership and binding checks, the slots a
 * failure or a stop skips, the lease checked again before the guest, the publish fence and its
 * failure, the reply's order and the counters. No database, no guest engine, no network.
 *
 * <p>Slot {@code n} reads partition {@code n} (epoch 7), whose batch the fake guest tells by its bytes.
 */
class HostRequestExecutorTest {
    private static final String DIGEST = "sha256:" + "ab".repeat(32);
    private static final Binding BINDING = new Binding("t", "b", 3, DIGEST,
            Selector.parse("SELECT region, amount FROM orders"));

    private Fakes.Journal journal;
    private Fakes.Bindings bindings;
    private Fakes.Leases leases;
    private Fakes.Reader reader;
    private Fakes.Guests guests;
    private Failpoints failpoints;
    private ExecutorService pool;
    private HostRequestExecutor executor;
    private final String callId = UUID.randomUUID().toString();

    @BeforeEach
    void setUp() {
        journal = new Fakes.Journal();
        bindings = new Fakes.Bindings().with(BINDING);
        leases = new Fakes.Leases();
        for (int i = 0; i < 10; i++) {
            leases.leading(partition(i, 7));
        }
        reader = new Fakes.Reader();
        guests = new Fakes.Guests(DIGEST);
        failpoints = Failpoints.enabled();
        pool = Executors.newFixedThreadPool(2);
        executor = new HostRequestExecutor("h1", journal, bindings, leases, reader, guests, Limits.DEFAULTS, pool,
                new Fakes.Direct(), failpoints);
    }

    @AfterEach
    void tearDown() {
        pool.shutdownNow();
    }

    private static Partition partition(int id, long epoch) {
        return new Partition(id, "t", "orders", id * 1_000, id * 1_000 + 999, 1, epoch);
    }

    private String wireId(int slot) {
        return callId + "/shard/" + slot;
    }

    private HostRequest request(int... slots) {
        return request(10_000_000, slots);
    }

    private HostRequest request(long budgetMicros, int... slots) {
        List<ShardRun> runs = new ArrayList<>();
        for (int s : slots) {
            runs.add(new ShardRun(s, s, 7, wireId(s), 1));
        }
        return new HostRequest(42, callId, "t", "b", DIGEST, 3, budgetMicros, "{}", runs);
    }

    private HostReply run(HostRequest request) throws Exception {
        HostReply reply = executor.handle(request, System.nanoTime()).get(10, TimeUnit.SECONDS);
        assertThat(reply.requestId()).isEqualTo(request.requestId());
        assertThat(reply.runs()).extracting(ShardRunOutcome::runIndex)
                .containsExactlyElementsOf(request.runs().stream().map(ShardRun::runIndex).toList());
        assertThat(reply.runs()).extracting(ShardRunOutcome::wireId)
                .containsExactlyElementsOf(request.runs().stream().map(ShardRun::wireId).toList());
        return reply;
    }

    private JournalEntry journaled(int slot, boolean succeeded, ErrorCode code) {
        return new JournalEntry("t", wireId(slot), UUID.fromString(callId), JournalEntry.SHARD, "h0", slot, 7, succeeded,
                succeeded ? 0 : code.code(), succeeded ? null : "earlier failure", 5, succeeded ? 2 : 0,
                succeeded ? PartialsCodec.encode(List.of(new Partial("p" + slot, 1), new Partial("q" + slot, 2))) : null,
                succeeded ? 9 : 0);
    }

    private static void assertPublished(ShardRunOutcome o) {
        assertThat(o.published()).as("slot %d: %s", o.runIndex(), o.message()).isTrue();
        assertThat(o.guestStarted()).isTrue();
    }

    private static void assertFailed(ShardRunOutcome o, ErrorCode code, boolean guestStarted, String message) {
        assertThat(o.code()).as("slot %d: %s", o.runIndex(), o.message()).isEqualTo(code);
        assertThat(o.guestStarted()).as("slot %d guestStarted", o.runIndex()).isEqualTo(guestStarted);
        assertThat(o.message()).contains(message);
    }

    @Test
    void everySlotLedAndKnownIsReadRunJournaledAndPublishedInOneTransaction() throws Exception {
        HostReply reply = run(request(0, 1, 2));

        reply.runs().forEach(HostRequestExecutorTest::assertPublished);
        assertThat(reply.runs()).allSatisfy(o -> {
            assertThat(o.rowCount()).isEqualTo(3);
            assertThat(o.emitCount()).isEqualTo(1);
            assertThat(o.readMicros()).isEqualTo(4);
            assertThat(o.guestMicros()).isEqualTo(2_000);
        });
        assertThat(reader.reads).containsExactly(0, 1, 2);
        assertThat(reader.selectors).containsOnly(BINDING.selector());
        assertThat(guests.runs).containsExactly(0, 1, 2);
        assertThat(guests.loads).containsExactly(DIGEST);
        assertThat(journal.publishes).singleElement().satisfies(batch -> assertThat(batch)
                .extracting(ShardRunPublication::runIndex).containsExactly(0, 1, 2));
        assertThat(journal.entry("t", wireId(1))).get().satisfies(e -> {
            assertThat(e.succeeded()).isTrue();
            assertThat(e.partitionId()).isEqualTo(1);
            assertThat(e.epoch()).isEqualTo(7);
            assertThat(e.hostId()).isEqualTo("h1");
            assertThat(PartialsCodec.decode(e.payload())).containsExactly(new Partial("p1", 1));
        });
        assertThat(executor.refusals()).isZero();
        assertThat(executor.replays()).isZero();
    }

    @Test
    void aJournaledWireIdIsReplayedWithoutReadingOrRunning() throws Exception {
        JournalEntry earlier = journaled(1, true, null);
        journal.entries.put("t|" + wireId(1), earlier);

        HostReply reply = run(request(0, 1, 2));

        reply.runs().forEach(HostRequestExecutorTest::assertPublished);
        ShardRunOutcome replayed = reply.runs().get(1);
        assertThat(replayed.rowCount()).isEqualTo(5);
        assertThat(replayed.emitCount()).isEqualTo(2);
        assertThat(replayed.guestMicros()).isEqualTo(9);
        assertThat(reader.reads).containsExactly(0, 2);
        assertThat(guests.runs).containsExactly(0, 2);
        assertThat(journal.publishes.get(0)).extracting(ShardRunPublication::outcome).element(1).isSameAs(earlier);
        assertThat(executor.replays()).isEqualTo(1);
        assertThat(executor.refusals()).isZero();
    }

    @Test
    void eachShardsReadsArePreparedOncePerRequestAsFreshAsItsStartButNotForPartitionsItDoesNotLead() throws Exception {
        // partitions 0 and 1 on shard 1, 2 on shard 2; 3 on shard 2 but not led here
        Partition onShard2 = new Partition(2, "t", "orders", 2_000, 2_999, 2, 7);
        leases.led.put(2, onShard2);
        leases.led.remove(3);
        long before = System.nanoTime();

        run(request(0, 1, 2, 3));

        assertThat(reader.prepared).containsExactlyInAnyOrder(0, 2);
        assertThat(reader.preparedAsOf).allSatisfy(at -> assertThat(at - before).isNotNegative());
        assertThat(reader.reads).containsExactlyInAnyOrder(0, 1, 2);
    }

    @Test
    void aReplayedFailureSaysTheGuestStartedAndStopsTheLaterSlots() throws Exception {
        journal.entries.put("t|" + wireId(0), journaled(0, false, ErrorCode.GUEST_TRAP));

        HostReply reply = run(request(0, 1));

        assertFailed(reply.runs().get(0), ErrorCode.GUEST_TRAP, true, "earlier failure");
        assertFailed(reply.runs().get(1), ErrorCode.GUEST_TRAP, false, "not run");
        assertThat(guests.runs).isEmpty();
        assertThat(journal.publishedShardRuns()).containsExactly(0);
        assertThat(executor.replays()).isEqualTo(1);
    }

    @Test
    void aSlotNotLedUnderItsEpochIsRefusedNotStartedAndTheLaterSlotsStillRun() throws Exception {
        leases.leading(partition(0, 8)); // this node leads partition 0 under a later epoch than planned

        HostReply reply = run(request(0, 1, 2));

        assertFailed(reply.runs().get(0), ErrorCode.TARGET_STALE, false, "does not lead partition 0 under epoch 7");
        assertPublished(reply.runs().get(1));
        assertPublished(reply.runs().get(2));
        assertThat(reader.reads).containsExactly(1, 2);
        assertThat(guests.runs).containsExactly(1, 2);
        assertThat(journal.publishedShardRuns()).containsExactly(1, 2);
        assertThat(journal.entry("t", wireId(0))).isEmpty();
        assertThat(executor.refusals()).isEqualTo(1);
    }

    @Test
    void aCallWhoseBindingHasANewerVersionHereIsRefusedStaleBeforeAnyRead() throws Exception {
        bindings.with(new Binding("t", "b", 4, DIGEST, Selector.parse("SELECT region FROM orders")));

        HostReply reply = run(request(0, 1));

        assertThat(reply.runs()).allSatisfy(o -> assertFailed(o, ErrorCode.TARGET_STALE, false,
                "has version 4, newer than the call's version 3"));
        assertThat(reader.reads).isEmpty();
        assertThat(guests.runs).isEmpty();
        assertThat(journal.publishes).isEmpty();
    }

    @Test
    void aPagedGuestGetsEveryBatchOfItsPartitionFromOneOpenReadThatIsClosedAfterward() throws Exception {
        guests.abiVersion = 2;
        reader.pages = 4;

        HostReply reply = run(request(0, 1, 2));

        reply.runs().forEach(HostRequestExecutorTest::assertPublished);
        assertThat(reply.runs()).allSatisfy(o -> {
            assertThat(o.rowCount()).isEqualTo(12);
            assertThat(o.readMicros()).isEqualTo(16);
        });
        assertThat(reader.reads).containsExactly(0, 1, 2); // tried whole up front: too many rows
        assertThat(reader.opened).containsExactly(0, 1, 2);
        assertThat(guests.batchesPulled).containsExactly(4, 4, 4);
        assertThat(reader.closed).containsExactlyInAnyOrder(0, 1, 2);
        assertThat(journal.entry("t", wireId(1))).get().satisfies(e -> assertThat(e.rowCount()).isEqualTo(12));
    }

    @Test
    void aPagedGuestWhosePartitionFitsOneBatchGetsTheBatchReadUpFront() throws Exception {
        guests.abiVersion = 2;

        HostReply reply = run(request(0, 1));

        reply.runs().forEach(HostRequestExecutorTest::assertPublished);
        assertThat(reader.reads).containsExactly(0, 1);
        assertThat(reader.opened).isEmpty();
        assertThat(guests.batchesPulled).containsExactly(1, 1);
    }

    @Test
    void pagedReadsAreOpenedOnlyWhenTheirSlotRuns() throws Exception {
        guests.abiVersion = 2;
        reader.pages = 2;
        guests.failures.put(1, new ThresherException(ErrorCode.GUEST_TRAP, "unreachable executed"));

        HostReply reply = run(request(0, 1, 2, 3));

        assertFailed(reply.runs().get(1), ErrorCode.GUEST_TRAP, true, "unreachable executed");
        assertFailed(reply.runs().get(3), ErrorCode.GUEST_TRAP, false, "not run: an earlier slot");
        // a paged read is opened when its slot's turn comes, never ahead of it, so slots not run open none
        assertThat(reader.opened).containsExactly(0, 1);
        assertThat(reader.closed).containsExactlyInAnyOrder(0, 1);
        assertThat(journal.entry("t", wireId(1))).get().satisfies(e -> assertThat(e.rowCount()).isEqualTo(6));
    }

    @Test
    void aGuestFailureStopsTheLaterSlotsOfTheRequestAndIsJournaledAsAFailure() throws Exception {
        guests.failures.put(1, new ThresherException(ErrorCode.GUEST_TRAP, "unreachable executed"));

        HostReply reply = run(request(0, 1, 2, 3));

        assertPublished(reply.runs().get(0));
        assertFailed(reply.runs().get(1), ErrorCode.GUEST_TRAP, true, "unreachable executed");
        assertFailed(reply.runs().get(2), ErrorCode.GUEST_TRAP, false, "not run: an earlier slot");
        assertFailed(reply.runs().get(3), ErrorCode.GUEST_TRAP, false, "not run: an earlier slot");
        assertThat(guests.runs).containsExactly(0, 1);
        assertThat(journal.publishedShardRuns()).containsExactly(0, 1);
        assertThat(journal.entry("t", wireId(1))).get().satisfies(e -> {
            assertThat(e.succeeded()).isFalse();
            assertThat(e.errorCode()).isEqualTo(ErrorCode.GUEST_TRAP.code());
            assertThat(e.rowCount()).isEqualTo(3);
        });
        assertThat(journal.entry("t", wireId(2))).isEmpty();
        assertThat(executor.refusals()).isEqualTo(2);
    }

    @Test
    void aRetryableRefusalOfTheCellBeforeTheGuestIsNotJournaledAndTheLaterSlotsStillRun() throws Exception {
        guests.failures.put(0, Fakes.Guests.refused(ErrorCode.CELL_UNAVAILABLE));

        HostReply reply = run(request(0, 1));

        assertFailed(reply.runs().get(0), ErrorCode.CELL_UNAVAILABLE, false, "refused before the guest");
        assertPublished(reply.runs().get(1));
        assertThat(guests.runs).containsExactly(1);
        assertThat(journal.entry("t", wireId(0))).isEmpty();
        assertThat(executor.refusals()).isEqualTo(1);
    }

    @Test
    void aStopBeforeTheRequestSkipsEverySlot() throws Exception {
        executor.stop(callId);

        HostReply reply = run(request(0, 1, 2));

        assertThat(reply.runs()).allSatisfy(o -> assertFailed(o, ErrorCode.DEADLINE_EXCEEDED, false,
                "the coordinator stopped the call"));
        assertThat(reader.reads).isEmpty();
        assertThat(guests.runs).isEmpty();
        assertThat(journal.publishes).isEmpty();
        assertThat(executor.refusals()).isEqualTo(3);
        assertThat(executor.stopsReceived()).isEqualTo(1);
    }

    @Test
    void aJournaledSlotIsReplayedEvenAfterTheCallWasStopped() throws Exception {
        // A redelivery after the coordinator stopped the call: the journaled failure is the answer, and it says
        // the guest ran — never "not run", which would read as proof that no guest code ran.
        journal.entries.put("t|" + wireId(1), journaled(1, false, ErrorCode.GUEST_TRAP));
        executor.stop(callId);

        HostReply reply = run(request(0, 1));

        assertFailed(reply.runs().get(0), ErrorCode.DEADLINE_EXCEEDED, false, "the coordinator stopped the call");
        assertFailed(reply.runs().get(1), ErrorCode.GUEST_TRAP, true, "earlier failure");
        assertThat(guests.runs).isEmpty();
        assertThat(executor.replays()).isEqualTo(1);
    }

    @Test
    void aStopOfAnotherCallChangesNothing() throws Exception {
        executor.stop(UUID.randomUUID().toString());

        run(request(0, 1)).runs().forEach(HostRequestExecutorTest::assertPublished);
        assertThat(guests.runs).containsExactly(0, 1);
        assertThat(executor.stopsReceived()).isEqualTo(1);
    }

    @Test
    void aStopDuringTheRequestSkipsTheSlotsNotStartedYet() throws Exception {
        guests.whileRunning = partition -> executor.stop(callId); // arrives while slot 0's guest runs

        HostReply reply = run(request(0, 1, 2));

        assertPublished(reply.runs().get(0));
        assertFailed(reply.runs().get(1), ErrorCode.DEADLINE_EXCEEDED, false, "the coordinator stopped the call");
        assertFailed(reply.runs().get(2), ErrorCode.DEADLINE_EXCEEDED, false, "the coordinator stopped the call");
        assertThat(guests.runs).containsExactly(0);
        assertThat(journal.publishedShardRuns()).containsExactly(0);
    }

    @Test
    void aLeaseThatLapsesBetweenTheReadAndTheGuestRefusesTheSlotBeforeTheGuest() throws Exception {
        // led when the reads are prepared and when the read starts, lapsed right before the guest
        leases.lapseAfter.put(0, new AtomicInteger(2));

        HostReply reply = run(request(0, 1));

        assertFailed(reply.runs().get(0), ErrorCode.TARGET_STALE, false, "does not lead partition 0");
        assertPublished(reply.runs().get(1));
        assertThat(reader.reads).containsExactly(0, 1);
        assertThat(guests.runs).containsExactly(1);
        assertThat(journal.entry("t", wireId(0))).isEmpty();
        assertThat(executor.refusals()).isEqualTo(1);
    }

    @Test
    void aFailpointBeforeTheGuestRefusesTheSlotNotStarted() throws Exception {
        failpoints.arm(Failpoint.BEFORE_GUEST_START, site -> site.runIndex() == 0, 1,
                Failpoints.Action.fail(ErrorCode.CELL_UNAVAILABLE));

        HostReply reply = run(request(0, 1));

        assertFailed(reply.runs().get(0), ErrorCode.CELL_UNAVAILABLE, false, "shard.before-guest-start");
        assertPublished(reply.runs().get(1));
        assertThat(guests.runs).containsExactly(1);
    }

    @Test
    void aPublishFencedNotLeaderAnswersTargetStaleWithTheGuestStarted() throws Exception {
        journal.leaseLostAtPublish.add(1);

        HostReply reply = run(request(0, 1));

        assertPublished(reply.runs().get(0));
        assertFailed(reply.runs().get(1), ErrorCode.TARGET_STALE, true,
                "lost the lease of partition 1 under epoch 7 before publishing the slot");
        assertThat(journal.entry("t", wireId(1))).get().satisfies(e -> assertThat(e.succeeded()).isTrue());
    }

    @Test
    void aStoreFailureAtPublishFailsEveryPendingSlotWithTheGuestStarted() throws Exception {
        journal.publishFailure = new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: connection lost");
        leases.led.remove(2);

        HostReply reply = run(request(0, 1, 2));

        assertFailed(reply.runs().get(0), ErrorCode.STORE_UNAVAILABLE, true, "connection lost");
        assertFailed(reply.runs().get(1), ErrorCode.STORE_UNAVAILABLE, true, "connection lost");
        assertFailed(reply.runs().get(2), ErrorCode.TARGET_STALE, false, "does not lead partition 2");
        assertThat(reply.publishMicros()).isZero();
        assertThat(guests.runs).containsExactly(0, 1);
    }

    @Test
    void aFailpointBeforeThePublishFailsThatSlotWithTheGuestStartedAndPublishesTheOthers() throws Exception {
        failpoints.arm(Failpoint.BEFORE_SLOT_PUBLISH, site -> site.runIndex() == 0, 1,
                Failpoints.Action.fail(ErrorCode.STORE_UNAVAILABLE));

        HostReply reply = run(request(0, 1));

        assertFailed(reply.runs().get(0), ErrorCode.STORE_UNAVAILABLE, true, "shard.before-slot-publish");
        assertPublished(reply.runs().get(1));
        assertThat(journal.publishedShardRuns()).containsExactly(1);
    }

    @Test
    void aBindingHoldsItsShareOfTheShardPoolBesideAnotherAndANodeThatCannotAdmitInTimeAnswersBusy() throws Exception {
        Limits limits = Limits.fromProperties(Map.of("limits.shardConcurrency", "3", "limits.bindingSharePercent", "33",
                "limits.admissionWaitMs", "200"));
        ExecutorService three = Executors.newFixedThreadPool(3);
        executor = new HostRequestExecutor("h1", journal, bindings, leases, reader, guests, limits, three, new Fakes.Direct(),
                failpoints);
        bindings.with(new Binding("t", "other", 3, DIGEST, BINDING.selector()));
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch running = new CountDownLatch(2);
        guests.whileRunning = partition -> {
            if (partition == 0 || partition == 2) {
                running.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        try {
            CompletableFuture<HostReply> first = executor.handle(request(0), System.nanoTime());
            CompletableFuture<HostReply> other = executor.handle(new HostRequest(43, callId, "t", "other", DIGEST,
                    3, 10_000_000, "{}", List.of(new ShardRun(2, 2, 7, wireId(2), 1))), System.nanoTime());
            assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(executor.runsInFlight()).isEqualTo(2);
            assertThat(executor.runPlaces()).isEqualTo(3);
            assertThat(executor.runsQueued()).isZero();
            // beside "other", "b" holds its one place (a third of three): its next request waits although a place
            // is free, then is answered busy, and no guest runs for it
            HostReply second = run(request(1));
            assertFailed(second.runs().get(0), ErrorCode.CELL_UNAVAILABLE, false, "h1 busy: no shard place within 200 ms");
            assertThat(second.runs().get(0).message()).contains("binding b holds 1 of 3 places, 0 waiting; 1 other holds 1");
            assertThat(executor.busyRefusals()).isEqualTo(1);
            assertThat(guests.demands).as("a refused request pins no cell").hasValue(2);
            release.countDown();
            assertPublished(first.get(10, TimeUnit.SECONDS).runs().get(0));
            assertPublished(other.get(10, TimeUnit.SECONDS).runs().get(0));
            assertThat(executor.runsInFlight()).as("each place given back before its reply").isZero();
            assertThat(guests.runs).containsExactlyInAnyOrder(0, 2);
            // alone, a binding may use every place
            assertPublished(run(request(1)).runs().get(0));
            assertThat(guests.demands).hasValue(3);
            assertThat(guests.openDemands).as("each request's demand lease ends with it").hasValue(0);
        } finally {
            release.countDown();
            three.shutdownNow();
        }
    }

    @Test
    void aBindingThatBurnsACoreWaitsForOneOfTheProcesssCoresForSlowRunsAndAnotherBindingDoesNot() throws Exception {
        // kills: HostRequestExecutor.admit's wait for FairPlaces.SLOW_RUN_CORES (a hog's runs, one per node, took as
        // many cores as there are nodes, whatever the machine has)
        Limits limits = Limits.fromProperties(Map.of("limits.shardConcurrency", "3", "limits.slowRunMs", "200"));
        ExecutorService three = Executors.newFixedThreadPool(3);
        executor = new HostRequestExecutor("h1", journal, bindings, leases, reader, guests, limits, three, new Fakes.Direct(),
                failpoints);
        bindings.with(new Binding("t", "other", 3, DIGEST, BINDING.selector()));
        guests.whileRunning = partition -> {
            if (partition == 0) {
                // a run that burns 300 ms of its thread's CPU, past limits.slowRunMs: the binding is a hog
                var threads = java.lang.management.ManagementFactory.getThreadMXBean();
                long start = threads.getCurrentThreadCpuTime();
                long spins = 0;
                while (threads.getCurrentThreadCpuTime() - start < TimeUnit.MILLISECONDS.toNanos(300)) {
                    spins++;
                }
                assertThat(spins).isPositive();
            } else if (partition == 4) {
                try {
                    Thread.sleep(300); // a run that holds its place as long, but burns no CPU: no hog
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        List<FairPlaces.Permit> hog = new ArrayList<>();
        try {
            assertPublished(run(request(0)).runs().get(0));
            // every core for slow runs taken (by another process-wide holder): "b", slow now, waits to its deadline and
            // runs no guest; "other" is not slow and runs at once
            for (FairPlaces.Permit p = FairPlaces.SLOW_RUN_CORES.tryAcquire("hog"); p != null;
                 p = FairPlaces.SLOW_RUN_CORES.tryAcquire("hog")) {
                hog.add(p);
            }
            assertThat(hog).hasSize(FairPlaces.SLOW_RUN_CORES.places());
            HostReply waited = run(request(300_000L, 1));
            assertFailed(waited.runs().get(0), ErrorCode.DEADLINE_EXCEEDED, false, "deadline passed before h1 admitted");
            assertPublished(run(new HostRequest(43, callId, "t", "other", DIGEST, 3, 10_000_000, "{}",
                    List.of(new ShardRun(2, 2, 7, wireId(2), 1)))).runs().get(0));
            assertThat(guests.runs).containsExactlyInAnyOrder(0, 2);
            hog.forEach(FairPlaces.Permit::close);
            hog.clear();
            // a core free again: the slow binding runs, and gives its core back
            assertPublished(run(request(3)).runs().get(0));
            assertThat(FairPlaces.SLOW_RUN_CORES.free()).isEqualTo(FairPlaces.SLOW_RUN_CORES.places());
            // kills: Burners counting CPU time, not the place's time (a binding whose runs waited long for a core but
            // burnt none, as a sample starved by a spinner, was taken for a hog and queued behind the hog's core)
            for (int i = 0; i < FairPlaces.SLOW_RUN_CORES.places(); i++) {
                hog.add(FairPlaces.SLOW_RUN_CORES.tryAcquire("hog"));
            }
            assertPublished(run(new HostRequest(44, callId, "t", "other", DIGEST, 3, 10_000_000, "{}",
                    List.of(new ShardRun(4, 4, 7, wireId(4), 1)))).runs().get(0));
            assertPublished(run(new HostRequest(45, callId, "t", "other", DIGEST, 3, 300_000, "{}",
                    List.of(new ShardRun(5, 5, 7, wireId(5), 1)))).runs().get(0));
        } finally {
            hog.forEach(FairPlaces.Permit::close);
            three.shutdownNow();
        }
    }

    @Test
    void aBindingsBudgetsBoundItsRunTimeAndItsInput() throws Exception {
        // "rows of 0" is 9 bytes, the arguments "{}" 2: 11 bytes of input
        Budgets tight = new Budgets(50, 0, 10, 0, 3, 0);
        bindings.with(new Binding("t", "b", 3, DIGEST, BINDING.selector(), tight));
        HostReply refused = run(request(0));
        assertFailed(refused.runs().get(0), ErrorCode.BATCH_TOO_LARGE, false, "budgets.inputBytes");
        assertThat(guests.runs).isEmpty();

        Budgets roomy = new Budgets(50, 0, 11, 0, 3, 0);
        bindings.with(new Binding("t", "b", 3, DIGEST, BINDING.selector(), roomy));
        long before = System.nanoTime();
        assertPublished(run(request(0)).runs().get(0));
        assertThat(guests.lastBudgets).as("the guest runs within its binding's emits and partial bytes").isEqualTo(roomy);
        assertThat(guests.lastDeadline.atNanos() - before).as("the run budget, not the call's 10 s")
                .isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50) + (System.nanoTime() - before));

        // a run the run budget stops says so, under the deadline's own code
        guests.failures.put(1, new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while the guest ran"));
        HostReply stopped = run(request(1));
        assertFailed(stopped.runs().get(0), ErrorCode.DEADLINE_EXCEEDED, true, "run passed its binding's budget of 50 ms (budgets.runMs)");
    }

    @Test
    void aRequestWhoseCallsStoredDeadlinePassedIsRefusedBeforeAnyGuestWhateverBudgetItCarries() throws Exception {
        // kills: ControlClock.deadline (the budget counted from when the request was decoded, time in transit lost)
        journal.clockMicros = 1_000_000_000_000L;
        journal.deadlineMicros = journal.clockMicros - 1_000; // passed a millisecond ago on the control database's clock
        journal.entries.put("t|" + wireId(1), journaled(1, true, null));
        HostReply reply = run(request(10_000_000L, 0, 1));

        assertFailed(reply.runs().get(0), ErrorCode.DEADLINE_EXCEEDED, false, "control database's clock");
        assertThat(reply.runs().get(1).published()).as("a journaled slot is still replayed").isTrue();
        assertThat(reader.reads).isEmpty();
        assertThat(guests.runs).isEmpty();
    }

    @Test
    void aGuestsStartIsJournaledOnTheControlDatabasesClock() throws Exception {
        // kills: ControlClock.latestAt in the journaled outcome
        journal.clockMicros = 1_000_000_000_000L;
        journal.deadlineMicros = journal.clockMicros + 60_000_000;
        long before = System.nanoTime();
        run(request(0));
        long elapsedMicros = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - before);
        assertThat(journal.entry("t", wireId(0)).orElseThrow().guestStartedAtMicros())
                .isBetween(journal.clockMicros, journal.clockMicros + elapsedMicros);
    }

    @Test
    void anExpiredRequestIsRefusedWithoutReadingOrRunning() throws Exception {
        HostReply reply = run(request(0L, 0, 1));

        // not even admitted to the shard pool: both refused alike
        assertFailed(reply.runs().get(0), ErrorCode.DEADLINE_EXCEEDED, false, "deadline passed before h1 admitted");
        assertFailed(reply.runs().get(1), ErrorCode.DEADLINE_EXCEEDED, false, "deadline passed before h1 admitted");
        assertThat(reader.reads).isEmpty();
        assertThat(guests.runs).isEmpty();
        assertThat(journal.publishes).isEmpty();
        assertThat(executor.refusals()).isEqualTo(2);
    }

    @Test
    void aBindingVersionNotKnownHereOrPinningAnotherComponentIsTargetStaleBeforeAnyRead() throws Exception {
        bindings.versions.clear();
        HostReply unknown = run(request(0, 1));
        assertThat(unknown.runs()).allSatisfy(o -> assertFailed(o, ErrorCode.TARGET_STALE, false,
                "binding b version 3 is not known here"));

        bindings.with(new Binding("t", "b", 3, "sha256:" + "cd".repeat(32), BINDING.selector()));
        HostReply other = run(request(0, 1));
        assertThat(other.runs()).allSatisfy(o -> assertFailed(o, ErrorCode.TARGET_STALE, false, "pins sha256:cdcd"));

        assertThat(reader.reads).isEmpty();
        assertThat(guests.runs).isEmpty();
        assertThat(executor.refusals()).isEqualTo(4);
    }

    @Test
    void aComponentMissingFromThePackageStoreIsTargetStaleBeforeAnyRead() throws Exception {
        guests.packages.clear();

        HostReply reply = run(request(0, 1));

        assertThat(reply.runs()).allSatisfy(o -> assertFailed(o, ErrorCode.TARGET_STALE, false,
                "not in the package store"));
        assertThat(reader.reads).isEmpty();
        assertThat(guests.runs).isEmpty();
    }

    @Test
    void aJournalThatCannotBeReadFailsEverySlotNotStarted() throws Exception {
        journal.readFailure = new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: connection lost");

        HostReply reply = run(request(0, 1));

        assertThat(reply.runs()).allSatisfy(o -> assertFailed(o, ErrorCode.STORE_UNAVAILABLE, false, "connection lost"));
        assertThat(reader.reads).isEmpty();
        assertThat(executor.refusals()).isEqualTo(2);
    }

    @Test
    void repliesKeepTheRequestsSlotOrderAndTheCountersCountRefusalsReplaysAndStops() throws Exception {
        journal.entries.put("t|" + wireId(5), journaled(5, true, null));
        leases.led.remove(9);

        HostReply reply = run(request(2, 5, 9));

        assertPublished(reply.runs().get(0));
        assertPublished(reply.runs().get(1));
        assertFailed(reply.runs().get(2), ErrorCode.TARGET_STALE, false, "does not lead partition 9");
        assertThat(journal.publishes.get(0)).extracting(ShardRunPublication::runIndex).containsExactly(2, 5);
        assertThat(executor.replays()).isEqualTo(1);
        assertThat(executor.refusals()).isEqualTo(1);
        assertThat(executor.stopsReceived()).isZero();

        executor.stop(callId);
        executor.stop(callId);
        assertThat(executor.stopsReceived()).isEqualTo(2);
        // Once stopped, the journaled slots (2 and 5, published above) are replayed; slot 9 is not run.
        HostReply stopped = run(request(2, 5, 9));
        assertPublished(stopped.runs().get(0));
        assertPublished(stopped.runs().get(1));
        assertFailed(stopped.runs().get(2), ErrorCode.DEADLINE_EXCEEDED, false, "stopped");
        assertThat(executor.replays()).isEqualTo(3);
        assertThat(executor.refusals()).isEqualTo(2);
    }
}
