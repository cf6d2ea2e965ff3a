package dev.thresher.errors;

/** The failure categories of the call contract, plus {@link #INTERNAL} for defects of Thresher itself. */
public enum Category {
    INVALID_STATEMENT_OR_ARGUMENTS,
    AUTHENTICATION_OR_AUTHORIZATION,
    BATCH_OR_PARTIAL_BOUND,
    GUEST_FAILURE,
    DEADLINE,
    HOST_CELL_UNAVAILABLE,
    TARGET_STALE,
    UNCLASSIFIED_TRANSPORT,
    INTERNAL
}
