package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.bindings.Budgets;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs components' {@code run} and {@code reduce} exports (guest ABI v1 and v2, see {@code docs/guest-abi.md}).
 *
 * <p>One cell per component digest, created on first use and kept; a cell runs one invocation at a
 * time and callers queue for it fairly. Calls block the calling thread for as long as the guest runs:
 * call from a worker executor, never from an event loop. Thread-safe.
 *
 * <pre>
 * run(c, batch, args, deadline)
 *   -> queue for c's cell (fair lock; gives up at the deadline)     DEADLINE_EXCEEDED, guest not started
 *   -> instantiate if absent: validate, link, abi version 1 or 2    GUEST_INVALID_MODULE / GUEST_ABI_MISMATCH
 *   -> deadline check, immediately before guest code                DEADLINE_EXCEEDED, guest not started
 *   -> guestStarts++, arm the watchdog
 *      v1: fd 0 := batch ++ args; guest run(batch_len, args_len)
 *      v2: fd 0 := args ++ (u32 len ++ batch)* pulled one by one ++ u32 0; guest run(args_len)
 *   -> emit(...) collected, checked (at most emitsPerInvocation over all batches)
 *   -> disarm; failure? discard the cell if the guest did not return normally
 *   -> RunOutcome(partials, emitCount, guestNanos)
 * </pre>
 */
