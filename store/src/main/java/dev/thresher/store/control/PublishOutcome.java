package dev.thresher.store.control;

import java.util.Optional;

/**
 * What publishing a call's result did.
 *
 * @param published true when this publication made the result visible
 * @param visibleResult the result that is visible now (this one, or the one published first)
 */
public record PublishOutcome(boolean published, Optional<String> visibleResult) {}
