package dev.thresher.limits;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * A node's places for one kind of work, shared fairly among keys (bindings): a coordinator's host requests
 * out, or a leader's shard runs.
 *
 * <ul>
 *   <li>A group alone (no key of another group holds or waits for a place; a key is its own group unless told
 *       otherwise) may hold every place, unless one of its keys is <em>slow</em>: one of its places has been held
 *       {@code slowAfter} or longer, or the last such place was given back less than {@code 10 × slowAfter} ago. A
 *       slow group alone holds at most {@code perKey} over all its keys, so a key arriving beside it finds places
 *       free. Slowness is wall time, and says nothing of why: a run held long because it waited for a core behind
 *       another binding's guest is slow too. It therefore only caps a group alone.</li>
 *   <li>Beside others a key's group holds at most {@code perKey} places, and a key that <em>burns</em> what the places stand for (the owner's judgement, {@code burns}: a
 *       leader's bindings whose runs burn a core by their CPU time, a coordinator's whose requests ran to their
 *       deadline) at most one. A guest spinning to its deadline thus queues behind itself while the other keys keep
 *       the rest of the pool, and a binding starved of CPU by it is not mistaken for it. Places are never taken
 *       back: a place held when the limits tightened is held until its work ends (at the latest its deadline).</li>
 *   <li>A free place goes to the waiting key that may take one whose group holds the fewest places (the one served longest
 *       ago among equals; first come first served within a key): no key waits behind another key's queue.</li>
 *   <li>A waiter gives up at the time it names and is told so ({@code null}): the caller answers busy or
 *       deadline, instead of queueing to its deadline.</li>
 * </ul>
 */
public final class FairPlaces {
    /** How often a waiter whose key is at its cap looks again (a slow or burning key's cap rises with time too). */
    private static final long RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final int places;
    private final int perKey;
    private final long slowAfterNanos;
    private final Predicate<String> burns;
    private final LongSupplier clock;
    private final ReentrantLock lock = new ReentrantLock();
    /** Keys with places held, waiters or a remembered slow run; iteration order is the turn order. */
    private final Map<String, Key> keys = new LinkedHashMap<>();
    private int free;

    /** One place held; {@link #close()} gives it back (once). */
    public final class Permit implements AutoCloseable {
        private final Key key;
        private final long since;
        private boolean open = true;

        private Permit(Key key, long since) {
            this.key = key;
            this.since = since;
        }

        @Override
        public void close() {
            lock.lock();
            try {
                if (!open) {
                    return;
                }
                open = false;
                key.held.remove(this);
                long now = clock.getAsLong();
                if (now - since >= slowAfterNanos) {
                    // remembered ten times as long; a quick one after it does not clear it (a slow key's refused or
                    // queued work is quick too)
                    key.slowUntil = now + 10 * slowAfterNanos;
                    key.everSlow = true;
                }
                free++;
                grant(now);
                forget(key, now);
            } finally {
                lock.unlock();
            }
        }
    }

    private final class Key {
        final String name;
        final String group;
        final List<Permit> held = new ArrayList<>(2);
        final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
        long slowUntil;
        boolean everSlow;

        Key(String name, String group) {
            this.name = name;
            this.group = group;
        }

        boolean slow(long now) {
            if (everSlow && now - slowUntil < 0) {
                return true;
            }
            for (Permit p : held) {
                if (now - p.since >= slowAfterNanos) {
                    return true;
                }
            }
            return false;
        }

        /** Whether this key may take one more place now. */
        boolean mayTake(long now) {
            int groupHeld = 0;
            boolean groupSlow = false;
            boolean othersActive = false;
            for (Key o : keys.values()) {
                if (o.group.equals(group)) {
                    groupHeld += o.held.size();
                    groupSlow |= o.slow(now);
                } else if (!o.held.isEmpty() || !o.waiters.isEmpty()) {
                    othersActive = true;
                }
            }
            if (!othersActive) {
                // a slow group (a binding slow toward any host) holds its share over all its keys, not one per key
                return groupHeld < perKey || !groupSlow;
            }
            return groupHeld < perKey && (held.isEmpty() || !burns.test(name));
        }
    }

    private final class Waiter {
        final Condition granted = lock.newCondition();
        Permit permit;
    }

