package dev.thresher.bindings;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;

/**
 * Any text a deployer sends as a binding's selector is read or refused as {@code INVALID_SELECTOR} within a bound:
 * never another exception, a {@link StackOverflowError} or a wait; and a selector that is read is read again the same
 * from the statement it is rendered into, so what a shard runs is what was checked. Regression inputs: {@code
 * src/test/resources/dev/thresher/bindings/SelectorFuzzTestInputs/selectors/}; fuzzing: docs/security.md, "Fuzzing".
 */
class SelectorFuzzTest {
    /** Far above what any selector takes (milliseconds): passing it means a blow-up, not a slow machine. */
    private static final long INPUT_BOUND_MS = 5_000;

    @Timeout(30)
    @FuzzTest
    void selectors(byte[] input) {
        String sql = new String(input, StandardCharsets.UTF_8);
        long start = System.nanoTime();
        Selector selector;
        try {
            selector = Selector.parse(sql);
        } catch (ThresherException refused) {
            assertThat(refused.code()).isEqualTo(ErrorCode.INVALID_SELECTOR);
            assertThat(refused.getMessage()).isNotBlank();
            selector = null;
        }
        if (selector != null) {
            String rendered = "SELECT " + String.join(", ", selector.columns().stream().map(SelectorFuzzTest::quoted)
                    .toList()) + " FROM " + quoted(selector.table()) + selector.where().map(w -> " WHERE " + w).orElse("");
            Selector again = Selector.parse(rendered);
            assertThat(again.table()).isEqualTo(selector.table());
            assertThat(again.columns()).isEqualTo(selector.columns());
            assertThat(again.where()).as("the filter as rendered, read again").isEqualTo(selector.where());
            for (String column : selector.columns()) {
                assertThat(selector.reads(column)).isTrue();
            }
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("milliseconds one input took")
                .isLessThan(INPUT_BOUND_MS);
    }

    private static String quoted(String name) {
        return '"' + name.replace("\"", "\"\"") + '"';
    }
}
