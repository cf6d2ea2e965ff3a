package dev.thresher.leader;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.CallJournal.ShardRunFence;
import dev.thresher.store.control.CallJournal.ShardRunPublication;
import dev.thresher.store.control.CallJournal.ShardRunPublished;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a host request on the leader ({@link HostRequestExecutor}'s): its slots' outcomes journaled and published in
 * one transaction of the control database, fenced there, and the reply built from what stands. Logs as the executor.
 */
final class ShardRunPublishing {
    private static final Logger log = LoggerFactory.getLogger(HostRequestExecutor.class);

    private final String hostId;
    private final ShardRunJournal control;
    private final Limits limits;
    private final Failpoints failpoints;

    ShardRunPublishing(String hostId, ShardRunJournal control, Limits limits, Failpoints failpoints) {
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
    HostReply publish(HostRequest request, List<RanShardRun> ran) {
        List<ShardRunOutcome> answers = new ArrayList<>(ran.size());
        List<Integer> pending = new ArrayList<>();
        List<ShardRunPublication> publications = new ArrayList<>();
        for (RanShardRun r : ran) {
            answers.add(r.answer());
            if (r.outcome() == null) {
                continue;
            }
            try {
                failpoints.hit(Failpoint.BEFORE_SLOT_PUBLISH, new Site(hostId, r.slot().partitionId(),
                        r.slot().runIndex(), r.slot().wireId()));
            } catch (ThresherException e) {
                answers.set(answers.size() - 1, ShardRunOutcome.failed(r.slot(), e, true));
                continue;
            }
            pending.add(answers.size() - 1);
            publications.add(new ShardRunPublication(r.outcome(), r.slot().runIndex(), r.slot().attempt(), r.readMicros()));
        }
        long publishMicros = 0;
        if (!publications.isEmpty()) {
            long started = System.nanoTime();
            List<ShardRunPublished> published;
            try {
                published = control.publishShardOutcomes(publications, hostId, limits.reduceLeaseMs());
            } catch (RuntimeException e) {
                ThresherException te = ThresherException.of(e);
                // said where operators (and the failover test, of a leader resumed after a freeze) can see it
                log.info("{}: {} slot outcome(s) of call {} not published: {}", hostId, pending.size(),
                        request.callId(), te.getMessage());
                for (int i : pending) {
                    answers.set(i, ShardRunOutcome.failed(ran.get(i).slot(), te, true));
                }
                return new HostReply(request.requestId(), 0, answers);
            }
            publishMicros = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - started);
            for (int k = 0; k < pending.size(); k++) {
                int i = pending.get(k);
                answers.set(i, answer(ran.get(i), published.get(k)));
            }
        }
        return new HostReply(request.requestId(), publishMicros, answers);
    }

    private ShardRunOutcome answer(RanShardRun r, ShardRunPublished p) {
        JournalEntry standing = p.standing();
        ShardRun slot = r.slot();
        if (!standing.succeeded()) {
            return new ShardRunOutcome(slot.runIndex(), slot.wireId(), standing.errorCode(), true,
                    standing.errorMessage() == null ? "guest failed" : standing.errorMessage(), standing.rowCount(), 0,
                    r.readMicros(), 0);
        }
        if (p.fence() == ShardRunFence.DEADLINE_PASSED) {
            return ShardRunOutcome.failed(slot, new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the call's deadline"
                    + " passed, on the control database's clock, before " + hostId + " could publish the slot"), true);
        }
        if (p.fence() == ShardRunFence.NOT_LEADER) {
            return ShardRunOutcome.failed(slot, new ThresherException(ErrorCode.TARGET_STALE, "node " + hostId
                    + " lost the lease of partition " + standing.partitionId() + " under epoch " + standing.epoch()
                    + " before publishing the slot"), true);
        }
        return new ShardRunOutcome(slot.runIndex(), slot.wireId(), 0, true, "", standing.rowCount(), standing.emitCount(),
                r.readMicros(), standing.guestMicros());
    }
}
