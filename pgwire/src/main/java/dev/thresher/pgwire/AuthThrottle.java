package dev.thresher.pgwire;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Slows password guessing without slowing the right password.
 *
 * <ul>
 *   <li><b>Per client address, attempts wait their turn:</b> after a failed authentication from an address, each
 *       further attempt from it — on any connection, for any user — starts {@value #BASE_MS} ms after the last one's
 *       turn, doubling with every failure up to {@value #MAX_MS} ms. A guessing address gets a few attempts per second
 *       at first and one every {@value #MAX_MS} ms soon after, however many connections it opens. Addresses that
 *       have not failed lately never wait.
 *   <li><b>Per user name, failures are answered late:</b> the answer to a failed attempt for a user is held for the
 *       same doubling wait of that user's recent failures, from whatever address (PostgreSQL's {@code auth_delay}).
 *       A guess learns nothing sooner; a right password is answered at once, so a stranger's guesses at a user's
 *       password never delay or refuse that user's own login from an address of its own.
 * </ul>
 *
 * <p>Failures are forgotten {@value #FORGET_MS} ms after the last one. Every wait runs on a timer, never blocking an
 * I/O thread; an attempt whose turn is further away than the authentication timeout is refused at once. At most
 * {@value #KEYS} addresses and names are remembered (least recently failed forgotten first), so the memory a flood of
 * names costs is bounded.
 */
final class AuthThrottle {
    static final long BASE_MS = 100;
    static final long MAX_MS = 5_000;
    static final long FORGET_MS = 60_000;
    static final int KEYS = 10_000;

    private static final class Attempts {
        int failures;
        long lastFailureNanos;
        /** When the next attempt may start. */
        long nextNanos;
    }

    private final LongSupplier clock;
    private final Map<String, Attempts> entries = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Attempts> eldest) {
            return size() > KEYS;
        }
    };

    AuthThrottle() {
        this(System::nanoTime);
    }

    AuthThrottle(LongSupplier clock) {
        this.clock = clock;
    }

    /**
     * Reserves the turn of an attempt from {@code address}: how many milliseconds it must wait before it may start (0
     * when the address has not failed lately). The user name plays no part: a user's failures delay the answers to
     * failures ({@link #failed}), never an attempt.
     */
    synchronized long admit(String address) {
        long now = clock.getAsLong();
        Attempts e = live("a:" + address, now);
        if (e == null) {
            return 0;
        }
        long start = e.nextNanos - now > 0 ? e.nextNanos : now;
        e.nextNanos = start + TimeUnit.MILLISECONDS.toNanos(penaltyMs(e.failures));
        return TimeUnit.NANOSECONDS.toMillis(start - now);
    }

    /**
     * A failed authentication from {@code address} for {@code user}: counted against both.
     *
     * @return how many milliseconds to hold the failure's answer: the wait of the user's recent failures, this one
     *     included
     */
    synchronized long failed(String address, String user) {
        long now = clock.getAsLong();
        Attempts byAddress = remember("a:" + address, now);
        long next = now + TimeUnit.MILLISECONDS.toNanos(penaltyMs(byAddress.failures));
        if (next - byAddress.nextNanos > 0) {
            byAddress.nextNanos = next;
        }
        Attempts byUser = remember("u:" + user, now);
        return penaltyMs(byUser.failures);
    }

    private Attempts remember(String key, long now) {
        Attempts e = live(key, now);
        if (e == null) {
            e = new Attempts();
            e.nextNanos = now;
            entries.put(key, e);
        }
        e.failures++;
        e.lastFailureNanos = now;
        return e;
    }

    /** The wait after {@code failures} recent failures. */
    static long penaltyMs(int failures) {
        if (failures <= 0) {
            return 0;
        }
        return Math.min(MAX_MS, BASE_MS << Math.min(failures - 1, 20));
    }

    synchronized int remembered() {
        return entries.size();
    }

    private Attempts live(String key, long now) {
        Attempts e = entries.get(key);
        if (e != null && now - e.lastFailureNanos > TimeUnit.MILLISECONDS.toNanos(FORGET_MS)) {
            entries.remove(key);
            return null;
        }
        return e;
    }
}
