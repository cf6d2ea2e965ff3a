package dev.thresher.bench;

import java.io.PrintStream;
import java.util.concurrent.atomic.LongAdder;

/**
 * A line about once a second on stderr while the bench runs: elapsed time, the workload, the peer, the
 * mode and client count, how far into its warm-up or measurement it is, and the calls so far.
 */
final class Progress implements AutoCloseable {
    private final PrintStream out;
    private final long startNanos = System.nanoTime();
    private final Thread ticker;
    private volatile String label;
    private volatile String stage;
    private volatile long stageStart;
    private volatile double stageSeconds;
    private final LongAdder calls = new LongAdder();

    Progress(PrintStream out) {
        this.out = out;
        ticker = Thread.ofPlatform().daemon().name("bench-progress").start(this::tick);
    }

    /** Says something once, with the elapsed time. */
    void say(String message) {
        out.printf("[bench %s] %s%n", elapsed(), message);
        out.flush();
    }

    /** A measurement starts its warm-up (or its measured part) of {@code seconds}. */
    void stage(String label, String stage, double seconds) {
        this.label = label;
        this.stage = stage;
        this.stageSeconds = seconds;
        this.stageStart = System.nanoTime();
        if ("warm-up".equals(stage)) {
            calls.reset();
        }
    }

    void call() {
        calls.increment();
    }

    void idle() {
        label = null;
    }

    private void tick() {
        while (!Thread.currentThread().isInterrupted()) {
            try {
                Thread.sleep(1_000);
            } catch (InterruptedException e) {
                return;
            }
            String l = label;
            if (l != null) {
                double in = (System.nanoTime() - stageStart) / 1e9;
                out.printf("[bench %s] %s | %s %.1f/%.1f s | %d calls%n", elapsed(), l, stage, in, stageSeconds, calls.sum());
                out.flush();
            }
        }
    }

    private String elapsed() {
        long s = (System.nanoTime() - startNanos) / 1_000_000_000L;
        return String.format("%d:%02d", s / 60, s % 60);
    }

    @Override
    public void close() {
        ticker.interrupt();
    }
}
