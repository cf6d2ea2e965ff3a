package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * One owner for the control database: only {@code dev.thresher.store.control} names a control table in SQL. The tables
 * are read from the control database's migrations, so a table added later is covered without touching this test; the
 * statements are every string literal (text blocks included) of every module's main sources. A name qualified by
 * {@code thresher.} is the SQL surface's journal view a client types, not a control table, and is not counted.
 */
class ControlTableOwnershipTest {
    private static final Path ROOT = Path.of("..");
    private static final Path OWNER = Path.of("store", "src", "main", "java", "dev", "thresher", "store", "control");
    private static final Pattern LITERAL = Pattern.compile("\"\"\"(.*?)\"\"\"|\"((?:[^\"\\\\\\n]|\\\\.)*)\"", Pattern.DOTALL);

    @Test
    void onlyTheControlStoresNameAControlTableInSql() throws IOException {
        Set<String> tables = controlTables();
        assertThat(tables).as("control tables read from the migrations")
                .contains("bindings", "partition_leases", "invocations", "users", "topology_changes", "shard_runs");
        Pattern statement = statementNaming(tables);
        List<String> outside = new ArrayList<>();
        try (Stream<Path> modules = Files.list(ROOT)) {
            for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src/main/java"))).toList()) {
                try (Stream<Path> sources = Files.walk(module.resolve("src/main/java"))) {
                    for (Path f : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
                        if (!ROOT.relativize(f).startsWith(OWNER)) {
                            outside.addAll(namings(f, statement));
                        }
                    }
                }
            }
        }
        assertThat(outside).as("control tables named in SQL outside store/control (move the statement into the store"
                + " that owns the table)").isEmpty();
    }

    @Test
    void theCheckFindsAStatementAndLeavesTheJournalViewsAndProseAlone() {
        Pattern statement = statementNaming(Set.of("partitions", "invocations", "bindings"));
        assertThat(statement.matcher("SELECT count(*) FROM partitions WHERE tenant = ?").find()).isTrue();
        assertThat(statement.matcher("  FROM bindings b LEFT JOIN manifests m").find()).isTrue();
        assertThat(statement.matcher("UPDATE bindings SET note = ?").find()).isTrue();
        assertThat(statement.matcher("SELECT ... FROM thresher.invocations").find()).isFalse();
        assertThat(statement.matcher("the table has no partitions").find()).isFalse();
        assertThat(statement.matcher("FROM partitions_of_mine").find()).isFalse();
    }

    /** Every table created or renamed to by the control database's migrations (old names too), comments left out. */
    private static Set<String> controlTables() throws IOException {
        Set<String> tables = new TreeSet<>();
        Pattern create = Pattern.compile("(?i)\\bCREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?(\\w+)");
        Pattern renamed = Pattern.compile("(?i)\\bALTER\\s+TABLE\\s+(?:IF\\s+EXISTS\\s+)?\\w+\\s+RENAME\\s+TO\\s+(\\w+)");
        try (Stream<Path> migrations = Files.list(ROOT.resolve("store/src/main/resources/db/control"))) {
            for (Path m : migrations.filter(p -> p.toString().endsWith(".sql")).toList()) {
                String sql = Files.readString(m).replaceAll("--[^\\n]*", "");
                Matcher c = create.matcher(sql);
                while (c.find()) {
                    tables.add(c.group(1).toLowerCase());
                }
                Matcher r = renamed.matcher(sql);
                while (r.find()) {
                    tables.add(r.group(1).toLowerCase());
                }
            }
        }
        return tables;
    }

    private static Pattern statementNaming(Set<String> tables) {
        String names = tables.stream().map(Pattern::quote).collect(Collectors.joining("|"));
        return Pattern.compile("(?i)\\b(?:FROM|JOIN|INTO|UPDATE|TABLE|LOCK)\\s+(?:ONLY\\s+)?(?<!\\.)(" + names + ")\\b(?![.\\w])");
    }

    private static List<String> namings(Path file, Pattern statement) {
        String src;
        try {
            src = Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> found = new ArrayList<>();
        Matcher literal = LITERAL.matcher(src);
        while (literal.find()) {
            String text = literal.group(1) != null ? literal.group(1) : literal.group(2);
            Matcher m = statement.matcher(text);
            while (m.find()) {
                int line = (int) src.substring(0, literal.start()).chars().filter(ch -> ch == '\n').count() + 1;
                found.add(ROOT.relativize(file) + ":" + line + ": " + m.group());
            }
        }
        return found;
    }
}
