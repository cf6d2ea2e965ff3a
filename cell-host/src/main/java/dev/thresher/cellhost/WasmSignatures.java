package dev.thresher.cellhost;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Function types as the binary encodes them, and a module's exported functions with theirs (read from
 * its type, import, function and export sections by {@link GuestModuleCheck}; WebAssembly core
 * specification, section 5.5). The engine validates the module; this only lets the host check the guest
 * ABI's signatures before any export is called.
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

    private WasmSignatures() {
    }

    /**
     * Exported function name to its type.
     *
     * @throws ThresherException {@link ErrorCode#GUEST_INVALID_MODULE} when the binary cannot be read
     */
    static Map<String, FuncType> exportedFunctions(byte[] wasm) {
        try {
            return GuestModuleCheck.exportedFunctions(wasm);
        } catch (IndexOutOfBoundsException | IllegalStateException e) {
            throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "the module binary cannot be read: " + e.getMessage());
        }
    }
}
