package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import org.graalvm.polyglot.Context;
import org.graalvm.polyglot.Engine;
import org.graalvm.polyglot.PolyglotException;
import org.graalvm.polyglot.Source;
import org.graalvm.polyglot.Value;
import org.graalvm.polyglot.io.ByteSequence;
import org.graalvm.polyglot.proxy.ProxyExecutable;
import org.graalvm.polyglot.proxy.ProxyObject;

/**
 * {@link WasmEngine} on GraalWasm: one polyglot {@link Engine} per component (so its parsed and compiled code is
 * shared by the component's cells and kept while it has any), one {@link Context} per sandbox. This is the only
 * class that imports {@code org.graalvm}.
 *
 * <p>An engine per component, not one per node: the entry a host call into a guest goes through
 * ({@code Value.execute}) and the interop stubs behind it belong to an engine, so on a shared engine they are
 * compiled for the guest functions of every component the node runs. A guest stopped at its deadline throws
 * away compiled code and profiles of that shared entry, and every other component's calls through it ran
 * deoptimised while the compiler, one core of two here, rebuilt an ever more polymorphic entry (seconds of
 * compilation each time). Apart, a stopped guest recompiles only its own code.
 */
final class GraalWasmEngine implements WasmEngine {
    private static final String WASI = "wasi_snapshot_preview1";
    /** How long one {@code Context.interrupt} may take before the watchdog tries again. */
    private static final Duration INTERRUPT_WAIT = Duration.ofMillis(500);

    private final String implementationName;
    /** The engines of components with a sandbox open or not yet retired, by component; guarded by {@code this}. */
    private final Map<String, Shared> engines = new HashMap<>();
    private boolean closed; // guarded by this

    /** One component's engine and how many of its sandboxes are open. */
    private static final class Shared {
        final Engine engine = Engine.newBuilder("wasm").build();
        int sandboxes;
        /** Close it once its last sandbox closes. */
        boolean retired;
    }

    GraalWasmEngine() {
        try (Engine probe = Engine.newBuilder("wasm").build()) {
            this.implementationName = probe.getImplementationName();
        }
    }

    @Override
    public String implementationName() {
        return implementationName;
    }

    @Override
    public boolean optimizing() {
        return !"Interpreted".equals(implementationName());
    }

    @Override
    public WasmSandbox newSandbox(String component, InputStream stdin, OutputStream stdout, OutputStream stderr) {
        Shared shared;
        synchronized (this) {
            if (closed) {
                throw new ThresherException(ErrorCode.CELL_UNAVAILABLE, "the guest engine is closed");
            }
            shared = engines.computeIfAbsent(component, c -> new Shared());
            shared.sandboxes++;
            shared.retired = false;
        }
        Context context;
        try {
            context = Context.newBuilder("wasm")
                    .engine(shared.engine)
                    .option("wasm.Builtins", WASI)
                    .in(stdin)
                    .out(stdout)
                    .err(stderr)
                    .build();
        } catch (RuntimeException | Error e) {
            released(component, shared);
            throw e;
        }
        return new Sandbox(context, () -> released(component, shared));
    }

    @Override
    public void retire(String component) {
        Shared idle;
        synchronized (this) {
            Shared shared = engines.get(component);
            if (shared == null) {
                return;
            }
            if (shared.sandboxes > 0) {
                shared.retired = true;
                return;
            }
            idle = engines.remove(component);
        }
        idle.engine.close();
    }

    /** How many components have an engine now (for tests). */
    synchronized int engines() {
        return engines.size();
    }

    /** A sandbox of {@code component} closed: its engine closes with it when it was the last of a retired engine. */
    private void released(String component, Shared shared) {
        synchronized (this) {
            shared.sandboxes--;
            if (shared.sandboxes > 0 || !(shared.retired || closed) || engines.get(component) != shared) {
                return;
            }
            engines.remove(component);
        }
        shared.engine.close(true);
    }

    @Override
    public void close() {
        java.util.List<Shared> all;
        synchronized (this) {
            closed = true;
            all = new java.util.ArrayList<>(engines.values());
            engines.clear();
        }
        for (Shared shared : all) {
            shared.engine.close(true);
        }
    }

