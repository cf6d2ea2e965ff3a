package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.http.HttpStatuses;
import dev.thresher.pgwire.SqlStates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** The tables of docs/contract.md are the code's tables, row for row and column for column. */
class DocsMatchCodeTest {
    private static final Path CONTRACT = Path.of("..", "docs", "contract.md");

    @Test
    void contractDocumentListsEveryCodeWithEveryColumn() throws Exception {
        List<String> rows = Files.readAllLines(CONTRACT).stream().filter(l -> l.matches("\\| \\d{4} \\| .*")).toList();
        List<String> expected = Arrays.stream(ErrorCode.values()).map(c -> "| " + c.code() + " | `" + c.name() + "` | "
                + c.category().name().toLowerCase(Locale.ROOT).replace('_', ' ') + " | "
                + c.retryClass().name().toLowerCase(Locale.ROOT) + " | `" + SqlStates.of(c) + "` | "
                + HttpStatuses.statusOf(c) + " |").toList();
        assertThat(rows).as("the error-code table of docs/contract.md, in code order").containsExactlyElementsOf(expected);
    }

    @Test
    void contractDocumentNamesEveryFailpoint() throws Exception {
        String doc = Files.readString(CONTRACT);
        String section = doc.substring(doc.indexOf("## Failpoints"), doc.indexOf("## ", doc.indexOf("## Failpoints") + 3));
        for (Failpoint f : Failpoint.values()) {
            assertThat(section).as("docs/contract.md names failpoint %s", f).contains("`" + f.id() + "`");
        }
    }
}
