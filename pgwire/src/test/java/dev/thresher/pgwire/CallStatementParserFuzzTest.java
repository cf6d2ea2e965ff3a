package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Timeout;

/**
 * Any text a client sends as a query or a prepared statement parses or is refused with a {@link ThresherException}:
 * never another exception, a {@link StackOverflowError}, or a wait. Regression inputs: {@code
 * src/test/resources/dev/thresher/pgwire/CallStatementParserFuzzTestInputs/statements/}; fuzzing:
 * docs/security.md, "Fuzzing".
 */
class CallStatementParserFuzzTest {

    @Timeout(Fuzzing.INPUT_TIMEOUT_SECONDS)
    @FuzzTest
    void statements(byte[] input) {
        String sql = new String(input, StandardCharsets.UTF_8);
        Fuzzing.withinBound(() -> {
            List<ParsedStatement> script = parsesOrRefuses(() -> CallStatementParser.parseScript(sql));
            ParsedStatement one = parsesOrRefuses(() -> CallStatementParser.parse(sql));
            // A prepared statement parses as the query of that one statement does.
            if (one != null) {
                assertThat(script).as("the same text as a query").isNotNull();
                assertThat(script).usingElementComparator(CallStatementParserFuzzTest::compare)
                        .containsExactlyElementsOf(one instanceof ParsedStatement.Empty ? List.of() : List.of(one));
            } else if (script != null) {
                assertThat(script).as("a query that the prepared statement refused").hasSizeGreaterThan(1);
            }
        });
    }

    /** Statements compared as they print, a session query's row function by what it is, not by its instance. */
    private static int compare(ParsedStatement a, ParsedStatement b) {
        return printed(a).compareTo(printed(b));
    }

    private static String printed(ParsedStatement s) {
        return s.toString().replaceAll("\\$\\$Lambda[^,\\]]*", "(rows)");
    }

    private static <T> T parsesOrRefuses(java.util.function.Supplier<T> parse) {
        try {
            T parsed = parse.get();
            assertThat(parsed).isNotNull();
            return parsed;
        } catch (ThresherException refused) {
            assertThat(refused.getMessage()).isNotBlank();
            return null;
        }
    }
}
