package dev.thresher.leader;

import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.ControlStore.SlotPublication;
import dev.thresher.store.control.ControlStore.SlotPublished;
import dev.thresher.store.control.JournalEntry;
import java.util.List;
import java.util.Map;

/**
 * The leader's side of the control database: the journal of component outcomes by (tenant, wire
 * identity), and the one transaction that journals a host request's outcomes and publishes its slots,
 * each fenced by the partition lease ({@link ControlStore}'s javadoc is the contract).
 */
public interface SlotJournal {

    /** The journaled outcomes of {@code wireIds}, by wire id; absent ones are missing. */
    Map<String, JournalEntry> journaled(String tenant, List<String> wireIds);

    /** Journals (first writer wins) and publishes, fenced; what stands, in the order of {@code publications}. */
    List<SlotPublished> publishShardOutcomes(List<SlotPublication> publications, String hostId, long leaseMs);

    /** The control database itself. */
    static SlotJournal of(ControlStore control) {
        return new SlotJournal() {
            @Override
            public Map<String, JournalEntry> journaled(String tenant, List<String> wireIds) {
                return control.journaled(tenant, wireIds);
            }

            @Override
            public List<SlotPublished> publishShardOutcomes(List<SlotPublication> publications, String hostId,
                                                            long leaseMs) {
                return control.publishShardOutcomes(publications, hostId, leaseMs);
            }
        };
    }
}