    /**
     * @param places the pool's places
     * @param perKey places one key may hold at once (at most {@code places})
     * @param slowAfterMs how long a place must be held for its key to count as slow (alone, its share at most)
     * @param burns whether a key burns what the places stand for now (beside others, one place at most); asked
     *        with the pool's lock held, so it must be quick and take no lock that is held while acquiring a place
     */
    public FairPlaces(int places, int perKey, long slowAfterMs, Predicate<String> burns) {
        this(places, perKey, slowAfterMs, burns, System::nanoTime);
    }

    FairPlaces(int places, int perKey, long slowAfterMs, Predicate<String> burns, LongSupplier clock) {
        if (places <= 0 || perKey <= 0 || slowAfterMs <= 0) {
            throw new IllegalArgumentException("places, perKey and slowAfterMs must be positive");
        }
        this.places = places;
        this.perKey = Math.min(perKey, places);
        this.slowAfterNanos = TimeUnit.MILLISECONDS.toNanos(slowAfterMs);
        this.burns = java.util.Objects.requireNonNull(burns, "burns");
        this.clock = clock;
        this.free = places;
    }

    /**
     * The process's cores for the guest runs of bindings that burn a core (a leader's {@code Burners}): half of them
     * (at least one), one per binding beside another, shared by every node of the process (the dev cluster runs three).
     * A node's pools bound how many runs of a binding are in flight, not how much CPU they take: one spinning run per
     * node, three nodes on two cores, left the other bindings' runs a third of the machine. A run of such a binding
     * waits for one of these places too (within its deadline), so they together keep at most half the cores busy and
     * the others always have the rest. A place is never taken back: its run holds it until it ends.
     */
    public static final FairPlaces SLOW_RUN_CORES = new FairPlaces(
            Math.max(1, Runtime.getRuntime().availableProcessors() / 2), 1, Long.MAX_VALUE / 2_000_000, k -> false);

    /**
     * The pool of a node's {@code limits.shardConcurrency} places, {@code limits.bindingSharePercent} per binding,
     * slow after {@code limits.slowRunMs}, one place beside others for a binding that {@code burns}.
     */
    public static FairPlaces of(Limits limits, Predicate<String> burns) {
        return new FairPlaces(limits.shardConcurrency(), limits.placesPerBinding(limits.shardConcurrency()),
                limits.slowRunMs(), burns);
    }

    /**
     * A place for {@code key}, waiting until {@code untilNanos} ({@link System#nanoTime()} time) at most.
     *
     * @return the place, or {@code null} when none could be given by then
     * @throws InterruptedException when interrupted while waiting (nothing is held then)
     */
    public Permit acquire(String key, long untilNanos) throws InterruptedException {
        return acquire(key, key, untilNanos);
    }

    /**
     * A place for {@code key} when one is free for it now, as {@link #acquire(String, long)} would give it without
     * waiting; otherwise {@code null}, and nothing is remembered of the attempt (the caller waits with
     * {@link #acquire(String, long)}, which queues it fairly).
     */
    public Permit tryAcquire(String key) {
        lock.lock();
        try {
            Key k = keys.get(key);
            // a key not known yet is remembered only when given a place (take)
            return takeAtOnce(k != null ? k : new Key(key, key), clock.getAsLong());
        } finally {
            lock.unlock();
        }
    }

    /**
     * A place for {@code key} of {@code group}: the share is counted over the group (a binding), slowness per key
     * (the binding toward one host), so a group slow through one key is not slowed through its others.
     *
     * @see #acquire(String, long)
     */
    public Permit acquire(String group, String key, long untilNanos) throws InterruptedException {
        lock.lock();
        try {
            long now = clock.getAsLong();
            Key k = keys.computeIfAbsent(key, n -> new Key(n, group));
            Permit at = takeAtOnce(k, now);
            if (at != null) {
                return at;
            }
            Waiter w = new Waiter();
            k.waiters.addLast(w);
            try {
                while (w.permit == null) {
                    long left = untilNanos - now;
                    if (left <= 0) {
                        k.waiters.remove(w);
                        forget(k, now);
                        return null;
                    }
                    w.granted.awaitNanos(Math.min(left, RECHECK_NANOS));
                    now = clock.getAsLong();
                    if (w.permit == null) {
                        grant(now); // a slow key's cap may have risen with time
                    }
                }
                return w.permit;
            } catch (InterruptedException ie) {
                if (w.permit != null) {
                    w.permit.close(); // granted as the interrupt came: given back (the lock is reentrant)
                } else {
                    k.waiters.remove(w);
                    forget(k, clock.getAsLong());
                }
                throw ie;
            }
        } finally {
            lock.unlock();
        }
    }

