package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.pgwire.SqlStates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/** The error-code table in docs/contract.md is the code's table, row for row. */
class DocsMatchCodeTest {
    @Test
    void contractDocumentListsEveryCodeWithItsSqlState() throws Exception {
        String doc = Files.readString(Path.of("..", "docs", "contract.md"));
        for (ErrorCode c : ErrorCode.values()) {
            String row = "| " + c.code() + " | `" + c.name() + "` | "
                    + c.category().name().toLowerCase(Locale.ROOT).replace('_', ' ') + " | "
                    + c.retryClass().name().toLowerCase(Locale.ROOT) + " | `" + SqlStates.of(c) + "` |";
            assertThat(doc).as("docs/contract.md row for %s", c).contains(row);
        }
    }
}
