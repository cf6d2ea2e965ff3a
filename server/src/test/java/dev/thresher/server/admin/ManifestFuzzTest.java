package dev.thresher.server.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;

/**
 * Any bytes a deployer sends as a manifest (a file beside the module, the {@code manifest} of {@code POST
 * /admin/bindings}, the string of {@code CREATE BINDING WITH MANIFEST}) are read or refused as
 * {@code INVALID_CONFIGURATION} within a bound: never another exception or a wait, and the refusal names at most
 * {@link Manifest#MAX_PROBLEMS} problems, each value of the stranger's quoted and cut, so it stays small whatever the
 * manifest's size. Regression inputs: {@code src/test/resources/dev/thresher/server/admin/ManifestFuzzTestInputs/
 * manifests/}; fuzzing: docs/security.md, "Fuzzing".
 */
class ManifestFuzzTest {
    /** Far above what any manifest takes (milliseconds): passing it means a blow-up, not a slow machine. */
    private static final long INPUT_BOUND_MS = 5_000;
    /** Problems of at most a few hundred characters each, at most {@link Manifest#MAX_PROBLEMS} of them. */
    private static final int MESSAGE_BOUND = Manifest.MAX_PROBLEMS * 600;

    @Timeout(30)
    @FuzzTest
    void manifests(byte[] input) {
        long start = System.nanoTime();
        try {
            Manifest m = Manifest.parse(input);
            assertThat(Manifest.NAME.matcher(m.binding()).matches()).as("the binding's name").isTrue();
            assertThat(m.abiVersion() == 1 || m.abiVersion() == 2 || m.handler()).isTrue();
        } catch (ThresherException refused) {
            assertThat(refused.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION);
            assertThat(refused.getMessage()).startsWith("manifest").hasSizeLessThan(MESSAGE_BOUND);
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("milliseconds one input took")
                .isLessThan(INPUT_BOUND_MS);
    }
}