    /** A place for {@code k} when one is free and it may take it without passing its own waiters; else null. */
    private Permit takeAtOnce(Key k, long now) {
        return free > 0 && k.waiters.isEmpty() && k.mayTake(now) ? take(k, now) : null;
    }

    private Permit take(Key k, long now) {
        free--;
        Permit p = new Permit(k, now);
        k.held.add(p);
        keys.remove(k.name);
        keys.put(k.name, k); // to the end of the turn
        return p;
    }

    /**
     * Gives free places to waiting keys that may take one: each to the key whose group holds the fewest places,
     * the earliest in the turn among equals; a served key goes to the end of the turn.
     */
    private void grant(long now) {
        while (free > 0) {
            Key best = null;
            int bestHeld = Integer.MAX_VALUE;
            for (Key k : keys.values()) {
                if (!k.waiters.isEmpty()) {
                    int h = groupHeld(k.group);
                    if (h < bestHeld && k.mayTake(now)) {
                        best = k;
                        bestHeld = h;
                    }
                }
            }
            if (best == null) {
                return;
            }
            Waiter w = best.waiters.removeFirst();
            w.permit = take(best, now);
            w.granted.signal();
        }
    }

    private int groupHeld(String group) {
        int n = 0;
        for (Key o : keys.values()) {
            if (o.group.equals(group)) {
                n += o.held.size();
            }
        }
        return n;
    }

    private void forget(Key k, long now) {
        if (k.held.isEmpty() && k.waiters.isEmpty() && (!k.everSlow || now - k.slowUntil >= 0)) {
            keys.remove(k.name, k);
        }
    }

    /** Places held by {@code key} now. */
    public int held(String key) {
        lock.lock();
        try {
            Key k = keys.get(key);
            return k == null ? 0 : k.held.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The state of the pool as {@code group}'s {@code key} sees it, for a busy refusal: {@code "holds 3 of 8
     * places, 2 waiting; 1 other holds 5 (slow)"}.
     */
    public String describe(String group, String key) {
        lock.lock();
        try {
            long now = clock.getAsLong();
            int held = 0;
            int waiting = 0;
            java.util.Set<String> others = new java.util.TreeSet<>();
            int othersHeld = 0;
            for (Key o : keys.values()) {
                if (o.group.equals(group)) {
                    held += o.held.size();
                    waiting += o.waiters.size();
                } else if (!o.held.isEmpty() || !o.waiters.isEmpty()) {
                    others.add(o.group);
                    othersHeld += o.held.size();
                }
            }
            Key k = keys.get(key);
            return "holds " + held + " of " + places + " places, " + waiting + " waiting; " + others.size()
                    + (others.size() == 1 ? " other holds " : " others hold ") + othersHeld
                    + (k != null && burns.test(k.name) ? "; burns its places, so one at most beside others" : "");
        } finally {
            lock.unlock();
        }
    }

    /** Waiters of {@code key} now. */
    public int waiting(String key) {
        lock.lock();
        try {
            Key k = keys.get(key);
            return k == null ? 0 : k.waiters.size();
        } finally {
            lock.unlock();
        }
    }

    /** Waiters of every key now. */
    public int waiting() {
        lock.lock();
        try {
            int n = 0;
            for (Key k : keys.values()) {
                n += k.waiters.size();
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@code key} counts as slow now (alone, its share at most). */
    public boolean slow(String key) {
        lock.lock();
        try {
            Key k = keys.get(key);
            return k != null && k.slow(clock.getAsLong());
        } finally {
            lock.unlock();
        }
    }

    /** Places free now. */
    public int free() {
        lock.lock();
        try {
            return free;
        } finally {
            lock.unlock();
        }
    }

    public int places() {
        return places;
    }

    public int perKey() {
        return perKey;
    }
}
