package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Timeout;

/**
 * Any text given as a query of a journal view parses to a query of at most {@link JournalSelect#MAX_ROWS} rows
 * or is refused with a {@link ThresherException}: never another exception, a {@link StackOverflowError}, or a wait.
 * Regression inputs: {@code src/test/resources/dev/thresher/pgwire/JournalSqlParserFuzzTestInputs/selects/};
 * fuzzing: docs/security.md, "Fuzzing".
 */
class JournalSqlParserFuzzTest {

    @Timeout(Fuzzing.INPUT_TIMEOUT_SECONDS)
    @FuzzTest
    void selects(byte[] input) {
        String sql = new String(input, StandardCharsets.UTF_8);
        Fuzzing.withinBound(() -> {
            JournalSelect select;
            try {
                select = JournalSqlParser.parse(sql);
            } catch (ThresherException refused) {
                assertThat(refused.getMessage()).isNotBlank();
                return;
            }
            assertThat(select.resolvedColumns()).isNotEmpty();
            assertThat(select.offset()).isNotNegative();
            assertThat(select.effectiveLimit()).isBetween(0, JournalSelect.MAX_ROWS);
        });
    }
}
