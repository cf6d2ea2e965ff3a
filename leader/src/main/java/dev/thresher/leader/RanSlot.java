package dev.thresher.leader;

import dev.thresher.store.control.JournalEntry;
import dev.thresher.wire.WireMessage.SlotOutcome;
import dev.thresher.wire.WireMessage.SlotRun;

/** What became of one slot before publication: an outcome to journal and publish, or a final answer. */
record RanSlot(SlotRun slot, JournalEntry outcome, long readMicros, SlotOutcome answer) {
    static RanSlot answered(SlotOutcome answer, SlotRun slot) {
        return new RanSlot(slot, null, 0, answer);
    }
}
