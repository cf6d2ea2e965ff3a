package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a deploy checks of a module before anything is stored, from its binary alone (no guest code runs):
 * the exports the declared guest ABI version needs, with their exact types; every import inside the set
 * the host provides, with its exact type; the memory defined, not imported, 32-bit, starting within the
 * memory budget; tables starting within {@link #TABLE_ELEMENTS_MAX} elements. Each problem is one line
 * naming the export, import, memory or table and what is wrong.
 */
public final class GuestModuleCheck {
    /** Elements a module's tables may start with, in all. */
    public static final long TABLE_ELEMENTS_MAX = 100_000;

    private static final byte I32 = 0x7f;
    private static final byte I64 = 0x7e;
    private static final byte F64 = 0x7c;
    /** Module {@code thresher}: the guest ABI's host functions (docs/guest-abi.md section 1). */
    static final Map<String, WasmSignatures.FuncType> THRESHER_IMPORTS = new LinkedHashMap<>();
    /** Module {@code thresher} for an HTTP handler: {@code fail} and the handler ABI's host functions (docs/guest-abi.md). */
    static final Map<String, WasmSignatures.FuncType> HANDLER_IMPORTS = new LinkedHashMap<>();
    /** Module {@code wasi_snapshot_preview1}: the WASI preview 1 functions a guest may import. */
    static final Map<String, WasmSignatures.FuncType> WASI_IMPORTS = new LinkedHashMap<>();

    static {
        THRESHER_IMPORTS.put("emit", sig(new byte[] {I32, I32, F64}, I32));
        THRESHER_IMPORTS.put("fail", sig(new byte[] {I32, I32}));
        for (String n : List.of("json_begin_object", "json_end_object", "json_begin_array", "json_end_array", "json_null")) {
            THRESHER_IMPORTS.put(n, sig(new byte[0]));
        }
        THRESHER_IMPORTS.put("json_key", sig(new byte[] {I32, I32}));
        THRESHER_IMPORTS.put("json_string", sig(new byte[] {I32, I32}));
        THRESHER_IMPORTS.put("json_number", sig(new byte[] {F64}));
        THRESHER_IMPORTS.put("json_integer", sig(new byte[] {I64}));
        THRESHER_IMPORTS.put("json_bool", sig(new byte[] {I32}));
        THRESHER_IMPORTS.put("result_json", sig(new byte[] {I32, I32}));

        HANDLER_IMPORTS.put("fail", sig(new byte[] {I32, I32}));
        HANDLER_IMPORTS.put("http_status", sig(new byte[] {I32}));
        HANDLER_IMPORTS.put("http_header", sig(new byte[] {I32, I32, I32, I32}));
        HANDLER_IMPORTS.put("http_body", sig(new byte[] {I32, I32}));
        HANDLER_IMPORTS.put("call", sig(new byte[] {I32, I32, I32, I32}, I32));
        HANDLER_IMPORTS.put("call_result_len", sig(new byte[0], I32));

        byte[] ii = {I32, I32};
        for (String n : List.of("args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_res_get",
                "fd_fdstat_get", "fd_fdstat_set_flags", "fd_filestat_get", "fd_prestat_get", "fd_tell", "random_get")) {
            WASI_IMPORTS.put(n, sig(ii, I32));
        }
        WASI_IMPORTS.put("clock_time_get", sig(new byte[] {I32, I64, I32}, I32));
        WASI_IMPORTS.put("fd_close", sig(new byte[] {I32}, I32));
        WASI_IMPORTS.put("fd_sync", sig(new byte[] {I32}, I32));
        WASI_IMPORTS.put("fd_prestat_dir_name", sig(new byte[] {I32, I32, I32}, I32));
        WASI_IMPORTS.put("fd_read", sig(new byte[] {I32, I32, I32, I32}, I32));
        WASI_IMPORTS.put("fd_write", sig(new byte[] {I32, I32, I32, I32}, I32));
        WASI_IMPORTS.put("fd_seek", sig(new byte[] {I32, I64, I32, I32}, I32));
        WASI_IMPORTS.put("poll_oneoff", sig(new byte[] {I32, I32, I32, I32}, I32));
        WASI_IMPORTS.put("proc_exit", sig(new byte[] {I32}));
        WASI_IMPORTS.put("sched_yield", sig(new byte[0], I32));
    }

    private GuestModuleCheck() {
    }

    private static WasmSignatures.FuncType sig(byte[] params, byte... results) {
        List<Byte> p = new ArrayList<>();
        for (byte b : params) {
            p.add(b);
        }
        List<Byte> r = new ArrayList<>();
        for (byte b : results) {
            r.add(b);
        }
        return new WasmSignatures.FuncType(List.copyOf(p), List.copyOf(r));
    }

    /** The function types a guest of each ABI version must export. */
    private static Map<String, WasmSignatures.FuncType> exportsOf(int abiVersion) {
        Map<String, WasmSignatures.FuncType> m = new LinkedHashMap<>();
        m.put("thresher_abi_version", WasmSignatures.FuncType.i32s(0, 1));
        m.put("run", WasmSignatures.FuncType.i32s(abiVersion == 2 ? 1 : 2, 1));
        m.put("reduce", WasmSignatures.FuncType.i32s(2, 1));
        return m;
    }

    /**
     * Every problem with the module for the given ABI version and memory budget, one line each; empty when
     * there is none.
     *
     * @throws ThresherException {@link ErrorCode#GUEST_INVALID_MODULE} when the binary cannot be read at all
     */
    public static List<String> problems(byte[] wasm, int abiVersion, long memoryMaxBytes) {
        return check(wasm, abiVersion, memoryMaxBytes).all();
    }

    /** The problems of a module by kind: exports (and the ABI version), imports, memories and tables. */
    public record Problems(List<String> exports, List<String> imports, List<String> memory) {
        public List<String> all() {
            List<String> all = new ArrayList<>(exports);
            all.addAll(imports);
            all.addAll(memory);
            return all;
        }
    }

    /** The version an HTTP handler's {@code thresher_handler_abi_version} returns. */
    public static final int HANDLER_ABI_VERSION = 1;

    /** The function types an HTTP handler must export. */
    static Map<String, WasmSignatures.FuncType> handlerExports() {
        Map<String, WasmSignatures.FuncType> m = new LinkedHashMap<>();
        m.put("thresher_handler_abi_version", WasmSignatures.FuncType.i32s(0, 1));
        m.put("handle", WasmSignatures.FuncType.i32s(1, 1));
        return m;
    }

    /** As {@link #problems}, by kind. */
    public static Problems check(byte[] wasm, int abiVersion, long memoryMaxBytes) {
        if (abiVersion != 1 && abiVersion != 2) {
            return new Problems(List.of("guest ABI version " + abiVersion + " is not served; the versions are 1 and 2"),
                    List.of(), List.of());
        }
        return check(wasm, exportsOf(abiVersion), "guest ABI " + abiVersion, THRESHER_IMPORTS, memoryMaxBytes);
    }

    /**
     * The problems of an HTTP handler module, by kind: {@code memory}, {@code thresher_handler_abi_version} and
     * {@code handle} exported with their types, every import from the handler ABI's {@code thresher} functions or
     * WASI, memory and tables as for any guest.
     */
    public static Problems checkHandler(byte[] wasm, long memoryMaxBytes) {
        return check(wasm, handlerExports(), "the HTTP handler ABI", HANDLER_IMPORTS, memoryMaxBytes);
    }

    private static Problems check(byte[] wasm, Map<String, WasmSignatures.FuncType> exports, String abi,
                                  Map<String, WasmSignatures.FuncType> thresherImports, long memoryMaxBytes) {
        List<String> exportProblems = new ArrayList<>();
        List<String> importProblems = new ArrayList<>();
        List<String> memoryProblems = new ArrayList<>();
        Facts facts;
        try {
            facts = Facts.read(wasm);
        } catch (IndexOutOfBoundsException | IllegalStateException e) {
            throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "the module binary cannot be read: " + e.getMessage());
        }
        exports.forEach((name, type) -> {
            WasmSignatures.FuncType actual = facts.exports.get(name);
            if (actual == null) {
                exportProblems.add("export " + name + ": missing; " + abi + " needs it with type " + type);
            } else if (!actual.equals(type)) {
                exportProblems.add("export " + name + ": has type " + actual + "; " + abi + " wants " + type);
            }
        });
        if (!facts.exportedMemories.contains("memory")) {
            exportProblems.add("export memory: missing; the host reads guest memory through it");
        }
        List<String> problems = importProblems;
        for (Import i : facts.imports) {
            String where = "import " + i.module() + "." + i.name();
            Map<String, WasmSignatures.FuncType> allowed = switch (i.module()) {
                case "thresher" -> thresherImports;
                case "wasi_snapshot_preview1" -> WASI_IMPORTS;
                default -> null;
            };
            if (allowed == null) {
                problems.add(where + ": module '" + i.module() + "' is not provided; imports come from thresher and"
                        + " wasi_snapshot_preview1");
            } else if (i.kind() != 0) {
                problems.add(where + ": only functions are imported, not a " + KINDS[Math.min(i.kind(), 4)]);
            } else if (!allowed.containsKey(i.name())) {
                boolean otherKind = thresherImports == THRESHER_IMPORTS ? HANDLER_IMPORTS.containsKey(i.name())
                        : THRESHER_IMPORTS.containsKey(i.name());
                problems.add(where + ": not a function the host provides" + (!otherKind ? ""
                        : thresherImports == THRESHER_IMPORTS ? " to run and reduce (only an HTTP handler imports it)"
                        : " to an HTTP handler (only run and reduce import it)"));
            } else if (!allowed.get(i.name()).equals(i.type())) {
                problems.add(where + ": has type " + i.type() + "; the host provides " + allowed.get(i.name()));
            }
        }
        problems = memoryProblems;
        long capPages = Math.max(1, memoryMaxBytes / WasmMemoryCap.PAGE_BYTES);
        for (long[] m : facts.memories) {
            if (m[2] != 0) {
                problems.add("memory: 64-bit memories are not served");
            } else if (m[0] > capPages) {
                problems.add("memory: starts at " + m[0] + " pages (" + m[0] * WasmMemoryCap.PAGE_BYTES
                        + " bytes), above the memory budget of " + capPages + " pages (" + memoryMaxBytes + " bytes)");
            }
        }
        if (facts.memories.size() > 1) {
            problems.add("memory: " + facts.memories.size() + " memories defined; a guest has one");
        }
        long tableElements = facts.tableMinimums.stream().mapToLong(Long::longValue).sum();
        if (tableElements > TABLE_ELEMENTS_MAX) {
            problems.add("table: " + tableElements + " elements at start, above the bound of " + TABLE_ELEMENTS_MAX);
        }
        return new Problems(exportProblems, importProblems, memoryProblems);
    }

    /**
     * The memory a cell of this module may come to hold: its memory's declared maximum, capped at
     * {@code capBytes} (the cap when it declares none, or when the binary cannot be read).
     */
    static long memoryMaximumBytes(byte[] wasm, long capBytes) {
        try {
            Facts facts = Facts.read(wasm);
            long most = 0;
            for (long[] m : facts.memories) {
                most = Math.max(most, m[1] < 0 ? capBytes : Math.min(capBytes, m[1] * WasmMemoryCap.PAGE_BYTES));
            }
            return facts.memories.isEmpty() ? WasmMemoryCap.PAGE_BYTES : Math.max(most, WasmMemoryCap.PAGE_BYTES);
        } catch (IndexOutOfBoundsException | IllegalStateException e) {
            return capBytes;
        }
    }

    /**
     * The largest maximum the module's memories declare, in bytes; -1 when one declares none (it may grow to
     * whatever the host allows), 0 when it has no memory.
     *
     * @throws IllegalStateException or {@link IndexOutOfBoundsException} for a binary that cannot be read
     */
    public static long declaredMemoryMaximumBytes(byte[] wasm) {
        long most = 0;
        for (long[] m : Facts.read(wasm).memories) {
            if (m[1] < 0) {
                return -1;
            }
            most = Math.max(most, m[1] * WasmMemoryCap.PAGE_BYTES);
        }
        return most;
    }

    /** The module's exported functions and their types, from its binary; malformed input throws unchecked. */
    static Map<String, WasmSignatures.FuncType> exportedFunctions(byte[] wasm) {
        return Facts.read(wasm).exports;
    }

    private static final String[] KINDS = {"function", "table", "memory", "global", "tag"};

    /** One import: its names, its kind (0 function, 1 table, 2 memory, 3 global, 4 tag) and, for a function, its type. */
    record Import(String module, String name, int kind, WasmSignatures.FuncType type) {
    }

    /** What the binary declares. */
    private static final class Facts {
        final Map<String, WasmSignatures.FuncType> exports = new HashMap<>();
        final List<String> exportedMemories = new ArrayList<>();
        final List<Import> imports = new ArrayList<>();
        /** Defined memories: minimum pages, maximum pages (-1 none), 64-bit flag. */
        final List<long[]> memories = new ArrayList<>();
        final List<Long> tableMinimums = new ArrayList<>();

        /**
         * Long because: one case per section of the binary that declares what the checks read, each a few lines.
         * The module's types, imports, functions, tables, memories and exports, read in one pass over its sections.
         */
        static Facts read(byte[] wasm) {
            WasmReader r = new WasmReader(wasm);
            if (!r.hasMagic()) {
                throw new IllegalStateException("no \\0asm magic: not a WebAssembly module");
            }
            Facts f = new Facts();
            List<WasmSignatures.FuncType> types = new ArrayList<>();
            List<Integer> functionTypes = new ArrayList<>();
            Map<String, Integer> exportedFunctions = new HashMap<>();
            r.pos = 8;
            while (!r.atEnd()) {
                int id = r.u8();
                int end = r.sectionEnd();
                switch (id) {
                    case 1 -> {
                        for (int n = r.count(); n > 0; n--) {
                            if (r.u8() != 0x60) {
                                throw new IllegalStateException("a type is not a function type");
                            }
                            types.add(new WasmSignatures.FuncType(valueTypes(r), valueTypes(r)));
                        }
                    }
                    case 2 -> {
                        for (int n = r.count(); n > 0; n--) {
                            String module = r.name();
                            String name = r.name();
                            int[] typeIndex = {-1};
                            int kind = r.skipImportDescription(t -> typeIndex[0] = t);
                            if (kind == 0) {
                                functionTypes.add(typeIndex[0]);
                            }
                            f.imports.add(new Import(module, name, kind, kind == 0 ? types.get(typeIndex[0]) : null));
                        }
                    }
                    case 3 -> {
                        for (int n = r.count(); n > 0; n--) {
                            functionTypes.add(r.index());
                        }
                    }
                    case 4 -> {
                        for (int n = r.count(); n > 0; n--) {
                            r.u8(); // reference type
                            int flags = r.u8();
                            f.tableMinimums.add(Integer.toUnsignedLong(r.u32()));
                            if ((flags & 1) != 0) {
                                r.u32();
                            }
                        }
                    }
                    case 5 -> {
                        for (int n = r.count(); n > 0; n--) {
                            int flags = r.u8();
                            boolean is64 = (flags & 4) != 0;
                            long min = is64 ? u64(r) : Integer.toUnsignedLong(r.u32());
                            long max = (flags & 1) != 0 ? (is64 ? u64(r) : Integer.toUnsignedLong(r.u32())) : -1;
                            f.memories.add(new long[] {min, max, is64 ? 1 : 0});
                        }
                    }
                    case 7 -> {
                        for (int n = r.count(); n > 0; n--) {
                            String name = r.name();
                            int kind = r.u8();
                            int index = r.index();
                            if (kind == 0) {
                                exportedFunctions.put(name, index);
                            } else if (kind == 2) {
                                f.exportedMemories.add(name);
                            }
                        }
                    }
                    default -> { }
                }
                r.endSection(id, end);
            }
            exportedFunctions.forEach((name, index) -> {
                if (index < functionTypes.size() && functionTypes.get(index) < types.size()) {
                    f.exports.put(name, types.get(functionTypes.get(index)));
                }
            });
            return f;
        }

        private static List<Byte> valueTypes(WasmReader r) {
            List<Byte> t = new ArrayList<>();
            for (int n = r.count(); n > 0; n--) {
                t.add((byte) r.u8());
            }
            return List.copyOf(t);
        }

        private static long u64(WasmReader r) {
            long result = 0;
            for (int shift = 0; shift < 70; shift += 7) {
                int x = r.u8();
                result |= (long) (x & 0x7f) << shift;
                if ((x & 0x80) == 0) {
                    return result;
                }
            }
            throw new IllegalStateException("LEB128 longer than 10 bytes");
        }
    }
}
