package dev.thresher.cellhost;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.dylibso.chicory.wabt.Wat2Wasm;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The deploy-time module check, and the same import rule at instantiation. */
class GuestModuleCheckTest {
    private static final long BUDGET = 256L << 20;

    private static byte[] module(String imports, String memory, int runParams) {
        String params = runParams == 1 ? "(param i32)" : "(param i32 i32)";
        return Wat2Wasm.parse("""
                (module
                  %s
                  %s
                  (func (export "thresher_abi_version") (result i32) (i32.const %d))
                  (func (export "run") %s (result i32) (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))"""
                .formatted(imports, memory, runParams == 1 ? 2 : 1, params));
    }

    @Test
    void aGuestOfEitherVersionWithTheHostsImportsPasses() {
        String imports = """
                (import "thresher" "emit" (func (param i32 i32 f64) (result i32)))
                (import "thresher" "json_integer" (func (param i64)))
                (import "wasi_snapshot_preview1" "fd_read" (func (param i32 i32 i32 i32) (result i32)))
                (import "wasi_snapshot_preview1" "clock_time_get" (func (param i32 i64 i32) (result i32)))
                (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))""";
        assertThat(GuestModuleCheck.problems(module(imports, "(memory (export \"memory\") 1)", 1), 2, BUDGET)).isEmpty();
        assertThat(GuestModuleCheck.problems(module(imports, "(memory (export \"memory\") 1 10)", 2), 1, BUDGET)).isEmpty();
    }

    @Test
    void everyProblemIsNamed() {
        byte[] bad = module("""
                (import "thresher" "emit" (func (param i32 i32) (result i32)))
                (import "thresher" "sleep" (func (param i32)))
                (import "env" "now" (func (result i64)))
                (import "wasi_snapshot_preview1" "memory" (global i32))""", "(memory 5000)", 2);
        assertThat(GuestModuleCheck.problems(bad, 2, BUDGET)).containsExactly(
                "export run: has type (i32, i32) -> (i32); guest ABI 2 wants (i32) -> (i32)",
                "export memory: missing; the host reads guest memory through it",
                "import thresher.emit: has type (i32, i32) -> (i32); the host provides (i32, i32, f64) -> (i32)",
                "import thresher.sleep: not a function the host provides",
                "import env.now: module 'env' is not provided; imports come from thresher and wasi_snapshot_preview1",
                "import wasi_snapshot_preview1.memory: only functions are imported, not a global",
                "memory: starts at 5000 pages (327680000 bytes), above the memory budget of 4096 pages (268435456 bytes)");
        assertThat(GuestModuleCheck.problems(bad, 3, BUDGET)).containsExactly("guest ABI version 3 is not served; the versions are 1 and 2");
        assertThatThrownBy(() -> GuestModuleCheck.problems(new byte[] {1, 2, 3}, 2, BUDGET))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.GUEST_INVALID_MODULE));
    }

    /** Bytes from hex pairs: {@code "00 61 73 6d"}. */
    static byte[] hex(String pairs) {
        String[] p = pairs.trim().split("\\s+");
        byte[] b = new byte[p.length];
        for (int i = 0; i < p.length; i++) {
            b[i] = (byte) Integer.parseInt(p[i], 16);
        }
        return b;
    }

    @Test
    @org.junit.jupiter.api.Timeout(value = 30, threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
    void aLengthReadAsNegativeOrPastTheEndIsRefusedNotLoopedOn() {
        // kills: WasmReader.length reading its size signed (a section of size 0xfffffffa pointed back at its own
        // start, and deploy looped for ever at 100% CPU)
        java.util.List<byte[]> malformed = java.util.List.of(
                hex("00 61 73 6d 01 00 00 00 00 fa ff ff ff 0f"), // custom section, size -6 as an int
                hex("00 61 73 6d 01 00 00 00 01 ff ff ff ff 0f"), // type section, size 2^32 - 1
                hex("00 61 73 6d 01 00 00 00 01 05 ff ff ff ff 0f"), // a count of 2^32 - 1 types in 5 bytes
                hex("00 61 73 6d 01 00 00 00 07 07 01 ff ff ff ff 0f 00"), // an export name of 2^32 - 1 bytes
                hex("00 61 73 6d 01 00 00 00 01 01 02 60 00 00"), // a section read past its size
                hex("00 61 73 6d 01 00 00 00 00 ff ff ff ff 7f")); // bits beyond 32 in a u32
        for (byte[] wasm : malformed) {
            assertThatThrownBy(() -> GuestModuleCheck.problems(wasm, 2, BUDGET)).as(java.util.HexFormat.of().formatHex(wasm))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_INVALID_MODULE);
                        assertThat(e.getMessage()).startsWith("the module binary cannot be read: ");
                    });
            // The memory cap and the signatures read only the sections they need: each reads or refuses, never loops.
            for (Runnable reader : java.util.List.<Runnable>of(() -> WasmMemoryCap.apply(wasm, BUDGET),
                    () -> WasmSignatures.exportedFunctions(wasm))) {
                try {
                    reader.run();
                } catch (ThresherException e) {
                    assertThat(e.code()).isEqualTo(ErrorCode.GUEST_INVALID_MODULE);
                }
            }
            assertThat(GuestModuleCheck.memoryMaximumBytes(wasm, BUDGET)).isEqualTo(BUDGET);
        }
    }

    @Test
    void anImportOfTheWrongTypeIsRefusedAtInstantiationToo() {
        Component c = Component.of(module("(import \"thresher\" \"fail\" (func (param i64)))",
                "(memory (export \"memory\") 1)", 1));
        try (CellHost host = CellHost.create(Limits.DEFAULTS)) {
            assertThatThrownBy(() -> host.run(c, new byte[8], "{}", Deadline.afterMillis(System.nanoTime(),
                    TimeUnit.SECONDS.toMillis(30))))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_INVALID_MODULE);
                        assertThat(e.getMessage()).contains("import thresher.fail: has type (i64) -> ()");
                    });
            assertThat(host.guestStarts()).isZero();
        }
    }
}
