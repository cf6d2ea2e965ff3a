package dev.thresher.cellhost;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;

/**
 * Any bytes deployed as a module are read or refused as {@link ErrorCode#GUEST_INVALID_MODULE} by every reader of
 * the binary the host has (the deploy check, the memory cap's rewrite, the signatures, the memory estimate): never
 * another exception, and never a loop. Regression inputs: {@code
 * src/test/resources/dev/thresher/cellhost/ModuleReaderFuzzTestInputs/modules/}; fuzzing: docs/security.md,
 * "Fuzzing".
 */
class ModuleReaderFuzzTest {
    private static final long BUDGET = 256L << 20;
    /** Far above what one input takes (microseconds): passing it means a loop, not a slow machine. */
    private static final long INPUT_BOUND_MS = 5_000;

    @Timeout(30)
    @FuzzTest
    void modules(byte[] wasm) {
        long start = System.nanoTime();
        readsOrRefuses(() -> GuestModuleCheck.check(wasm, 2, BUDGET));
        readsOrRefuses(() -> GuestModuleCheck.checkHandler(wasm, BUDGET));
        readsOrRefuses(() -> WasmMemoryCap.apply(wasm, BUDGET));
        readsOrRefuses(() -> WasmSignatures.exportedFunctions(wasm));
        assertThat(GuestModuleCheck.memoryMaximumBytes(wasm, BUDGET)).isBetween(1L, BUDGET);
        try {
            GuestModuleCheck.declaredMemoryMaximumBytes(wasm);
        } catch (IllegalStateException | IndexOutOfBoundsException unreadable) {
            // its documented refusal; the deploy check turns it into GUEST_INVALID_MODULE first
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("milliseconds one input took")
                .isLessThan(INPUT_BOUND_MS);
    }

    private static void readsOrRefuses(Runnable read) {
        try {
            read.run();
        } catch (ThresherException refused) {
            assertThat(refused.code()).isEqualTo(ErrorCode.GUEST_INVALID_MODULE);
        }
    }
}
