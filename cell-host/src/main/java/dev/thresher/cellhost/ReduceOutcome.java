package dev.thresher.cellhost;

import java.util.Objects;

/**
 * What one successful {@code reduce} produced.
 *
 * @param resultJson exactly one JSON value, at most {@code limits.resultMaxBytes} UTF-8 bytes
 * @param guestNanos wall time spent inside the guest's {@code reduce} export
 */
public record ReduceOutcome(String resultJson, long guestNanos) {
    public ReduceOutcome {
        Objects.requireNonNull(resultJson, "resultJson");
    }
}
