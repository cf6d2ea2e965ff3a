package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import dev.thresher.errors.ErrorCode;
import dev.thresher.store.control.CallJournal;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.CallJournal.ReduceStart;
import dev.thresher.store.control.JournalEntry;
import dev.thresher.store.control.PublishOutcome;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;

/**
 * The coordinator's side of the control database: a call's invocation record, its reduce lease with
 * the published slots, and the reduction's journal entry with the result's publication. Each method is
 * one transaction of {@link CallJournal}, whose javadoc is the contract.
 */
public interface CallStore {

    /** Records a running call, only while {@code binding} is its binding's current version ({@link CallJournal#insertInvocation}). */
    OptionalLong insertInvocation(UUID callId, Binding binding, String principal, String coordinatorHost, int shardCount,
                                  long remainingMs, long deadlineMs);

    /** Records a call refused at planning, as failed ({@link CallJournal#insertRefusedInvocation}). */
    void insertRefusedInvocation(UUID callId, Binding binding, String principal, String coordinatorHost,
                                 long remainingMs, long deadlineMs, ErrorCode code, String message);

    /**
     * Records a call's failure unless it already finished, answering its result when it had been published
     * ({@link CallJournal#failUnlessPublished}).
     */
    Optional<String> failInvocation(UUID callId, ErrorCode code, String message, int attempts);

    /** Takes the reduce lease and reads the published slots and any journaled reduction ({@link CallJournal#startReduce}). */
    ReduceStart startReduce(UUID callId, String tenant, String hostId, String reduceWireId, long leaseMs);

    /** Journals the reduction and publishes its result, fenced by lease and binding version ({@link CallJournal#journalAndPublish}). */
    Map.Entry<JournalEntry, Optional<PublishOutcome>> journalAndPublish(JournalEntry reduction, String hostId, int attempts);

    /** The call journal of the control database {@code control}. */
    static CallStore of(ControlStore control) {
        return of(control.calls());
    }

    /** The control database's call journal itself. */
    static CallStore of(CallJournal control) {
        return new CallStore() {
            @Override
            public OptionalLong insertInvocation(UUID callId, Binding binding, String principal, String coordinatorHost,
                                                 int shardCount, long remainingMs, long deadlineMs) {
                return control.insertInvocation(callId, binding, principal, coordinatorHost, shardCount, remainingMs,
                        deadlineMs);
            }

            @Override
            public void insertRefusedInvocation(UUID callId, Binding binding, String principal, String coordinatorHost,
                                                long remainingMs, long deadlineMs, ErrorCode code, String message) {
                control.insertRefusedInvocation(callId, binding, principal, coordinatorHost, remainingMs, deadlineMs,
                        code, message);
            }

            @Override
            public Optional<String> failInvocation(UUID callId, ErrorCode code, String message, int attempts) {
                return control.failUnlessPublished(callId, code, message, attempts);
            }

            @Override
            public ReduceStart startReduce(UUID callId, String tenant, String hostId, String reduceWireId, long leaseMs) {
                return control.startReduce(callId, tenant, hostId, reduceWireId, leaseMs);
            }

            @Override
            public Map.Entry<JournalEntry, Optional<PublishOutcome>> journalAndPublish(JournalEntry reduction,
                                                                                       String hostId, int attempts) {
                return control.journalAndPublish(reduction, hostId, attempts);
            }
        };
    }
}