    private static final class Sandbox implements WasmSandbox {
        private final Context context;
        /** Runs once, when the sandbox is closed or cancelled. */
        private final Runnable onClose;
        private final java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();
        private Value exports;
        private Value memory;

        Sandbox(Context context, Runnable onClose) {
            this.context = context;
            this.onClose = onClose;
        }

        private void release() {
            if (released.compareAndSet(false, true)) {
                onClose.run();
            }
        }

        @Override
        public void instantiate(String name, byte[] wasm, HostImports imports) {
            Value module;
            try {
                module = context.eval(Source.newBuilder("wasm", ByteSequence.create(wasm), name).buildLiteral());
            } catch (PolyglotException e) {
                throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "invalid module: " + e.getMessage());
            }
            Value instance;
            try {
                instance = module.newInstance(importObject(imports));
            } catch (PolyglotException e) {
                ThresherException mapped = translate(e);
                if (mapped.code() == ErrorCode.GUEST_TRAP) {
                    throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE,
                            "module does not link, or its start function trapped: " + e.getMessage());
                }
                if (mapped.code() == ErrorCode.GUEST_INVALID_RESULT || mapped.code() == ErrorCode.GUEST_REPORTED_FAILURE) {
                    // the start function called emit, a result-writer import, fail or proc_exit
                    throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE,
                            "the start function may not produce output or fail: " + mapped.getMessage());
                }
                throw mapped;
            }
            exports = instance.getMember("exports");
            Value m = exports.getMember("memory");
            memory = m != null && m.hasBufferElements() ? m : null;
        }

        @Override
        public boolean hasFunction(String export) {
            Value f = exports.getMember(export);
            return f != null && f.canExecute();
        }

        @Override
        public boolean hasMemory(String export) {
            Value m = exports.getMember(export);
            return m != null && m.hasBufferElements();
        }

        @Override
        public int callI32(String export, int... args) {
            Value result;
            try {
                Object[] boxed = new Object[args.length];
                for (int i = 0; i < args.length; i++) {
                    boxed[i] = args[i];
                }
                result = exports.getMember(export).execute(boxed);
            } catch (PolyglotException e) {
                throw translate(e);
            } catch (IllegalArgumentException | UnsupportedOperationException e) {
                throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                        "export " + export + " does not take " + args.length + " i32 arguments: " + e.getMessage());
            }
            if (result == null || !result.fitsInInt()) {
                throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH, "export " + export + " does not return an i32");
            }
            return result.asInt();
        }

        @Override
        public long memoryBytes() {
            return memory == null ? 0 : memory.getBufferSize();
        }

        @Override
        public byte[] readMemory(long address, int length) {
            byte[] out = new byte[length];
            if (length > 0) {
                memory.readBuffer(address, out, 0, length);
            }
            return out;
        }

        @Override
        public void interrupt() {
            try {
                context.interrupt(INTERRUPT_WAIT);
            } catch (TimeoutException e) {
                // The guest has not reached a safepoint yet; the watchdog tries again, then cancels.
            } catch (IllegalStateException | PolyglotException e) {
                // Already closed: nothing left to interrupt.
            }
        }

        @Override
        public void cancel() {
            try {
                context.close(true);
            } catch (IllegalStateException | PolyglotException e) {
                // Already closed.
            }
        }

        @Override
        public void close() {
            try {
                context.close(true);
            } catch (IllegalStateException | PolyglotException e) {
                // Closing a cancelled or broken context may complain; it is gone either way.
            } finally {
                release();
            }
        }

        /** Maps a polyglot failure to the ABI's vocabulary; a host import's own exception passes through. */
        private static ThresherException translate(PolyglotException e) {
            if (e.isHostException()) {
                Throwable host = e.asHostException();
                return host instanceof ThresherException te ? te
                        : new ThresherException(ErrorCode.INTERNAL_ERROR, "host import failed: " + host, host);
            }
            if (e.isInterrupted() || e.isCancelled()) {
                return new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "guest stopped at its deadline");
            }
            if (e.isExit()) {
                return new ThresherException(ErrorCode.GUEST_REPORTED_FAILURE, "guest exited with status " + e.getExitStatus());
            }
            if (e.isInternalError()) {
                return new ThresherException(ErrorCode.INTERNAL_ERROR, "wasm engine failed: " + e.getMessage(), e);
            }
            // Traps (unreachable, out-of-bounds access, call stack exhausted, ...) and resource exhaustion.
            return new ThresherException(ErrorCode.GUEST_TRAP, "guest trapped: " + e.getMessage());
        }

        private static ProxyObject importObject(HostImports h) {
            Map<String, Object> f = new HashMap<>();
            f.put("emit", fn("emit", 3, a -> h.emit(i32(a[0]), i32(a[1]), f64(a[2]))));
            f.put("fail", fn("fail", 2, a -> {
                h.fail(i32(a[0]), i32(a[1]));
                return null;
            }));
            f.put("json_begin_object", fn("json_begin_object", 0, a -> {
                h.jsonBeginObject();
                return null;
            }));
            f.put("json_end_object", fn("json_end_object", 0, a -> {
                h.jsonEndObject();
                return null;
            }));
            f.put("json_begin_array", fn("json_begin_array", 0, a -> {
                h.jsonBeginArray();
                return null;
            }));
            f.put("json_end_array", fn("json_end_array", 0, a -> {
                h.jsonEndArray();
                return null;
            }));
            f.put("json_key", fn("json_key", 2, a -> {
                h.jsonKey(i32(a[0]), i32(a[1]));
                return null;
            }));
            f.put("json_string", fn("json_string", 2, a -> {
                h.jsonString(i32(a[0]), i32(a[1]));
                return null;
            }));
            f.put("json_number", fn("json_number", 1, a -> {
                h.jsonNumber(f64(a[0]));
                return null;
            }));
            f.put("json_integer", fn("json_integer", 1, a -> {
                h.jsonInteger(i64(a[0]));
                return null;
            }));
            f.put("json_bool", fn("json_bool", 1, a -> {
                h.jsonBool(i32(a[0]));
                return null;
            }));
            f.put("json_null", fn("json_null", 0, a -> {
                h.jsonNull();
                return null;
            }));
            f.put("result_json", fn("result_json", 2, a -> {
                h.resultJson(i32(a[0]), i32(a[1]));
                return null;
            }));
            f.put("http_status", fn("http_status", 1, a -> {
                h.httpStatus(i32(a[0]));
                return null;
            }));
            f.put("http_header", fn("http_header", 4, a -> {
                h.httpHeader(i32(a[0]), i32(a[1]), i32(a[2]), i32(a[3]));
                return null;
            }));
            f.put("http_body", fn("http_body", 2, a -> {
                h.httpBody(i32(a[0]), i32(a[1]));
                return null;
            }));
            f.put("call", fn("call", 4, a -> h.call(i32(a[0]), i32(a[1]), i32(a[2]), i32(a[3]))));
            f.put("call_result_len", fn("call_result_len", 0, a -> h.callResultLen()));
            return ProxyObject.fromMap(Map.of(HostImports.MODULE, ProxyObject.fromMap(f)));
        }

        private static ProxyExecutable fn(String name, int arity, ProxyExecutable body) {
            return args -> {
                if (args.length != arity) {
                    throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                            "import thresher." + name + " takes " + arity + " arguments, the guest passed " + args.length);
                }
                try {
                    return body.execute(args);
                } catch (ClassCastException e) {
                    throw new ThresherException(ErrorCode.GUEST_ABI_MISMATCH,
                            "import thresher." + name + " declared with the wrong parameter types: " + e.getMessage());
                }
            };
        }

        private static int i32(Value v) {
            if (!v.fitsInInt()) {
                throw new ClassCastException("not an i32: " + v);
            }
            return v.asInt();
        }

        private static long i64(Value v) {
            if (!v.fitsInLong()) {
                throw new ClassCastException("not an i64: " + v);
            }
            return v.asLong();
        }

        private static double f64(Value v) {
            if (!v.isNumber() || !v.fitsInDouble()) {
                throw new ClassCastException("not an f64: " + v);
            }
            return v.asDouble();
        }
    }
}
