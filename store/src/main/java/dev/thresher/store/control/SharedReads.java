package dev.thresher.store.control;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.DbDeadline;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * How a {@link ControlCache} reads the control database: each read on a virtual thread of its own, shared by the
 * callers that miss the same key at once, and waited for by every caller at most the wait bound (nor past the
 * caller's {@link DbDeadline}), so a control database that stops answering mid-read blocks nobody for longer.
 */
final class SharedReads {
    private final String nodeName;
    private final long loadWaitNanos;

    SharedReads(String nodeName, long loadWaitNanos) {
        this.nodeName = nodeName;
        this.loadWaitNanos = loadWaitNanos;
    }

    /** Whether a read that began at {@code startNanos} is still within the wait bound at {@code now}: one to join. */
    boolean young(long startNanos, long now) {
        return now - startNanos < loadWaitNanos;
    }

    /**
     * Runs one read of the control database on a virtual thread of its own and completes
     * {@code result} with it, so that every caller, the one that started it too, waits for it at most
     * the wait bound: a read that hangs (a connection that stopped answering) is abandoned, and the
     * next caller starts another.
     */
    <T> void read(CompletableFuture<T> result, Supplier<T> read) {
        Thread.ofVirtual().name("control-cache-read-" + nodeName).start(() -> {
            // the read's own database waits end with the wait bound too, so an abandoned read frees its connection
            try (DbDeadline scope = DbDeadline.enter(dev.thresher.limits.Deadline.after(
                    java.time.Duration.ofNanos(loadWaitNanos)))) {
                result.complete(read.get());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
    }

    /**
     * Waits for a shared read no longer than {@code waitUntilNanos} nor the thread's {@link DbDeadline} (a
     * call's): the read goes on for the callers that can still wait for it.
     */
    <T> T await(CompletableFuture<T> f, long waitUntilNanos, String what) {
        var deadline = DbDeadline.current();
        long until = deadline.map(d -> d.atNanos() - waitUntilNanos < 0 ? d.atNanos() : waitUntilNanos)
                .orElse(waitUntilNanos);
        try {
            return f.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            if (deadline.isPresent() && deadline.get().passed()) {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting for the control"
                        + " database's answer to a read of " + what);
            }
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: a read of " + what
                    + " did not answer within " + TimeUnit.NANOSECONDS.toMillis(loadWaitNanos) + " ms");
        } catch (ExecutionException e) {
            ThresherException te = ThresherException.of(e.getCause());
            throw new ThresherException(te.code(), te.getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE,
                    "control database: interrupted while waiting for a read of " + what);
        }
    }
}
