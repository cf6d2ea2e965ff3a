package dev.thresher.pgwire;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Slows password guessing, per client address and per user name: after a failed authentication, each further
 * attempt from that address or for that user waits its turn — the next one {@value #BASE_MS} ms after the last
 * failure, doubling with every failure up to {@value #MAX_MS} ms — however many connections it comes on, so a
 * guesser gets a few attempts per second at first and one every {@value #MAX_MS} ms soon after. Failures are
 * forgotten {@value #FORGET_MS} ms after the last one. The delay is spent before the server's first authentication
 * message, on a timer, never blocking an I/O thread; an attempt whose turn is further away than the authentication
 * timeout is refused at once.
 *
 * <p>At most {@value #KEYS} addresses and names are remembered (least recently failed forgotten first), so the
 * memory a flood of names costs is bounded.
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
     * Reserves this attempt's turn: how many milliseconds it must wait before it may start (0 when neither its
     * address nor its user has failed lately).
     */
    synchronized long admit(String address, String user) {
        long now = clock.getAsLong();
        long start = now;
        Attempts[] keyed = {live("a:" + address, now), live("u:" + user, now)};
        for (Attempts e : keyed) {
            if (e != null && e.nextNanos - start > 0) {
                start = e.nextNanos;
            }
        }
        for (Attempts e : keyed) {
            if (e != null) {
                e.nextNanos = start + TimeUnit.MILLISECONDS.toNanos(penaltyMs(e.failures));
            }
        }
        return TimeUnit.NANOSECONDS.toMillis(start - now);
    }

    /** A failed authentication from {@code address} for {@code user}. */
    synchronized void failed(String address, String user) {
        long now = clock.getAsLong();
        for (String key : new String[] {"a:" + address, "u:" + user}) {
            Attempts e = live(key, now);
            if (e == null) {
                e = new Attempts();
                e.nextNanos = now;
                entries.put(key, e);
            }
            e.failures++;
            e.lastFailureNanos = now;
            long next = now + TimeUnit.MILLISECONDS.toNanos(penaltyMs(e.failures));
            if (next - e.nextNanos > 0) {
                e.nextNanos = next;
            }
        }
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
