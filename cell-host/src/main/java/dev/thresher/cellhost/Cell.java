package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.bindings.Budgets;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.nio.charset.StandardCharsets;
import java.util.List;
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
    static final int OUTPUT_CAPTURE_BYTES = 8 * 1024;

    private static final Logger LOG = LoggerFactory.getLogger(Cell.class);

    private final Component component;
    private final Limits limits;
    private final Watchdog watchdog;
    private final GuestIo io;
    private final WasmEngine.WasmSandbox sandbox;
    private Invocation current;
    /** The HTTP handler invocation running, for a handler's cell. */
    private HandlerInvocation currentHandler;
    private boolean broken;

    private Cell(Component component, Limits limits, Watchdog watchdog, GuestIo io, WasmEngine.WasmSandbox sandbox) {
        this.component = component;
        this.limits = limits;
        this.watchdog = watchdog;
        this.io = io;
        this.sandbox = sandbox;
    }

    /** The guest ABI versions this host speaks. */
    static final int ABI_V1 = 1;
    static final int ABI_V2 = 2;

    private static final WasmSignatures.FuncType VERSION_TYPE = WasmSignatures.FuncType.i32s(0, 1);
    private static final WasmSignatures.FuncType REDUCE_TYPE = WasmSignatures.FuncType.i32s(2, 1);
    /** {@code run}'s type by ABI version: v1 takes a batch's length and the arguments', v2 the arguments' only. */
    private static final Map<Integer, WasmSignatures.FuncType> RUN_TYPES = Map.of(
            ABI_V1, WasmSignatures.FuncType.i32s(2, 1),
            ABI_V2, WasmSignatures.FuncType.i32s(1, 1));

    private static void checkSignature(Map<String, WasmSignatures.FuncType> exported, String name,
                                       WasmSignatures.FuncType expected, String version) {
        WasmSignatures.FuncType actual = exported.get(name);
        if (actual != null && !actual.equals(expected)) {
            throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH, "export " + name + " has type "
                    + actual + "; guest ABI " + version + " wants " + expected);
        }
    }

    /**
     * The ABI version a module's {@code run} export is typed for, read from its binary without
     * instantiating it: 2 when {@code run} takes one {@code i32}, else 1 (a module that is not a guest of
     * either version fails at instantiation).
     */
    static int abiVersionOf(byte[] wasm) {
        try {
            return RUN_TYPES.get(ABI_V2).equals(WasmSignatures.exportedFunctions(wasm).get("run")) ? ABI_V2 : ABI_V1;
        } catch (ThresherException e) {
            return ABI_V1;
        }
    }

    /** The version {@code thresher_abi_version} returned, set once instantiated. */
    private int abiVersion;

    /**
     * Instantiates the component and checks its ABI, under the watchdog (a start function is guest code):
     * {@code thresher_abi_version} is checked from the binary and called, then the types of {@code run}
     * and {@code reduce} are checked for the version it returned, before either is called.
     *
     * @throws ThresherException GUEST_INVALID_MODULE, GUEST_ABI_MISMATCH, GUEST_TRAP or DEADLINE_EXCEEDED
     */
    static Cell open(WasmEngine engine, Component component, Limits limits, Watchdog watchdog, Deadline deadline) {
        return open(engine, component, limits, watchdog, deadline, false);
    }

    /**
     * Instantiates an HTTP handler and checks its ABI, under the watchdog: its imports against the handler ABI's,
     * {@code memory}, {@code thresher_handler_abi_version} (called: it must return
     * {@value GuestModuleCheck#HANDLER_ABI_VERSION}) and {@code handle} with their types.
     *
     * @throws ThresherException GUEST_INVALID_MODULE, GUEST_ABI_MISMATCH, GUEST_TRAP or DEADLINE_EXCEEDED
     */
    static Cell openHandler(WasmEngine engine, Component component, Limits limits, Watchdog watchdog, Deadline deadline) {
        return open(engine, component, limits, watchdog, deadline, true);
    }

    private static Cell open(WasmEngine engine, Component component, Limits limits, Watchdog watchdog, Deadline deadline,
                             boolean handler) {
        GuestIo io = new GuestIo(OUTPUT_CAPTURE_BYTES);
        WasmEngine.WasmSandbox sandbox = engine.newSandbox(component.digest(), io.stdin(), io.output(), io.output());
        Cell cell = new Cell(component, limits, watchdog, io, sandbox);
        Watchdog.Watch watch = watchdog.arm(deadline, sandbox);
        boolean fired = false;
        try {
            List<String> badImports = (handler ? GuestModuleCheck.checkHandler(component.wasm(), limits.guestMemoryMaxBytes())
                    : GuestModuleCheck.check(component.wasm(), ABI_V1, limits.guestMemoryMaxBytes())).imports();
            if (!badImports.isEmpty()) {
                // An import with another type than the host's would link and misbehave when called.
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, String.join("; ", badImports));
            }
            sandbox.instantiate(component.digest(), WasmMemoryCap.apply(component.wasm(), limits.guestMemoryMaxBytes()), cell);
            if (handler) {
                checkHandler(sandbox, component);
                fired = watch.disarm();
                if (fired) {
                    throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while instantiating the handler");
                }
                cell.abiVersion = GuestModuleCheck.HANDLER_ABI_VERSION;
                return cell;
            }
            if (!sandbox.hasMemory("memory") || !sandbox.hasFunction("thresher_abi_version")) {
                throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                        "component exports no memory or no thresher_abi_version: not a Thresher guest");
            }
            Map<String, WasmSignatures.FuncType> exported = WasmSignatures.exportedFunctions(component.wasm());
            checkSignature(exported, "thresher_abi_version", VERSION_TYPE, "1 or 2");
            int version = sandbox.callI32("thresher_abi_version");
            WasmSignatures.FuncType runType = RUN_TYPES.get(version);
            if (runType == null) {
                throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                        "component speaks guest ABI " + version + "; this host speaks 1 and 2");
            }
            checkSignature(exported, "run", runType, Integer.toString(version));
            checkSignature(exported, "reduce", REDUCE_TYPE, Integer.toString(version));
            for (String export : new String[] {"run", "reduce"}) {
                if (!sandbox.hasFunction(export)) {
                    throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH, "component exports no function " + export);
                }
            }
            fired = watch.disarm();
            if (fired) {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while instantiating the component");
            }
            cell.abiVersion = version;
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

    /** An HTTP handler's exports, once instantiated: memory, its ABI version (called) and handle. */
    private static void checkHandler(WasmEngine.WasmSandbox sandbox, Component component) {
        Map<String, WasmSignatures.FuncType> exported = WasmSignatures.exportedFunctions(component.wasm());
        Map<String, WasmSignatures.FuncType> wanted = GuestModuleCheck.handlerExports();
        if (!sandbox.hasMemory("memory") || !sandbox.hasFunction("thresher_handler_abi_version")) {
            throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                    "component exports no memory or no thresher_handler_abi_version: not an HTTP handler");
        }
        checkSignature(exported, "thresher_handler_abi_version", wanted.get("thresher_handler_abi_version"), "handler");
        int version = sandbox.callI32("thresher_handler_abi_version");
        if (version != GuestModuleCheck.HANDLER_ABI_VERSION) {
            throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH, "handler speaks HTTP handler ABI " + version
                    + "; this host speaks " + GuestModuleCheck.HANDLER_ABI_VERSION);
        }
        checkSignature(exported, "handle", wanted.get("handle"), "handler");
        if (!sandbox.hasFunction("handle")) {
            throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH, "component exports no function handle");
        }
    }

    int abiVersion() {
        return abiVersion;
    }

    /**
     * An HTTP handler's {@code handle(req_len)}: fd 0 yields the request ({@code dev.thresher.bindings.abi
     * .HttpRequestCodec}); the guest builds the response through the {@code http_*} imports and may make nested
     * calls through {@code call}. The deadline covers the whole invocation, nested calls included.
     */
    HandlerOutcome handle(byte[] request, Deadline deadline, NestedCalls nested) {
        HandlerInvocation inv = new HandlerInvocation(limits, sandbox, io, nested, deadline);
        currentHandler = inv;
        io.begin(request, new byte[0]);
        Watchdog.Watch watch = watchdog.arm(deadline, sandbox);
        long start = System.nanoTime();
        int status = 0;
        Throwable thrown = null;
        try {
            status = sandbox.callI32("handle", request.length);
        } catch (RuntimeException | Error e) {
            thrown = e;
        }
        long nanos = System.nanoTime() - start;
        boolean fired = watch.disarm();
        currentHandler = null;
        String printed = io.end();
        if (!printed.isEmpty() && LOG.isDebugEnabled()) {
            LOG.debug("handler {} printed: {}", component.digest(), printed);
        }
        broken = thrown != null || fired;
        RuntimeException failure = handlerFailure(inv, thrown, fired, nanos, status);
        if (failure != null) {
            throw withOutput(failure, printed);
        }
        return new HandlerOutcome(inv.status(), inv.headers(), inv.body(), inv.calls(), nanos - inv.nestedNanos());
    }

    /**
     * How a handler invocation failed, or null. A non-zero return that repeats the code its nested call returned
     * passes that call's failure through, typed as it was; any other is a guest-reported failure.
     */
    private static RuntimeException handlerFailure(HandlerInvocation inv, Throwable thrown, boolean fired, long nanos,
                                                   int status) {
        if (inv.decided() != null) {
            return inv.decided();
        }
        if (thrown != null) {
            if (fired) {
                return new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "guest handle stopped at its deadline after " + nanos / 1_000_000 + " ms", thrown);
            }
            if (thrown instanceof Error error) {
                throw error;
            }
            return ThresherException.of(thrown);
        }
        if (status == 0) {
            return null;
        }
        NestedCalls.Outcome last = inv.last();
        if (last != null && last.failure() != null && status == last.code()) {
            return last.failure().afterGuestCode();
        }
        return new ThresherException(ErrorCode.GUEST_REPORTED_FAILURE,
                inv.failMessage() != null ? inv.failMessage() : "guest handle returned status " + status);
    }

    /** ABI v1: {@code run(batch_len, args_len)} over one batch. */
    RunOutcome run(byte[] rowBatch, String argumentsJson, Deadline deadline, Budgets budgets) {
        byte[] args = argumentsJson.getBytes(StandardCharsets.UTF_8);
        return invoke(Invocation.Kind.RUN, deadline, budgets, () -> {
            io.begin(rowBatch, args);
            return new int[] {rowBatch.length, args.length};
        }, (inv, nanos) -> new RunOutcome(inv.partials(), inv.emitCount(), nanos));
    }

    /** ABI v2: {@code run(args_len)}, the batches streamed through fd 0 after the arguments. */
    RunOutcome runPaged(RowBatchStream batches, String argumentsJson, Deadline deadline, Budgets budgets) {
        byte[] args = argumentsJson.getBytes(StandardCharsets.UTF_8);
        return invoke(Invocation.Kind.RUN, deadline, budgets, () -> {
            io.beginPaged(args, batches);
            return new int[] {args.length};
        }, (inv, nanos) -> new RunOutcome(inv.partials(), inv.emitCount(), nanos));
    }

    ReduceOutcome reduce(byte[] partials, String argumentsJson, Deadline deadline) {
        byte[] args = argumentsJson.getBytes(StandardCharsets.UTF_8);
        return invoke(Invocation.Kind.REDUCE, deadline, Budgets.NONE, () -> {
            io.begin(partials, args);
            return new int[] {partials.length, args.length};
        }, (inv, nanos) -> new ReduceOutcome(inv.resultJson(), nanos));
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

    /** Installs an invocation's input on fd 0 and returns the export's arguments. */
    private interface Input {
        int[] install();
    }

    private <T> T invoke(Invocation.Kind kind, Deadline deadline, Budgets budgets, Input input, Outcome<T> outcome) {
        Invocation inv = new Invocation(kind, limits, budgets, sandbox);
        String export = kind == Invocation.Kind.RUN ? "run" : "reduce";
        current = inv;
        int[] params = input.install();
        Watchdog.Watch watch = watchdog.arm(deadline, sandbox);
        long start = System.nanoTime();
        int status = 0;
        Throwable thrown = null;
        try {
            status = sandbox.callI32(export, params);
        } catch (RuntimeException | Error e) {
            thrown = e; // an Error too: the watch is disarmed and the instance discarded before it goes on
        }
        long guestNanos = System.nanoTime() - start;
        boolean fired = watch.disarm();
        current = null;
        RuntimeException inputFailure = io.inputFailure();
        String printed = io.end();
        if (!printed.isEmpty() && LOG.isDebugEnabled()) {
            LOG.debug("guest {} {} printed: {}", component.digest(), export, printed);
        }
        // A guest that did not return normally may have left its heap half-updated; so may one that was
        // interrupted just as it returned. Neither instance is reused.
        broken = thrown != null || fired;
        RuntimeException failure = failure(inv, inputFailure, thrown, fired, export, guestNanos, status);
        if (failure != null) {
            throw withOutput(failure, printed);
        }
        return outcome.of(inv, guestNanos);
    }

    /** How the invocation failed, or null when it did not. */
    private static RuntimeException failure(Invocation inv, RuntimeException inputFailure, Throwable thrown, boolean fired,
                                            String export, long guestNanos, int status) {
        if (inv.decided() != null) {
            return inv.decided();
        }
        if (inputFailure != null) {
            // The guest saw its input end early; what ended it is the run's outcome, whatever the guest did next.
            ThresherException failed = ThresherException.of(inputFailure);
            if (thrown != null) {
                failed.addSuppressed(thrown);
            }
            return failed;
        }
        if (thrown != null) {
            if (fired) {
                return new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "guest " + export + " stopped at its deadline after " + guestNanos / 1_000_000 + " ms", thrown);
            }
            if (thrown instanceof Error error) {
                throw error;
            }
            return ThresherException.of(thrown);
        }
        if (status != 0) {
            String message = inv.failMessage() != null ? inv.failMessage() : "guest " + export + " returned status " + status;
            return new ThresherException(ErrorCode.GUEST_REPORTED_FAILURE, message);
        }
        return null;
    }

    /** What a guest printed that a failure carries, at most this many characters. */
    static final int OUTPUT_IN_FAILURE_CHARS = 2_048;

    /**
     * The failure with what the guest printed (stdout and stderr, bounded) after its message, so a caller and
     * the journal see it; control characters other than newline and tab become U+FFFD (a NUL cannot be stored).
     */
    static RuntimeException withOutput(RuntimeException failure, String printed) {
        if (printed.isEmpty() || !(failure instanceof ThresherException te)) {
            return failure;
        }
        String shown = printed.length() > OUTPUT_IN_FAILURE_CHARS
                ? printed.substring(0, OUTPUT_IN_FAILURE_CHARS) + "... (" + (printed.length() - OUTPUT_IN_FAILURE_CHARS)
                        + " more characters)"
                : printed;
        StringBuilder clean = new StringBuilder(shown.length());
        shown.stripTrailing().codePoints().forEach(c -> clean.appendCodePoint(
                c < 0x20 && c != '\n' && c != '\t' || c == 0x7f ? 0xFFFD : c));
        ThresherException with = new ThresherException(te.code(), te.getMessage() + "\nguest output:\n" + clean, te);
        for (Throwable t : te.getSuppressed()) {
            with.addSuppressed(t);
        }
        return with;
    }

    private Invocation current(String call) {
        Invocation inv = current;
        if (inv == null) {
            throw new ThresherException(ErrorCode.GUEST_INVALID_RESULT, call + " called outside run, reduce and handle");
        }
        return inv;
    }

    @Override
    public int emit(int keyPtr, int keyLen, double value) {
        return current("emit").emit(keyPtr, keyLen, value);
    }

    @Override
    public void fail(int msgPtr, int msgLen) {
        if (currentHandler != null) {
            currentHandler.fail(msgPtr, msgLen);
            return;
        }
        current("fail").fail(msgPtr, msgLen);
    }

    @Override
    public void httpStatus(int status) {
        HandlerInvocation inv = currentHandler;
        if (inv == null) {
            current("http_status").httpStatus(status);
            return;
        }
        inv.httpStatus(status);
    }

    @Override
    public void httpHeader(int namePtr, int nameLen, int valuePtr, int valueLen) {
        HandlerInvocation inv = currentHandler;
        if (inv == null) {
            current("http_header").httpHeader(namePtr, nameLen, valuePtr, valueLen);
            return;
        }
        inv.httpHeader(namePtr, nameLen, valuePtr, valueLen);
    }

    @Override
    public void httpBody(int ptr, int len) {
        HandlerInvocation inv = currentHandler;
        if (inv == null) {
            current("http_body").httpBody(ptr, len);
            return;
        }
        inv.httpBody(ptr, len);
    }

    @Override
    public int call(int descriptorPtr, int descriptorLen, int argsPtr, int argsLen) {
        HandlerInvocation inv = currentHandler;
        return inv == null ? current("call").call(descriptorPtr, descriptorLen, argsPtr, argsLen)
                : inv.call(descriptorPtr, descriptorLen, argsPtr, argsLen);
    }

    @Override
    public int callResultLen() {
        HandlerInvocation inv = currentHandler;
        return inv == null ? current("call_result_len").callResultLen() : inv.callResultLen();
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
