package dev.thresher.leader;

import dev.thresher.store.control.CallJournal;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.CallJournal.RequestStart;
import dev.thresher.store.control.CallJournal.ShardRunPublication;
import dev.thresher.store.control.CallJournal.ShardRunPublished;
import dev.thresher.store.control.JournalEntry;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.UUID;

/**
 * The leader's side of the control database: the journal of component outcomes by (tenant, wire
 * identity), and the one transaction that journals a host request's outcomes and publishes its slots,
 * each fenced by the partition lease ({@link CallJournal}'s javadoc is the contract).
 */
public interface ShardRunJournal {

    /** The journaled outcomes of {@code wireIds}, by wire id; absent ones are missing. */
    Map<String, JournalEntry> journaled(String tenant, List<String> wireIds);

    /**
     * The journaled outcomes of {@code wireIds} with the call's stored deadline and the control database's clock,
     * in one statement ({@link CallJournal#requestStart}); without a control database, no deadline is known.
     */
    default RequestStart requestStart(String tenant, UUID callId, List<String> wireIds) {
        return new RequestStart(journaled(tenant, wireIds), OptionalLong.empty(), 0);
    }

    /** Journals (first writer wins) and publishes, fenced; what stands, in the order of {@code publications}. */
    List<ShardRunPublished> publishShardOutcomes(List<ShardRunPublication> publications, String hostId, long leaseMs);

    /** The call journal of the control database {@code control}. */
    static ShardRunJournal of(ControlStore control) {
        return of(control.calls());
    }

    /** The control database's call journal itself. */
    static ShardRunJournal of(CallJournal control) {
        return new ShardRunJournal() {
            @Override
            public Map<String, JournalEntry> journaled(String tenant, List<String> wireIds) {
                return control.journaled(tenant, wireIds);
            }

            @Override
            public RequestStart requestStart(String tenant, UUID callId, List<String> wireIds) {
                return control.requestStart(tenant, callId, wireIds);
            }

            @Override
            public List<ShardRunPublished> publishShardOutcomes(List<ShardRunPublication> publications, String hostId,
                                                            long leaseMs) {
                return control.publishShardOutcomes(publications, hostId, leaseMs);
            }
        };
    }
}
