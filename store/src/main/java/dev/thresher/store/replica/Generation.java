package dev.thresher.store.replica;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/** One build of the shard's replicas, from one snapshot and its stream. */
final class Generation {
    volatile List<String> dataKeys;
    final Map<Integer, HeldPartition> partitions = new ConcurrentHashMap<>();
    final Map<String, TableReplica> tables = new LinkedHashMap<>();
    final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    final Object applied_ = new Object();
    volatile long applied;
    volatile long wanted;
    volatile long serverPosition;
    volatile boolean streaming;
    volatile boolean dead;
    /** Why the stream must stop and the replica be built again; set by the stream or by a read. */
    volatile String rebuild;
    /** The replicated tables' oids ({@code {1,2}}) and their columns' fingerprint as copied. */
    volatile String oids = "{}";
    volatile String fingerprint = "";
    /** The partitions of each table of the shard this generation judged (replicated or not), by data key. */
    final Map<String, List<String>> keysByTable = new HashMap<>();
    /** Tables being added to the running stream: their changes are kept until their copy is in. */
    final Map<String, TableReplica> adding = new HashMap<>();

    Generation(List<String> dataKeys) {
        this.dataKeys = dataKeys;
    }

    void advance(long position) {
        if (position > applied) {
            applied = position;
            synchronized (applied_) {
                applied_.notifyAll();
            }
        }
    }

    void wake() {
        dead = true;
        synchronized (applied_) {
            applied_.notifyAll();
        }
    }

    /** Has the stream catch up to {@code target} (it asks the server for its position until applied). */
    void want(long target, Thread streamThread) {
        if (applied >= target) {
            return;
        }
        synchronized (applied_) {
            if (target > wanted) {
                wanted = target;
            }
        }
        LockSupport.unpark(streamThread);
    }

    /** Waits until everything before {@code target} is applied; false at {@code untilNanos} or when dropped. */
    boolean awaitApplied(long target, long untilNanos, Thread streamThread) {
        if (applied >= target) {
            return true;
        }
        want(target, streamThread);
        synchronized (applied_) {
            while (applied < target && !dead) {
                long left = untilNanos - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(applied_, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
        return applied >= target && !dead;
    }
}
