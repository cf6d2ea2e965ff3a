package dev.thresher.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.HdrHistogram.Histogram;

/**
 * Runs one measurement on platform threads, one per client, each with its own {@link Peer.Client}.
 *
 * <p>Every client first warms up for the warm-up time and at least {@value #MIN_WARMUP_CALLS} calls (past
 * pgjdbc's {@code prepareThreshold} of 5, so prepared statements are server-side); all clients then start
 * the measured part together. <b>Closed loop</b>: each client calls again as soon as it is answered;
 * latency runs from each call's start. <b>Open loop</b>: arrivals are scheduled at a fixed rate from the
 * start, whatever the answers do; a free worker takes the next arrival, waits for its time, and the latency
 * runs from the arrival's <em>intended</em> start, so time spent queued behind a slow call counts
 * (coordinated omission corrected). Arrivals still waiting when a peer falls more than a whole measurement
 * behind are not started: they are counted as unserved and recorded with the wait they had reached.
 */
final class Measure {
    static final int MIN_WARMUP_CALLS = 6;
    private static final long HIGHEST_NANOS = TimeUnit.MINUTES.toNanos(5);

    record Timing(double warmupSeconds, double durationSeconds) {
    }

    private Measure() {
    }

    static Result closedLoop(String workload, Peer peer, Shape shape, int clients, Timing timing, Progress progress,
                             Supplier<ThresherPeer.Counters> counters) throws Exception {
        return run(workload, peer, shape, clients, 0, timing, progress, counters);
    }

    static Result openLoop(String workload, Peer peer, Shape shape, int workers, double rate, Timing timing,
                           Progress progress, Supplier<ThresherPeer.Counters> counters) throws Exception {
        return run(workload, peer, shape, workers, rate, timing, progress, counters);
    }

