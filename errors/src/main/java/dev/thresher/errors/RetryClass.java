package dev.thresher.errors;

/** How a caller (or the runtime) may react to a failure, as the call contract defines it. */
public enum RetryClass {
    /** Retrying the same request cannot fix it. */
    TERMINAL,
    /** The target or topology can be resolved again and guest code did not run. */
    RETRYABLE,
    /** The runtime cannot prove whether guest code ran; never retried automatically. */
    AMBIGUOUS
}
