package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
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
    /** ABI versions read from components' binaries, by digest (kept as long as the component's seats). */
    private final ConcurrentHashMap<String, Integer> abiVersions = new ConcurrentHashMap<>();
    private volatile boolean closed;

    CellHost(Limits limits, WasmEngine engine) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.engine = Objects.requireNonNull(engine, "engine");
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
                ? cell.run(rowBatch, argumentsJson, deadline)
                : cell.runPaged(RowBatchStream.of(rowBatch), argumentsJson, deadline));
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
        Objects.requireNonNull(batches, "batches");
        Objects.requireNonNull(argumentsJson, "argumentsJson");
        return withCell(c, Role.RUN, deadline, cell -> {
            if (cell.abiVersion() == Cell.ABI_V2) {
                return cell.runPaged(batches, argumentsJson, deadline);
            }
            byte[] only = batches.next();
            if (only == null || batches.next() != null) {
                throw new IllegalArgumentException("a guest of ABI v1 takes exactly one batch");
            }
            return cell.run(only, argumentsJson, deadline);
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

    /** How many {@code run} and {@code reduce} invocations actually entered guest code. */
    public long guestStarts() {
        return guestStarts.get();
    }

    /** Cells currently instantiated (for tests and metrics). */
    int liveCells() {
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
        watchdog.close();
        engine.close();
    }

    /**
     * What a cell serves. A component has one cell for {@code run} and one for {@code reduce} on a
     * node, so a call's reduce never queues behind other calls' shard runs of the same component;
     * each cell still takes one invocation at a time.
     */
    private enum Role { RUN, REDUCE }

    private <T> T withCell(Component c, Role role, Deadline deadline, Function<Cell, T> call) {
        Objects.requireNonNull(c, "component");
        checkOpen();
        CellSeat seat = seats.computeIfAbsent(c.digest() + (role == Role.REDUCE ? "#reduce" : ""), d -> new CellSeat());
        acquire(seat, deadline);
        try {
            checkOpen();
            if (seat.cell == null) {
                checkDeadline(deadline, "before instantiating the component");
                seat.cell = Cell.open(engine, c, limits, watchdog, deadline);
            }
            Cell cell = seat.cell;
            checkDeadline(deadline, "before invoking the guest");
            guestStarts.incrementAndGet();
            try {
                return call.apply(cell);
            } finally {
                if (cell.broken()) {
                    seat.cell = null;
                    cell.close();
                }
            }
        } finally {
            seat.lock.unlock();
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
        final ReentrantLock lock = new ReentrantLock(true);
        /** Written under {@link #lock}; volatile only so that {@link #liveCells()} and close() see it. */
        volatile Cell cell;
    }
}
