package dev.thresher.limits;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Counts work in flight until its outcome has been handed on: a piece of work counts from before it
 * starts until the callbacks of the future it returned have run, so whoever waits for the count to
 * reach zero knows every outcome has reached the one who asked for it.
 */
public final class InFlight {
    private final AtomicInteger count = new AtomicInteger();

    /**
     * Starts the work and counts it. A start that throws, or returns null, is not counted; the throw
     * or the null passes through.
     */
    public <T> CompletableFuture<T> track(Supplier<CompletableFuture<T>> start) {
        count.incrementAndGet();
        CompletableFuture<T> inner;
        try {
            inner = start.get();
        } catch (RuntimeException e) {
            count.decrementAndGet();
            throw e;
        }
        if (inner == null) {
            count.decrementAndGet();
            return null;
        }
        CompletableFuture<T> handedOn = new CompletableFuture<>();
        inner.whenComplete((value, failure) -> {
            try {
                if (failure == null) {
                    handedOn.complete(value);
                } else {
                    handedOn.completeExceptionally(failure);
                }
            } finally {
                count.decrementAndGet();
            }
        });
        return handedOn;
    }

    public int get() {
        return count.get();
    }
}
