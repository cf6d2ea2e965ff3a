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

    private final byte[] b;
    private int pos;

    private WasmSignatures(byte[] wasm) {
        this.b = wasm;
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
        if (b.length < 8 || b[0] != 0 || b[1] != 'a' || b[2] != 's' || b[3] != 'm') {
            throw new IllegalStateException("no \\0asm magic");
        }
        pos = 8;
        List<FuncType> types = new ArrayList<>();
        List<Integer> functionTypes = new ArrayList<>(); // type index per function index, imports first
        Map<String, Integer> exported = new HashMap<>();
        while (pos < b.length) {
            int id = b[pos++] & 0xff;
            int size = u32();
            int end = pos + size;
            switch (id) {
                case 1 -> {
                    for (int n = u32(); n > 0; n--) {
                        if (b[pos++] != 0x60) {
                            throw new IllegalStateException("a type is not a function type");
                        }
                        types.add(new FuncType(valueTypes(), valueTypes()));
                    }
                }
                case 2 -> {
                    for (int n = u32(); n > 0; n--) {
                        name();
                        name();
                        int kind = b[pos++];
                        switch (kind) {
                            case 0 -> functionTypes.add(u32());
                            case 1 -> { // table: reftype, limits
                                pos++;
                                limits();
                            }
                            case 2 -> limits(); // memory
                            case 3 -> pos += 2; // global: valtype, mutability
                            case 4 -> { // tag: attribute, type index
                                pos++;
                                u32();
                            }
                            default -> throw new IllegalStateException("import kind " + kind);
                        }
                    }
                }
                case 3 -> {
                    for (int n = u32(); n > 0; n--) {
                        functionTypes.add(u32());
                    }
                }
                case 7 -> {
                    for (int n = u32(); n > 0; n--) {
                        String name = name();
                        int kind = b[pos++];
                        int index = u32();
                        if (kind == 0) {
                            exported.put(name, index);
                        }
                    }
                }
                default -> { }
            }
            pos = end;
        }
        Map<String, FuncType> result = new HashMap<>();
        exported.forEach((name, index) -> result.put(name, types.get(functionTypes.get(index))));
        return result;
    }

    private List<Byte> valueTypes() {
        List<Byte> t = new ArrayList<>();
        for (int n = u32(); n > 0; n--) {
            t.add(b[pos++]);
        }
        return List.copyOf(t);
    }

    private void limits() {
        int flags = b[pos++];
        u32();
        if ((flags & 1) != 0) {
            u32();
        }
    }

    private String name() {
        int len = u32();
        String s = new String(b, pos, len, java.nio.charset.StandardCharsets.UTF_8);
        pos += len;
        return s;
    }

    private int u32() {
        int result = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            int x = b[pos++] & 0xff;
            result |= (x & 0x7f) << shift;
            if ((x & 0x80) == 0) {
                return result;
            }
        }
        throw new IllegalStateException("LEB128 longer than 5 bytes");
    }
}
