package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalView;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** docs/operations.md lists every column of the journal views, in order, with its type. */
class JournalDocsTest {
    private static final Path OPERATIONS = Path.of("..", "docs", "operations.md");

    @Test
    void theOperationsDocumentListsEveryColumnOfEveryViewWithItsType() throws Exception {
        String doc = Files.readString(OPERATIONS);
        int section = doc.indexOf("## Reading the journal");
        assertThat(section).as("docs/operations.md has a section \"Reading the journal\"").isPositive();
        String text = doc.substring(section, doc.indexOf("\n## ", section + 3));
        for (JournalView view : JournalView.values()) {
            int at = text.indexOf("`" + view.qualifiedName() + "`, one row per");
            assertThat(at).as("the section introduces %s", view.qualifiedName()).isPositive();
            List<String> rows = text.substring(at).lines().dropWhile(l -> !l.startsWith("| column |")).skip(2)
                    .takeWhile(l -> l.startsWith("| `")).map(l -> l.substring(0, l.indexOf(" |", l.indexOf("` | `") + 5)))
                    .toList();
            List<String> expected = view.columns().stream().map(JournalColumn::name)
                    .map(n -> "| `" + n + "` | `" + view.column(n).orElseThrow().type().sqlName() + "`").toList();
            assertThat(rows).as("the columns of %s in docs/operations.md", view.qualifiedName())
                    .containsExactlyElementsOf(expected);
        }
    }

    @Test
    void theOperationsDocumentListsEveryFormerNameOfAViewOrColumnAsRenamed() throws Exception {
        String doc = Files.readString(OPERATIONS);
        int section = doc.indexOf("#### Renamed", doc.indexOf("## Reading the journal"));
        assertThat(section).as("docs/operations.md's \"Reading the journal\" has a section \"Renamed\"").isPositive();
        String text = doc.substring(section, doc.indexOf("\n## ", section));
        for (JournalView view : JournalView.values()) {
            for (String former : view.formerNames()) {
                assertThat(text).as("the former name of %s", view.qualifiedName())
                        .contains("| `" + JournalView.SCHEMA + "." + former + "` | `" + view.qualifiedName() + "` |");
                assertThat(JournalView.named(former)).contains(view);
            }
            view.formerColumns().forEach((former, now) -> {
                assertThat(text).as("the former name of %s.%s", view.qualifiedName(), now)
                        .contains("| `" + former + "` | `" + now + "` |");
                assertThat(view.column(former)).as("%s still answers to %s", view.qualifiedName(), former)
                        .hasValueSatisfying(c -> assertThat(c.type()).isEqualTo(view.column(now).orElseThrow().type()));
            });
        }
    }
}
