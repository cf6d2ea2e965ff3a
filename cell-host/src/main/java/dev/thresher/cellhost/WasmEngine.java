package dev.thresher.cellhost;

import java.io.InputStream;
import java.io.OutputStream;

/**
 * The little a cell needs from a WebAssembly engine, so that another engine could replace GraalWasm.
 * An engine is shared by all cells of a host and is thread-safe; it may keep compiled code per component, apart
 * from other components'. Each sandbox is used by one thread at a time, except {@link WasmSandbox#interrupt()}
 * and {@link WasmSandbox#cancel()}.
 */
interface WasmEngine extends AutoCloseable {
    /** The engine's own name for its implementation, e.g. "GraalVM CE", or "Interpreted" without a JIT. */
    String implementationName();

    /** True when guest code is compiled, not interpreted. */
    boolean optimizing();

    /**
     * A new, empty sandbox for a module of {@code component} (its digest) whose WASI fd 0 reads {@code stdin} and
     * whose fds 1 and 2 write to {@code stdout} and {@code stderr}. No file system, environment, or network is
     * visible.
     */
    WasmSandbox newSandbox(String component, InputStream stdin, OutputStream stdout, OutputStream stderr);

    /**
     * Drops what the engine keeps for {@code component} (compiled code, profiles) once its open sandboxes are
     * closed; a later sandbox of it starts cold. Does nothing for a component it keeps nothing for.
     */
    default void retire(String component) {
    }

    @Override
    void close();

    /** One module instance and everything it owns. */
    interface WasmSandbox extends AutoCloseable {
        /**
         * Parses, validates, links ({@code thresher} to {@code imports}, WASI preview 1 built in) and starts
         * the module.
         *
         * @throws dev.thresher.errors.ThresherException GUEST_INVALID_MODULE when the bytes are not a valid
         *         module or do not link; GUEST_TRAP when the start function traps
         */
        void instantiate(String name, byte[] wasm, HostImports imports);

        boolean hasFunction(String export);

        boolean hasMemory(String export);

        /**
         * Calls an exported function that takes i32 arguments and returns one i32.
         *
         * @throws dev.thresher.errors.ThresherException GUEST_TRAP for a trap, DEADLINE_EXCEEDED when
         *         interrupted, GUEST_ABI_MISMATCH when the signature does not fit, or the exception a host
         *         import threw
         */
        int callI32(String export, int... args);

        /** Current size in bytes of the exported {@code memory}. */
        long memoryBytes();

        /** Copies {@code length} bytes of the exported {@code memory} starting at {@code address}. */
        byte[] readMemory(long address, int length);

        /** From another thread: stops the running guest at its next safepoint; blocks briefly until it has. */
        void interrupt();

        /** From another thread: stops everything for good; the sandbox is unusable afterwards. */
        void cancel();

        @Override
        void close();
    }
}
