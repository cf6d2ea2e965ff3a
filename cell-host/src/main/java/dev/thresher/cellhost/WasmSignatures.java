package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The types of a module's exported functions, read from its binary (type, import, function and
 * export sections; WebAssembly core specification, section 5.5). The engine validates the module;
 * this only lets the host check the guest ABI's signatures before any export is called.
 */
final class WasmSignatures {
    static final byte I32 = 0x7f;

    /** A function type: parameter and result value types as their binary encodings. */
    record FuncType(List<Byte> params, List<Byte> results) {
        static FuncType i32s(int params, int results) {
            List<Byte> p = new ArrayList<>();
            for (int i = 0; i < params; i++) {
                p.add(I32);
            }
            List<Byte> r = new ArrayList<>();
            for (int i = 0; i < results; i++) {
                r.add(I32);
            }
            return new FuncType(List.copyOf(p), List.copyOf(r));
        }

        @Override
        public String toString() {
            return "(" + names(params) + ") -> (" + names(results) + ")";
        }

        private static String names(List<Byte> types) {
            List<String> n = new ArrayList<>();
            for (byte t : types) {
                n.add(switch (t) {
                    case 0x7f -> "i32";
                    case 0x7e -> "i64";
                    case 0x7d -> "f32";
                    case 0x7c -> "f64";
                    case 0x7b -> "v128";
                    default -> String.format("0x%02x", t);
                });
            }
            return String.join(", ", n);
        }
    }

    private final WasmReader r;

    private WasmSignatures(byte[] wasm) {
        this.r = new WasmReader(wasm);
    }

    /**
     * Exported function name to its type.
     *
     * @throws ThresherException {@link ErrorCode#GUEST_INVALID_MODULE} when the binary cannot be read
     */
    static Map<String, FuncType> exportedFunctions(byte[] wasm) {
        try {
            return new WasmSignatures(wasm).read();
        } catch (IndexOutOfBoundsException | IllegalStateException e) {
            throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "the module binary cannot be read: " + e.getMessage());
        }
    }

    private Map<String, FuncType> read() {
        if (!r.hasMagic()) {
            throw new IllegalStateException("no \\0asm magic");
        }
        r.pos = 8;
        List<FuncType> types = new ArrayList<>();
        List<Integer> functionTypes = new ArrayList<>(); // type index per function index, imports first
        Map<String, Integer> exported = new HashMap<>();
        while (!r.atEnd()) {
            int id = r.u8();
            int size = r.u32();
            int end = r.pos + size;
            switch (id) {
                case 1 -> {
                    for (int n = r.u32(); n > 0; n--) {
                        if (r.u8() != 0x60) {
                            throw new IllegalStateException("a type is not a function type");
                        }
                        types.add(new FuncType(valueTypes(), valueTypes()));
                    }
                }
                case 2 -> {
                    for (int n = r.u32(); n > 0; n--) {
                        r.name();
                        r.name();
                        r.skipImportDescription(functionTypes::add);
                    }
                }
                case 3 -> {
                    for (int n = r.u32(); n > 0; n--) {
                        functionTypes.add(r.u32());
                    }
                }
                case 7 -> {
                    for (int n = r.u32(); n > 0; n--) {
                        String name = r.name();
                        int kind = r.u8();
                        int index = r.u32();
                        if (kind == 0) {
                            exported.put(name, index);
                        }
                    }
                }
                default -> { }
            }
            r.pos = end;
        }
        Map<String, FuncType> result = new HashMap<>();
        exported.forEach((name, index) -> result.put(name, types.get(functionTypes.get(index))));
        return result;
    }

    private List<Byte> valueTypes() {
        List<Byte> t = new ArrayList<>();
        for (int n = r.u32(); n > 0; n--) {
            t.add((byte) r.u8());
        }
        return List.copyOf(t);
    }
}
