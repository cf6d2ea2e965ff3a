package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;

/** What the fuzz tests share: the bound on the time one input may take. */
final class Fuzzing {
    /**
     * How long one fuzz input may take, far above what any takes (milliseconds on a busy machine): passing it means a
     * loop or a blow-up, not a slow machine.
     */
    static final long INPUT_BOUND_MS = 5_000;
    /**
     * The seconds after which one input counts as a hang: in regression runs JUnit's timeout, while fuzzing Jazzer's
     * (a fuzz test's {@code @Timeout} becomes its engine's {@code -timeout}).
     */
    static final long INPUT_TIMEOUT_SECONDS = 30;

    private Fuzzing() {
    }

    /** Runs {@code work}, failing if it took longer than {@link #INPUT_BOUND_MS}. */
    static void withinBound(Runnable work) {
        long start = System.nanoTime();
        work.run();
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(tookMs).as("milliseconds one input took").isLessThan(INPUT_BOUND_MS);
    }
}
