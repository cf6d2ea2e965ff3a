package dev.thresher.store.control;

import java.util.Objects;
import java.util.Optional;

/**
 * What publishing a call's result did.
 *
 * @param status what happened
 * @param visibleResult the result that is visible now (this one, or the one published first), if any
 */
public record PublishOutcome(Status status, Optional<String> visibleResult) {
    /** Why a result was, or was not, made visible. */
    public enum Status {
        /** This publication made the result visible. */
        PUBLISHED,
        /** The call already had a visible result; it stays. */
        ALREADY_PUBLISHED,
        /** The publisher no longer held a live reduce lease. */
        REDUCE_LEASE_LOST,
        /** The binding got a new version during the call; its result would mix versions. */
        BINDING_REPLACED,
        /** The call is no longer running (it failed). */
        NOT_RUNNING,
        /** The call's deadline, on the control database's clock, passed before the result could be published. */
        DEADLINE_PASSED
    }

    public PublishOutcome {
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(visibleResult, "visibleResult");
    }

    public boolean published() {
        return status == Status.PUBLISHED;
    }
}
