package dev.thresher.limits;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class BurnersTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    /** Spins on this thread until it has taken {@code ms} of CPU time. */
    private static void burn(long ms) {
        var threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long until = threads.getCurrentThreadCpuTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        long x = 0;
        while (threads.getCurrentThreadCpuTime() < until) {
            x += System.nanoTime() & 1;
        }
        assertThat(x).isNotNegative();
    }

    @Test
    void aRunThatTookItsCpuTimeBurnsWhileItRunsAndForTenTimesThatAfter() throws Exception {
        // kills: judging only when a run ends, judging by wall time, forgetting at once, a quick run clearing it
        Burners burners = new Burners(50, now::get);
        try (Burners.Run run = burners.start("spinner")) {
            assertThat(burners.burns("spinner")).isFalse();
            burn(60);
            assertThat(burners.burns("spinner")).as("judged while it runs").isTrue();
            assertThat(burners.burns("other")).isFalse();
        }
        try (Burners.Run quick = burners.start("spinner")) {
            assertThat(quick).isNotNull();
        }
        assertThat(burners.burns("spinner")).as("a quick run does not clear it").isTrue();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(499));
        assertThat(burners.burns("spinner")).isTrue();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
        assertThat(burners.burns("spinner")).as("forgotten ten times slowAfter after").isFalse();
    }

    @Test
    void aRunThatWaitedWithoutCpuDoesNotBurn() throws Exception {
        // kills: wall time taken for CPU time (a run starved of a core behind a spinner is no spinner)
        Burners burners = new Burners(50, now::get);
        boolean whileWaiting;
        try (Burners.Run run = burners.start("starved")) {
            Thread.sleep(120);
            whileWaiting = burners.burns("starved"); // asserted after: a first assertion loads classes on this thread
        }
        assertThat(whileWaiting).isFalse();
        assertThat(burners.burns("starved")).isFalse();
    }

    @Test
    void aRunOnAnotherThreadIsJudgedByThatThreadsCpu() throws Exception {
        // kills: the asking thread's CPU time measured instead of the run's
        Burners burners = new Burners(50, now::get);
        java.util.concurrent.CountDownLatch burnt = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        Thread t = Thread.ofPlatform().start(() -> {
            try (Burners.Run run = burners.start("elsewhere")) {
                burn(60);
                burnt.countDown();
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertThat(burnt.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(burners.burns("elsewhere")).isTrue();
        done.countDown();
        t.join();
    }

    @Test
    void burntMarksAKeyAtOnce() {
        Burners burners = new Burners(100, now::get);
        burners.burnt("b@node-2");
        assertThat(burners.burns("b@node-2")).isTrue();
        assertThat(burners.burns("b@node-3")).isFalse();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1_000));
        assertThat(burners.burns("b@node-2")).isFalse();
    }
}
