package dev.thresher.limits;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A call's one absolute deadline on this node: an instant of {@link System#nanoTime()}. It never
 * crosses a process boundary as an instant (clocks and {@code nanoTime} origins differ between
 * processes); the wire carries {@link #remainingMicros()} and the receiver builds its own deadline
 * with {@link #afterMicros}.
 *
 * @param atNanos the {@code System.nanoTime()} value at which the deadline passes
 */
public record Deadline(long atNanos) {

    /** The deadline {@code budget} from now. */
    public static Deadline after(Duration budget) {
        return new Deadline(System.nanoTime() + budget.toNanos());
    }

    /** The deadline {@code ms} milliseconds after the {@code System.nanoTime()} instant {@code startNanos}. */
    public static Deadline afterMillis(long startNanos, long ms) {
        return new Deadline(startNanos + TimeUnit.MILLISECONDS.toNanos(ms));
    }

    /** The deadline {@code micros} microseconds after the {@code System.nanoTime()} instant {@code startNanos}. */
    public static Deadline afterMicros(long startNanos, long micros) {
        return new Deadline(startNanos + TimeUnit.MICROSECONDS.toNanos(micros));
    }

    /** Nanoseconds left, negative or zero once passed. */
    public long remainingNanos() {
        return atNanos - System.nanoTime();
    }

    /** Whole microseconds left, never negative: the budget a request carries over the wire. */
    public long remainingMicros() {
        return Math.max(0, TimeUnit.NANOSECONDS.toMicros(remainingNanos()));
    }

    /** Whole milliseconds left, never negative. */
    public long remainingMillis() {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(remainingNanos()));
    }

    /** Whether the deadline has passed (compared as {@code nanoTime} differences, safe across overflow). */
    public boolean passed() {
        return System.nanoTime() - atNanos >= 0;
    }

    /** The earlier of this deadline and {@code other}. */
    public Deadline earlier(Deadline other) {
        return other.atNanos - atNanos < 0 ? other : this;
    }

    /** The earlier of this deadline and {@code window} from now (a bounded wait inside a call). */
    public Deadline within(Duration window) {
        return earlier(after(window));
    }

    /**
     * @param when what was about to happen, for the message ("before reduce")
     * @throws ThresherException {@link ErrorCode#DEADLINE_EXCEEDED} once the deadline has passed
     */
    public void check(String when) {
        if (passed()) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed " + when);
        }
    }
}
