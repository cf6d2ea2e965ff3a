package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One instantiated component: a sandbox, its standard streams, and the invocation it is running.
 * Not thread-safe: {@link CellHost} lets one thread at a time in. A cell whose guest did not return
 * normally (trap, deadline, host abort) is {@link #broken()}: its memory may be mid-update, so the host
 * discards it and the next call instantiates a fresh one.
 */
final class Cell implements HostImports, AutoCloseable {
    static final int ABI_VERSION = 1;
    static final int OUTPUT_CAPTURE_BYTES = 8 * 1024;

    private static final Logger LOG = LoggerFactory.getLogger(Cell.class);

    private final Component component;
    private final Limits limits;
    private final Watchdog watchdog;
    private final GuestIo io;
    private final WasmEngine.WasmSandbox sandbox;
    private Invocation current;
    private boolean broken;

    private Cell(Component component, Limits limits, Watchdog watchdog, GuestIo io, WasmEngine.WasmSandbox sandbox) {
        this.component = component;
        this.limits = limits;
        this.watchdog = watchdog;
        this.io = io;
        this.sandbox = sandbox;
    }

    /**
     * Instantiates the component and checks its ABI, under the watchdog (a start function is guest code).
     *
     * @throws ThresherException GUEST_INVALID_MODULE, GUEST_ABI_MISMATCH, GUEST_TRAP or DEADLINE_EXCEEDED
     */
    /** The guest ABI's exported functions and their types; checked before any of them is called. */
    private static final Map<String, WasmSignatures.FuncType> ABI_FUNCTIONS = Map.of(
            "thresher_abi_version", WasmSignatures.FuncType.i32s(0, 1),
            "run", WasmSignatures.FuncType.i32s(2, 1),
            "reduce", WasmSignatures.FuncType.i32s(2, 1));

    private static void checkSignatures(Component component) {
        Map<String, WasmSignatures.FuncType> exported = WasmSignatures.exportedFunctions(component.wasm());
        for (var expected : ABI_FUNCTIONS.entrySet()) {
            WasmSignatures.FuncType actual = exported.get(expected.getKey());
            if (actual != null && !actual.equals(expected.getValue())) {
                throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH, "export " + expected.getKey() + " has type "
                        + actual + "; guest ABI " + ABI_VERSION + " wants " + expected.getValue());
            }
        }
    }

    static Cell open(WasmEngine engine, Component component, Limits limits, Watchdog watchdog, Deadline deadline) {
        GuestIo io = new GuestIo(OUTPUT_CAPTURE_BYTES);
        WasmEngine.WasmSandbox sandbox = engine.newSandbox(io.stdin(), io.output(), io.output());
        Cell cell = new Cell(component, limits, watchdog, io, sandbox);
        Watchdog.Watch watch = watchdog.arm(deadline, sandbox);
        boolean fired = false;
        try {
            sandbox.instantiate(component.digest(), WasmMemoryCap.apply(component.wasm(), limits.guestMemoryMaxBytes()), cell);
            if (!sandbox.hasMemory("memory") || !sandbox.hasFunction("thresher_abi_version")) {
                throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                        "component exports no memory or no thresher_abi_version: not a Thresher guest");
            }
            checkSignatures(component);
            int version = sandbox.callI32("thresher_abi_version");
            if (version != ABI_VERSION) {
                throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                        "component speaks guest ABI " + version + "; this host speaks " + ABI_VERSION);
            }
            for (String export : new String[] {"run", "reduce"}) {
                if (!sandbox.hasFunction(export)) {
                    throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH, "component exports no function " + export);
                }
            }
            fired = watch.disarm();
            if (fired) {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while instantiating the component");
            }
            return cell;
        } catch (RuntimeException | Error e) {
            // an Error too: the watch must not outlive the attempt, nor the sandbox stay open
            fired |= watch.disarm();
            sandbox.close();
            if (fired) {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while instantiating the component", e);
            }
            throw e;
        }
    }

    RunOutcome run(byte[] rowBatch, String argumentsJson, Deadline deadline) {
        return invoke(Invocation.Kind.RUN, rowBatch, argumentsJson, deadline,
                (inv, nanos) -> new RunOutcome(inv.partials(), inv.emitCount(), nanos));
    }

    ReduceOutcome reduce(byte[] partials, String argumentsJson, Deadline deadline) {
        return invoke(Invocation.Kind.REDUCE, partials, argumentsJson, deadline,
                (inv, nanos) -> new ReduceOutcome(inv.resultJson(), nanos));
    }

    boolean broken() {
        return broken;
    }

    @Override
    public void close() {
        sandbox.close();
    }

    private interface Outcome<T> {
        T of(Invocation invocation, long guestNanos);
    }

    private <T> T invoke(Invocation.Kind kind, byte[] input, String argumentsJson, Deadline deadline, Outcome<T> outcome) {
        byte[] args = argumentsJson.getBytes(StandardCharsets.UTF_8);
        Invocation inv = new Invocation(kind, limits, sandbox);
        String export = kind == Invocation.Kind.RUN ? "run" : "reduce";
        current = inv;
        io.begin(input, args);
        Watchdog.Watch watch = watchdog.arm(deadline, sandbox);
        long start = System.nanoTime();
        int status = 0;
        Throwable thrown = null;
        try {
            status = sandbox.callI32(export, input.length, args.length);
        } catch (RuntimeException | Error e) {
            thrown = e; // an Error too: the watch is disarmed and the instance discarded before it goes on
        }
        long guestNanos = System.nanoTime() - start;
        boolean fired = watch.disarm();
        current = null;
        String printed = io.end();
        if (!printed.isEmpty() && LOG.isDebugEnabled()) {
            LOG.debug("guest {} {} printed: {}", component.digest(), export, printed);
        }
        // A guest that did not return normally may have left its heap half-updated; so may one that was
        // interrupted just as it returned. Neither instance is reused.
        broken = thrown != null || fired;
        if (inv.decided() != null) {
            throw inv.decided();
        }
        if (thrown != null) {
            if (fired) {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "guest " + export + " stopped at its deadline after " + guestNanos / 1_000_000 + " ms", thrown);
            }
            if (thrown instanceof Error error) {
                throw error;
            }
            throw ThresherException.of(thrown);
        }
        if (status != 0) {
            String message = inv.failMessage() != null ? inv.failMessage() : "guest " + export + " returned status " + status;
            throw new ThresherException(ErrorCode.GUEST_REPORTED_FAILURE, message);
        }
        return outcome.of(inv, guestNanos);
    }

    private Invocation current(String call) {
        Invocation inv = current;
        if (inv == null) {
            throw new ThresherException(ErrorCode.GUEST_INVALID_RESULT, call + " called outside run and reduce");
        }
        return inv;
    }

    @Override
    public int emit(int keyPtr, int keyLen, double value) {
        return current("emit").emit(keyPtr, keyLen, value);
    }

    @Override
    public void fail(int msgPtr, int msgLen) {
        current("fail").fail(msgPtr, msgLen);
    }

    @Override
    public void jsonBeginObject() {
        current("json_begin_object").jsonBeginObject();
    }

    @Override
    public void jsonEndObject() {
        current("json_end_object").jsonEndObject();
    }

    @Override
    public void jsonBeginArray() {
        current("json_begin_array").jsonBeginArray();
    }

    @Override
    public void jsonEndArray() {
        current("json_end_array").jsonEndArray();
    }

    @Override
    public void jsonKey(int ptr, int len) {
        current("json_key").jsonKey(ptr, len);
    }

    @Override
    public void jsonString(int ptr, int len) {
        current("json_string").jsonString(ptr, len);
    }

    @Override
    public void jsonNumber(double value) {
        current("json_number").jsonNumber(value);
    }

    @Override
    public void jsonInteger(long value) {
        current("json_integer").jsonInteger(value);
    }

    @Override
    public void jsonBool(int value) {
        current("json_bool").jsonBool(value);
    }

    @Override
    public void jsonNull() {
        current("json_null").jsonNull();
    }

    @Override
    public void resultJson(int ptr, int len) {
        current("result_json").resultJson(ptr, len);
    }
}