    private static Result run(String workload, Peer peer, Shape shape, int clients, double rate, Timing timing,
                              Progress progress, Supplier<ThresherPeer.Counters> counters) throws Exception {
        boolean open = rate > 0;
        String label = workload + " | " + peer.name() + " | " + (open ? "open loop " + fmtRate(rate) + "/s, " + clients
                + " workers" : "closed loop, " + clients + (clients == 1 ? " client" : " clients"));
        List<Peer.Client> cs = new ArrayList<>();
        try {
            for (int i = 0; i < clients; i++) {
                cs.add(peer.open(shape, i));
            }
            Run run = new Run(label, clients, rate, timing, progress, counters);
            List<Thread> threads = new ArrayList<>();
            progress.stage(label, "warm-up", timing.warmupSeconds());
            for (int i = 0; i < clients; i++) {
                int me = i;
                Peer.Client client = cs.get(me);
                threads.add(Thread.ofPlatform().name("bench-client-" + me).start(() -> run.client(me, client)));
            }
            for (Thread t : threads) {
                t.join();
            }
            if (run.crashed.get() != null) {
                throw new IllegalStateException("measurement " + label + " failed", run.crashed.get());
            }
            return run.result(workload, peer.name());
        } finally {
            progress.idle();
            for (Peer.Client c : cs) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // closing a client changes no measurement
                }
            }
        }
    }

    /**
     * One measurement under way: the barriers its clients start and end the measured part at (the peer's counters read
     * at each), the measured window, and each client's tallies, merged into the {@link Result} at the end.
     */
    private static final class Run {
        final String label;
        final boolean open;
        final int clients;
        final double rate;
        final Progress progress;
        final Supplier<ThresherPeer.Counters> counters;
        final long durationNanos;
        final long warmupNanos;
        /** Open loop: the arrivals of the whole measurement, and the time between two. */
        final long total;
        final double interval;
        final AtomicLong start = new AtomicLong();
        final AtomicLong end = new AtomicLong();
        final AtomicReference<ThresherPeer.Counters> before = new AtomicReference<>();
        final AtomicReference<ThresherPeer.Counters> after = new AtomicReference<>();
        final AtomicReference<String> firstError = new AtomicReference<>();
        final AtomicReference<String> warmupError = new AtomicReference<>();
        /** Open loop: the next arrival a free worker takes. */
        final AtomicLong ticket = new AtomicLong();
        final AtomicReference<Throwable> crashed = new AtomicReference<>();
        final CyclicBarrier warmed;
        final CyclicBarrier done;
        final Histogram[] hist;
        final long[] calls;
        final long[] errors;
        final long[] unserved;
        final long[] lag;

        Run(String label, int clients, double rate, Timing timing, Progress progress,
            Supplier<ThresherPeer.Counters> counters) {
            this.label = label;
            this.open = rate > 0;
            this.clients = clients;
            this.rate = rate;
            this.progress = progress;
            this.counters = counters;
            this.durationNanos = (long) (timing.durationSeconds() * 1e9);
            this.warmupNanos = (long) (timing.warmupSeconds() * 1e9);
            this.total = open ? Math.max(1, Math.round(rate * timing.durationSeconds())) : 0;
            this.interval = open ? 1e9 / rate : 0;
            this.warmed = new CyclicBarrier(clients, () -> {
                if (counters != null) {
                    before.set(counters.get());
                }
                progress.stage(label, "measuring", timing.durationSeconds());
                start.set(System.nanoTime());
            });
            this.done = new CyclicBarrier(clients, () -> {
                end.set(System.nanoTime());
                if (counters != null) {
                    after.set(counters.get());
                }
            });
            this.hist = new Histogram[clients];
            for (int i = 0; i < clients; i++) {
                hist[i] = new Histogram(HIGHEST_NANOS, 3);
            }
            this.calls = new long[clients];
            this.errors = new long[clients];
            this.unserved = new long[clients];
            this.lag = new long[clients];
        }

        /** One client's thread: warm-up, then the measured part with the others; a crash releases the others. */
        void client(int me, Peer.Client client) {
            try {
                warmUp(client);
                warmed.await();
                if (!open) {
                    closedLoop(me, client);
                } else {
                    openLoop(me, client);
                }
                done.await();
            } catch (Throwable t) {
                crashed.compareAndSet(null, t);
                warmed.reset();
                done.reset();
            }
        }

        private void warmUp(Peer.Client client) {
            long warmEnd = System.nanoTime() + warmupNanos;
            for (int n = 0; n < MIN_WARMUP_CALLS || System.nanoTime() < warmEnd; n++) {
                try {
                    client.call();
                } catch (Exception e) {
                    if (warmupError.compareAndSet(null, e.toString())) {
                        progress.say(label + ": a warm-up call failed: " + e);
                    }
                }
                progress.call();
            }
        }

        /** Calls again as soon as answered, until the measured time is up; latency from each call's start. */
        private void closedLoop(int me, Peer.Client client) {
            long stop = start.get() + durationNanos;
            long now;
            while ((now = System.nanoTime()) < stop) {
                try {
                    client.call();
                    hist[me].recordValue(Math.min(System.nanoTime() - now, HIGHEST_NANOS));
                    calls[me]++;
                } catch (Exception e) {
                    errors[me]++;
                    firstError.compareAndSet(null, e.toString());
                }
                progress.call();
            }
        }

        /**
         * Takes the next arrival, waits for its time and calls; latency from the arrival's intended start. An arrival
         * reached more than a whole measurement late is not started: counted unserved, with the wait it had reached.
         */
        private void openLoop(int me, Peer.Client client) {
            long t0 = start.get();
            long giveUp = t0 + 2 * durationNanos + TimeUnit.SECONDS.toNanos(1);
            long arrival;
            while ((arrival = ticket.getAndIncrement()) < total) {
                long intended = t0 + (long) (arrival * interval);
                long now = System.nanoTime();
                while (now < intended) {
                    LockSupport.parkNanos(intended - now);
                    now = System.nanoTime();
                }
                lag[me] = Math.max(lag[me], now - intended);
                if (now > giveUp) {
                    hist[me].recordValue(Math.min(now - intended, HIGHEST_NANOS));
                    unserved[me]++;
                    continue;
                }
                try {
                    client.call();
                    hist[me].recordValue(Math.min(System.nanoTime() - intended, HIGHEST_NANOS));
                    calls[me]++;
                } catch (Exception e) {
                    errors[me]++;
                    firstError.compareAndSet(null, e.toString());
                }
                progress.call();
            }
        }

        /** The clients' tallies merged, with what the peer's counters moved by over the measured part. */
        Result result(String workload, String peer) {
            Histogram merged = new Histogram(HIGHEST_NANOS, 3);
            long c = 0;
            long e = 0;
            long u = 0;
            long maxLag = 0;
            for (int i = 0; i < clients; i++) {
                maxLag = Math.max(maxLag, lag[i]);
                merged.add(hist[i]);
                c += calls[i];
                e += errors[i];
                u += unserved[i];
            }
            ThresherPeer.Counters counted = counters == null ? null : after.get().minus(before.get());
            return new Result(workload, peer, open ? Result.Mode.OPEN : Result.Mode.CLOSED, clients, rate, c, e, u,
                    (end.get() - start.get()) / 1e9, merged, firstError.get(), counted == null ? null : counted.phases(),
                    counted == null ? null : counted.reads(), maxLag);
        }
    }

    static String fmtRate(double rate) {
        return rate == Math.rint(rate) ? String.valueOf((long) rate) : String.valueOf(rate);
    }
}
