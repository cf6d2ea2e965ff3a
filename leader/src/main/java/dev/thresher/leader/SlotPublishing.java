package dev.thresher.leader;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.CallJournal.SlotFence;
import dev.thresher.store.control.CallJournal.SlotPublication;
import dev.thresher.store.control.CallJournal.SlotPublished;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.wire.WireMessage.HostRunReply;
import dev.thresher.wire.WireMessage.HostRunRequest;
import dev.thresher.wire.WireMessage.SlotOutcome;
import dev.thresher.wire.WireMessage.SlotRun;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a host request on the leader ({@link HostRunExecutor}'s): its slots' outcomes journaled and published in
 * one transaction of the control database, fenced there, and the reply built from what stands. Logs as the executor.
 */
final class SlotPublishing {
    private static final Logger log = LoggerFactory.getLogger(HostRunExecutor.class);

    private final String hostId;
    private final SlotJournal control;
    private final Limits limits;
    private final Failpoints failpoints;

    SlotPublishing(String hostId, SlotJournal control, Limits limits, Failpoints failpoints) {
        this.hostId = hostId;
        this.control = control;
        this.limits = limits;
        this.failpoints = failpoints;
    }

    /**
     * Journals (first writer wins) and publishes every outcome in one transaction, then answers with
     * what stands. A failure answered from here always says the guest started: the outcome exists
     * because the guest ran for this wire identity, in this delivery or an earlier one, so no retry
     * may be based on it.
     */
    HostRunReply publish(HostRunRequest request, List<RanSlot> ran) {
        List<SlotOutcome> answers = new ArrayList<>(ran.size());
        List<Integer> pending = new ArrayList<>();
        List<SlotPublication> publications = new ArrayList<>();
        for (RanSlot r : ran) {
            answers.add(r.answer());
            if (r.outcome() == null) {
                continue;
            }
            try {
                failpoints.hit(Failpoint.BEFORE_SLOT_PUBLISH, new Site(hostId, r.slot().partitionId(),
                        r.slot().slotIndex(), r.slot().wireId()));
            } catch (ThresherException e) {
                answers.set(answers.size() - 1, SlotOutcome.failed(r.slot(), e, true));
                continue;
            }
            pending.add(answers.size() - 1);
            publications.add(new SlotPublication(r.outcome(), r.slot().slotIndex(), r.slot().attempt(), r.readMicros()));
        }
        long publishMicros = 0;
        if (!publications.isEmpty()) {
            long started = System.nanoTime();
            List<SlotPublished> published;
            try {
                published = control.publishShardOutcomes(publications, hostId, limits.reduceLeaseMs());
            } catch (RuntimeException e) {
                ThresherException te = ThresherException.of(e);
                // said where operators (and the failover test, of a leader resumed after a freeze) can see it
                log.info("{}: {} slot outcome(s) of call {} not published: {}", hostId, pending.size(),
                        request.callId(), te.getMessage());
                for (int i : pending) {
                    answers.set(i, SlotOutcome.failed(ran.get(i).slot(), te, true));
                }
                return new HostRunReply(request.requestId(), 0, answers);
            }
            publishMicros = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - started);
            for (int k = 0; k < pending.size(); k++) {
                int i = pending.get(k);
                answers.set(i, answer(ran.get(i), published.get(k)));
            }
        }
        return new HostRunReply(request.requestId(), publishMicros, answers);
    }

    private SlotOutcome answer(RanSlot r, SlotPublished p) {
        JournalEntry standing = p.standing();
        SlotRun slot = r.slot();
        if (!standing.succeeded()) {
            return new SlotOutcome(slot.slotIndex(), slot.wireId(), standing.errorCode(), true,
                    standing.errorMessage() == null ? "guest failed" : standing.errorMessage(), standing.rowCount(), 0,
                    r.readMicros(), 0);
        }
        if (p.fence() == SlotFence.DEADLINE_PASSED) {
            return SlotOutcome.failed(slot, new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the call's deadline"
                    + " passed, on the control database's clock, before " + hostId + " could publish the slot"), true);
        }
        if (p.fence() == SlotFence.NOT_LEADER) {
            return SlotOutcome.failed(slot, new ThresherException(ErrorCode.TARGET_STALE, "node " + hostId
                    + " lost the lease of partition " + standing.partitionId() + " under epoch " + standing.epoch()
                    + " before publishing the slot"), true);
        }
        return new SlotOutcome(slot.slotIndex(), slot.wireId(), 0, true, "", standing.rowCount(), standing.emitCount(),
                r.readMicros(), standing.guestMicros());
    }
}
