package dev.thresher.leader;

import dev.thresher.store.control.JournalEntry;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;

/** What became of one slot before publication: an outcome to journal and publish, or a final answer. */
record RanShardRun(ShardRun slot, JournalEntry outcome, long readMicros, ShardRunOutcome answer) {
    static RanShardRun answered(ShardRunOutcome answer, ShardRun slot) {
        return new RanShardRun(slot, null, 0, answer);
    }
}