public final class CellHost implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CellHost.class);

    private final Limits limits;
    private final WasmEngine engine;
    private final Watchdog watchdog = new Watchdog();
    private final ConcurrentHashMap<String, CellSeat> seats = new ConcurrentHashMap<>();
    private final AtomicLong guestStarts = new AtomicLong();
    /** Guest memory the live cells reserve, against {@code limits.guestMemoryBudgetBytes}; guarded by {@link #budget}. */
    private long reserved;
    private final Object budget = new Object();
    /** Cells instantiated. */
    private final java.util.concurrent.atomic.AtomicLong instantiations = new java.util.concurrent.atomic.AtomicLong();
    private final AtomicLong evictions = new AtomicLong();
    private final java.util.concurrent.ScheduledExecutorService sweeper =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "cell-sweeper");
                t.setDaemon(true);
                return t;
            });
    /** ABI versions read from components' binaries, by digest (kept as long as the component's seats). */
    private final ConcurrentHashMap<String, Integer> abiVersions = new ConcurrentHashMap<>();
    private volatile boolean closed;

    CellHost(Limits limits, WasmEngine engine) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.engine = Objects.requireNonNull(engine, "engine");
        long every = Math.max(1_000, limits.activationLeaseMs() / 4);
        sweeper.scheduleWithFixedDelay(this::evictIdle, every, every, TimeUnit.MILLISECONDS);
        String name = engine.implementationName();
        LOG.debug("guest engine: {}", name);
        if (!engine.optimizing()) {
            LOG.warn("""
                    !!! guest engine reads "{}": WebAssembly guests run on the interpreter, 20-100x slower. \
                    Start the node with the optimizing runtime (-XX:+EnableJVMCI, the Graal compiler on \
                    --upgrade-module-path, Truffle on --module-path), as the launcher does. !!!""", name);
        }
    }

    /** A host on one shared GraalWasm engine. */
    public static CellHost create(Limits limits) {
        return new CellHost(limits, new GraalWasmEngine());
    }

    public String engineName() {
        return engine.implementationName();
    }

    /** False when the engine reads "Interpreted". */
    public boolean optimizing() {
        return engine.optimizing();
    }

    /**
     * Runs the component's {@code run} over one row batch.
     *
     * @param rowBatch a row batch v1 ({@code dev.thresher.bindings.abi.RowBatchBuilder})
     * @param argumentsJson the call's JSON arguments, passed through unparsed
     * @param deadline the call's deadline on this node
     * @throws ThresherException DEADLINE_EXCEEDED, EMIT_LIMIT_EXCEEDED, PARTIAL_MALFORMED, GUEST_TRAP,
     *         GUEST_REPORTED_FAILURE, GUEST_INVALID_RESULT, GUEST_ABI_MISMATCH, GUEST_INVALID_MODULE
     */
    public RunOutcome run(Component c, byte[] rowBatch, String argumentsJson, Deadline deadline) {
        Objects.requireNonNull(rowBatch, "rowBatch");
        Objects.requireNonNull(argumentsJson, "argumentsJson");
        return withCell(c, Role.RUN, deadline, cell -> cell.abiVersion() == Cell.ABI_V1
                ? cell.run(rowBatch, argumentsJson, deadline, Budgets.NONE)
                : cell.runPaged(RowBatchStream.of(rowBatch), argumentsJson, deadline, Budgets.NONE));
    }

    /**
     * Runs the component's {@code run} over a partition's batches. A guest of ABI v2 receives them one
     * after another within this one invocation, each pulled from {@code batches} once the guest has read
     * the one before; the emit bound holds for the whole invocation. A guest of ABI v1 takes one batch:
     * {@code batches} must then yield exactly one (read it with {@link #abiVersion} in mind).
     *
     * @throws ThresherException as {@link #run(Component, byte[], String, Deadline)}, and whatever
     *     {@code batches} threw for a batch it could not read (the guest had started)
     */
    public RunOutcome run(Component c, RowBatchStream batches, String argumentsJson, Deadline deadline) {
        return run(c, batches, argumentsJson, deadline, Budgets.NONE);
    }

    /**
     * As {@link #run(Component, RowBatchStream, String, Deadline)}, within a binding's budgets: its emits
     * ({@code EMIT_LIMIT_EXCEEDED}) and its partials' bytes ({@code SLOT_TOO_LARGE}), each within the node's limits.
     * (Its run time and input bytes are the caller's to bound: the deadline it passes, the batches it yields.)
     */
    public RunOutcome run(Component c, RowBatchStream batches, String argumentsJson, Deadline deadline, Budgets budgets) {
        Objects.requireNonNull(batches, "batches");
        Objects.requireNonNull(argumentsJson, "argumentsJson");
        Objects.requireNonNull(budgets, "budgets");
        return withCell(c, Role.RUN, deadline, cell -> {
            if (cell.abiVersion() == Cell.ABI_V2) {
                return cell.runPaged(batches, argumentsJson, deadline, budgets);
            }
            byte[] only = batches.next();
            if (only == null || batches.next() != null) {
                throw new IllegalArgumentException("a guest of ABI v1 takes exactly one batch");
            }
            return cell.run(only, argumentsJson, deadline, budgets);
        });
    }

    /**
     * The guest ABI version the component's {@code run} is typed for (1 or 2), read from its binary
     * without running it: tells the caller whether to read a partition as one batch (v1) or as a stream
     * of batches (v2). A module that is neither is refused when it is instantiated.
     */
    public int abiVersion(Component c) {
        return abiVersions.computeIfAbsent(c.digest(), d -> Cell.abiVersionOf(c.wasm()));
    }

    /**
     * Runs the component's {@code reduce} over the merged partials.
     *
     * @param partials a partials encoding v1 ({@code dev.thresher.bindings.abi.PartialsCodec})
     * @throws ThresherException DEADLINE_EXCEEDED, GUEST_INVALID_RESULT, RESULT_TOO_LARGE, GUEST_TRAP,
     *         GUEST_REPORTED_FAILURE, GUEST_ABI_MISMATCH, GUEST_INVALID_MODULE
     */
    public ReduceOutcome reduce(Component c, byte[] partials, String argumentsJson, Deadline deadline) {
        Objects.requireNonNull(partials, "partials");
        Objects.requireNonNull(argumentsJson, "argumentsJson");
        return withCell(c, Role.REDUCE, deadline, cell -> cell.reduce(partials, argumentsJson, deadline));
    }

    /**
     * Runs an HTTP handler's {@code handle} over one request (docs/guest-abi.md, "HTTP handlers"). A handler has up to
     * {@code limits.handlerConcurrency} cells on a node, one per invocation in flight, so a request waiting for its
     * nested call holds one cell and never queues the others; each cell still takes one invocation at a time and
     * reserves its memory against {@code limits.guestMemoryBudgetBytes} like any other. The nested call runs on
     * other threads and cells than this one ({@link NestedCalls}): this thread only waits for it.
     *
     * @param request an HTTP request encoding v1 ({@code dev.thresher.bindings.abi.HttpRequestCodec})
     * @param deadline the request's deadline on this node (within its binding's run budget): it covers the whole
     *     invocation, the nested call included
     * @throws ThresherException DEADLINE_EXCEEDED, GUEST_TRAP, GUEST_REPORTED_FAILURE, GUEST_INVALID_RESULT,
     *     RESULT_TOO_LARGE, GUEST_ABI_MISMATCH, GUEST_INVALID_MODULE, CELL_UNAVAILABLE (before any guest code), or the
     *     failure of the nested call the handler passed through
     */
    public HandlerOutcome handle(Component c, byte[] request, Deadline deadline, NestedCalls nested) {
        Objects.requireNonNull(c, "component");
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(nested, "nested");
        checkOpen();
        return inSeat(handlerSeat(c, deadline), c, Role.HANDLE, deadline, cell -> cell.handle(request, deadline, nested));
    }

    /**
     * A free cell seat of the handler, taken: the first of its {@code limits.handlerConcurrency} seats nobody holds
     * (there is one while the node admits at most that many handler invocations at once), else a wait for the first.
     */
    private CellSeat handlerSeat(Component c, Deadline deadline) {
        for (int k = 0; k < limits.handlerConcurrency(); k++) {
            CellSeat seat = seats.computeIfAbsent(c.digest() + "#handle#" + k, d -> new CellSeat(c.digest()));
            if (seat.lock.tryLock()) {
                return seat;
            }
        }
        CellSeat first = seats.computeIfAbsent(c.digest() + "#handle#0", d -> new CellSeat(c.digest()));
        acquire(first, deadline);
        return first;
    }

    /** How many {@code run}, {@code reduce} and {@code handle} invocations actually entered guest code. */
    public long guestStarts() {
        return guestStarts.get();
    }

    /** Cells currently instantiated (for tests and metrics). */
    public int liveCells() {
        int n = 0;
        for (CellSeat s : seats.values()) {
            n += s.cell != null ? 1 : 0;
        }
        return n;
    }

    @Override
    public void close() {
        closed = true;
        for (CellSeat s : seats.values()) {
            Cell cell = s.cell;
            if (cell != null) {
                cell.close();
            }
        }
        seats.clear();
        sweeper.shutdownNow();
        watchdog.close();
        engine.close();
    }

    /**
     * What a cell serves. A component has one cell for {@code run} and one for {@code reduce} on a
     * node, so a call's reduce never queues behind other calls' shard runs of the same component;
     * each cell still takes one invocation at a time.
     */
    private enum Role { RUN, REDUCE, HANDLE }

    private <T> T withCell(Component c, Role role, Deadline deadline, Function<Cell, T> call) {
        Objects.requireNonNull(c, "component");
        checkOpen();
        CellSeat seat = seats.computeIfAbsent(c.digest() + (role == Role.REDUCE ? "#reduce" : ""),
                d -> new CellSeat(c.digest()));
        acquire(seat, deadline);
        return inSeat(seat, c, role, deadline, call);
    }

    /** Runs {@code call} on the seat's cell, instantiating it first when absent; the caller took the seat's lock. */
    private <T> T inSeat(CellSeat seat, Component c, Role role, Deadline deadline, Function<Cell, T> call) {
        try {
            checkOpen();
            if (seat.cell == null) {
                checkDeadline(deadline, "before instantiating the component");
                long reservation = GuestModuleCheck.memoryMaximumBytes(c.wasm(), limits.guestMemoryMaxBytes());
                admit(seat, reservation);
                try {
                    seat.cell = role == Role.HANDLE ? Cell.openHandler(engine, c, limits, watchdog, deadline)
                            : Cell.open(engine, c, limits, watchdog, deadline);
                    seat.reserved = reservation;
                    instantiations.incrementAndGet();
                } catch (RuntimeException | Error e) {
                    release(reservation);
                    throw e;
                }
            }
            seat.lastUsedNanos = System.nanoTime();
            Cell cell = seat.cell;
            checkDeadline(deadline, "before invoking the guest");
            guestStarts.incrementAndGet();
            try {
                return call.apply(cell);
            } finally {
                seat.lastUsedNanos = System.nanoTime();
                if (cell.broken()) {
                    discard(seat);
                }
            }
        } finally {
            seat.lock.unlock();
        }
    }

    /**
     * Reserves a new cell's memory against the node's budget, evicting idle cells (least recently used first)
     * until it fits; refuses, before any guest code, when it cannot.
     */
    private void admit(CellSeat admitting, long bytes) {
        synchronized (budget) {
            while (reserved + bytes > limits.guestMemoryBudgetBytes()) {
                CellSeat victim = null;
                long now = System.nanoTime();
                for (CellSeat s : seats.values()) {
                    if (s != admitting && s.cell != null && (victim == null || s.lastUsedNanos - victim.lastUsedNanos < 0)
                            && !s.lock.isLocked() && !s.pinned(now)) {
                        victim = s;
                    }
                }
                if (victim == null) {
                    throw notStarted(ErrorCode.CELL_UNAVAILABLE, "this node's guest memory budget is full: " + reserved
                            + " of " + limits.guestMemoryBudgetBytes() + " bytes reserved by cells in use or pinned by"
                            + " calls in flight, and a cell of this"
                            + " component needs " + bytes + " (limits.guestMemoryBudgetBytes); retry, or declare a smaller"
                            + " memory maximum");
                }
                evict(victim); // when someone took it meanwhile, the next round looks again
            }
            reserved += bytes;
        }
    }

    private void release(long bytes) {
        synchronized (budget) {
            reserved -= bytes;
        }
    }

    /** Closes a seat's cell and gives its memory back; the caller holds the seat's lock. */
    private void discard(CellSeat seat) {
        Cell cell = seat.cell;
        if (cell != null) {
            seat.cell = null;
            cell.close();
            release(seat.reserved);
            seat.reserved = 0;
        }
    }

    /** Evicts an idle seat's cell if nobody holds the seat; returns whether it did. */
    private boolean evict(CellSeat seat) {
        if (!seat.lock.tryLock()) {
            return false;
        }
        try {
            if (seat.cell == null) {
                return false;
            }
            discard(seat);
            evictions.incrementAndGet();
        } finally {
            seat.lock.unlock();
        }
        retireIfIdle(seat.component);
        return true;
    }

    /**
     * Gives up the component's compiled code (its engine) once none of its cells is instantiated; a cell discarded
     * after a failure keeps it (the next one is opened at once), an evicted or idle component does not.
     */
    private void retireIfIdle(String component) {
        for (CellSeat s : seats.values()) {
            if (s.component.equals(component) && s.cell != null) {
                return;
            }
        }
        engine.retire(component); // it keeps an engine a sandbox still uses, and closes it with that sandbox
    }

    /** Evicts the cells idle for longer than {@code limits.activationLeaseMs}. */
    private void evictIdle() {
        long now = System.nanoTime();
        long idle = TimeUnit.MILLISECONDS.toNanos(limits.activationLeaseMs());
        for (CellSeat s : seats.values()) {
            boolean pinned;
            synchronized (budget) {
                pinned = s.pinned(now);
            }
            if (s.cell != null && now - s.lastUsedNanos > idle && !pinned) {
                evict(s);
            }
        }
        java.util.Set<String> components = new java.util.HashSet<>();
        for (CellSeat s : seats.values()) {
            components.add(s.component);
        }
        components.forEach(this::retireIfIdle); // also those whose last cell was discarded after a failure
    }

    /** Cells instantiated so far. */
    public long instantiations() {
        return instantiations.get();
    }

    /** Cells evicted so far, for the budget or for idleness. */
    public long evictions() {
        return evictions.get();
    }

    /** Guest memory the live cells reserve now. */
    public long reservedBytes() {
        synchronized (budget) {
            return reserved;
        }
    }

    private static void acquire(CellSeat seat, Deadline deadline) {
        try {
            long wait = deadline.remainingNanos();
            if (!seat.lock.tryLock(Math.max(0, wait), TimeUnit.NANOSECONDS)) {
                throw notStarted(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while waiting for the cell");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw notStarted(ErrorCode.CELL_UNAVAILABLE, "interrupted while waiting for the cell");
        }
    }

    private static void checkDeadline(Deadline deadline, String when) {
        if (deadline.passed()) {
            throw notStarted(ErrorCode.DEADLINE_EXCEEDED, "deadline passed " + when + "; the guest did not start");
        }
    }

    /**
     * Whether a failure of {@link #run} or {@link #reduce} is a refusal that provably came before any
     * guest code ran (queueing, the deadline check, a closed host). The retry rule of the call
     * contract needs that proof.
     */
    public static boolean refusedBeforeGuest(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t == NOT_STARTED) {
                return true;
            }
        }
        return false;
    }

    private static ThresherException notStarted(ErrorCode code, String message) {
        return new ThresherException(code, message, NOT_STARTED);
    }

    /** The cause marking a refusal before guest code; stackless, shared. */
    private static final RuntimeException NOT_STARTED = new RuntimeException("guest not started", null, false, false) {};

    private void checkOpen() {
        if (closed) {
            throw notStarted(ErrorCode.CELL_UNAVAILABLE, "cell host is closed");
        }
    }

    /** A digest's place on this host: the lock callers queue on, and the cell once instantiated. */
    private static final class CellSeat {
        /** The digest of the component whose cell it seats. */
        final String component;
        final ReentrantLock lock = new ReentrantLock(true);

        CellSeat(String component) {
            this.component = component;
        }

        /** Written under {@link #lock}; volatile only so that {@link #liveCells()}, eviction and close() see it. */
        volatile Cell cell;
        /** The guest memory the cell reserves; written under {@link #lock}. */
        long reserved;
        /** When the cell last served (nanoTime), for least-recently-used eviction. */
        volatile long lastUsedNanos;
        /** Demand leases held on the seat, and when the latest of them lapses (nanoTime); guarded by {@code budget}. */
        int demands;
        long demandUntilNanos;

        /** Whether a demand lease pins the seat's cell now; the caller holds {@code budget}. */
        boolean pinned(long now) {
            return demands > 0 && now - demandUntilNanos < 0;
        }
    }

    /** A demand lease: {@link #close()} gives it up (once). */
    public interface Demand extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * A demand lease on the component's {@code run} cell on this node: until it is closed, or
     * {@code limits.activationLeaseMs} pass, the cell (once activated) is not evicted, neither to admit
     * another cell nor for being idle. A leader holds one over a host request, so a call's slots on a node
     * run on one activation however other components come and go between them.
     */
    public Demand demand(String componentDigest) {
        CellSeat seat = seats.computeIfAbsent(componentDigest, d -> new CellSeat(componentDigest));
        synchronized (budget) {
            seat.demands++;
            seat.demandUntilNanos = Math.max(seat.demandUntilNanos,
                    System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(limits.activationLeaseMs()));
        }
        return new Demand() {
            private boolean open = true;

            @Override
            public void close() {
                synchronized (budget) {
                    if (open) {
                        open = false;
                        seat.demands--;
                    }
                }
            }
        };
    }
}
