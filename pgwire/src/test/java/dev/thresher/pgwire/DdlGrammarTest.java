package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.BindingCommand;
import dev.thresher.bindings.TableCommand;
import dev.thresher.bindings.TableService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The table and binding statements' grammar. The table statements were read by the table service's regular
 * expressions before; those are kept here ({@code OldTableSql}) as the oracle every input below is run through, so
 * the grammar accepts what they accepted, into the same command, and refuses what they refused with the same message.
 */
class DdlGrammarTest {
    @ParameterizedTest
    @ValueSource(strings = {
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id)",
        "create table Orders (id bigint PRIMARY KEY, region text NOT NULL, amount numeric(10, 2)) partition by hash (ID)",
        "CREATE TABLE ddl_t (id bigint, region text not null) PARTITION BY HASH (id) WITH (partitions = 6)",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH (partitions = 4, shards = '1,2')",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH (shards = 3)",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH (partitions = '8')",
        "CREATE TABLE t\n(\n  id bigint\n)\nPARTITION BY HASH(id)WITH(partitions=2)",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH (colour = 'red')",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH (partitions = 'many')",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH (shards = '1,x')",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH (partitions)",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) WITH ()",
        "CREATE TABLE t (id bigint)",
        "CREATE TABLE t (id bigint) PARTITION BY RANGE (id)",
        "CREATE TABLE t PARTITION BY HASH (id)",
        "CREATE TABLE t (id bigint) PARTITION BY HASH (id) extra",
        "CREATE TABLE tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt (id bigint) PARTITION BY HASH (id)",
        "DROP TABLE t",
        "drop table IF EXISTS Orders",
        "DROP TABLE if",
        "DROP TABLE t u",
        "DROP TABLE",
        "ALTER TABLE t ADD COLUMN amount double precision",
        "ALTER TABLE t ADD note text NOT NULL",
        "ALTER TABLE t DROP COLUMN Note",
        "alter table T drop note",
        "ALTER TABLE t ADD COLUMN",
        "ALTER TABLE t RENAME COLUMN a TO b",
        "ALTER TABLE t ADD",
    })
    void readsTableStatementsAsTheTableServiceDid(String sql) {
        assertThat(outcome(() -> DdlGrammar.table(sql))).isEqualTo(outcome(() -> OldTableSql.parse(sql)));
    }

    @Test
    void answersMoreExactlyWhereTheExpressionsGuessed() {
        // a column named partition_id no longer hides the missing PARTITION BY
        assertThatThrownBy(() -> DdlGrammar.table("CREATE TABLE t (partition_id bigint)"))
                .hasMessageStartingWith("a distributed table declares its key");
        // the columns end at the parenthesis closing the list, not at the last one
        assertThat(outcome(() -> DdlGrammar.table("CREATE TABLE t (a text DEFAULT ')') PARTITION BY HASH (a)")))
                .isEqualTo(new TableCommand.Create(new TableService.TableSpec("t", "a", "a text DEFAULT ')'", 16, List.of())));
        // a comment after the column is not part of it
        assertThat(DdlGrammar.table("ALTER TABLE t ADD x int -- why")).isEqualTo(
                new TableCommand.Alter("t", new TableService.Change.AddColumn("x int")));
        assertThatThrownBy(() -> DdlGrammar.table("CREATE TABLE \"T\" (id bigint) PARTITION BY HASH (id)"))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT))
                .hasMessageContaining("is not an identifier");
    }

    @Test
    void readsBindingStatements() {
        assertThat(DdlGrammar.binding("CREATE BINDING WITH MANIFEST '{\"binding\": \"it''s\"}' MODULE '\\x0061 736d'"))
                .isEqualTo(new BindingCommand.Deploy("{\"binding\": \"it's\"}".getBytes(StandardCharsets.UTF_8),
                        new byte[] {0, 'a', 's', 'm'}));
        assertThat(DdlGrammar.binding("create binding with manifest '{}' module 'AGFzbQ=='"))
                .isEqualTo(new BindingCommand.Deploy("{}".getBytes(StandardCharsets.UTF_8), new byte[] {0, 'a', 's', 'm'}));
        // psql's \set of a manifest holding a backslash sends it as E'...': its escapes are decoded
        assertThat(DdlGrammar.binding("CREATE BINDING WITH MANIFEST E'{\"n\": \"\\x41\", \"q\": \"a\\\\b\"}'"
                + " MODULE E'\\\\x0061736d'"))
                .isEqualTo(new BindingCommand.Deploy("{\"n\": \"A\", \"q\": \"a\\b\"}".getBytes(StandardCharsets.UTF_8),
                        new byte[] {0, 'a', 's', 'm'}));
        assertThat(DdlGrammar.binding("ALTER BINDING Via_sql ROLLBACK TO VERSION 12"))
                .isEqualTo(new BindingCommand.Rollback("Via_sql", 12));
        assertThat(DdlGrammar.binding("ALTER BINDING x ROLLBACK TO VERSION 1").tag()).isEqualTo("ALTER BINDING");
        for (String refused : List.of("CREATE BINDING x", "ALTER BINDING x ROLLBACK TO VERSION 1234567890",
                "ALTER BINDING x ROLLBACK TO VERSION 1.5", "ALTER BINDING \"x\" ROLLBACK TO VERSION 1",
                "CREATE BINDING WITH MANIFEST '{}' MODULE '00' extra", "CREATE BINDING WITH MANIFEST $${}$$ MODULE '00'")) {
            assertThatThrownBy(() -> DdlGrammar.binding(refused)).as(refused)
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT))
                    .hasMessage(DdlGrammar.BINDING_FORMS);
        }
        assertThatThrownBy(() -> DdlGrammar.binding("CREATE BINDING WITH MANIFEST '{}' MODULE 'A'"))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS))
                .hasMessageStartingWith("MODULE is neither hex nor base64");
    }

    @Test
    void aMalformedStatementIsRefusedWhenItRuns() {
        ParsedStatement parsed = CallStatementParser.parse("CREATE TABLE t (id bigint)");
        assertThat(parsed).isInstanceOfSatisfying(ParsedStatement.TableStatement.class, t ->
                assertThatThrownBy(t::typed).hasMessageContaining("declares its key"));
        assertThat(CallStatementParser.parse("ALTER BINDING x ROLLBACK")).isInstanceOfSatisfying(
                ParsedStatement.BindingStatement.class, b -> assertThatThrownBy(b::typed).hasMessage(DdlGrammar.BINDING_FORMS));
        assertThat(CallStatementParser.parse("GRANT SELECT ON t TO ann")).isInstanceOfSatisfying(
                ParsedStatement.AccessStatement.class, a -> assertThatThrownBy(a::typed).isInstanceOf(ThresherException.class));
    }

    /** What parsing gave: the command, or the refusal's code and message. */
    private static Object outcome(java.util.function.Supplier<TableCommand> parse) {
        try {
            return parse.get();
        } catch (ThresherException e) {
            return e.code() + ": " + e.getMessage();
        }
    }

    /** The table service's regular expressions as they read table statements before the grammar. */
    static final class OldTableSql {
        static final int DEFAULT_PARTITIONS = 16;
        private static final String FORMS = "the table statements served are CREATE TABLE name (columns) PARTITION BY HASH (key)"
                + " [WITH (partitions = n, shards = '1,2')], DROP TABLE [IF EXISTS] name, ALTER TABLE name ADD [COLUMN] column type"
                + " [NOT NULL] and ALTER TABLE name DROP [COLUMN] column";
        private static final Pattern CREATE = Pattern.compile(
                "(?is)CREATE\\s+TABLE\\s+(\\w+)\\s*\\((.*)\\)\\s*PARTITION\\s+BY\\s+HASH\\s*\\(\\s*(\\w+)\\s*\\)\\s*(?:WITH\\s*\\((.*)\\))?\\s*;?\\s*");
        private static final Pattern DROP = Pattern.compile("(?is)DROP\\s+TABLE\\s+(IF\\s+EXISTS\\s+)?(\\w+)\\s*;?\\s*");
        private static final Pattern ALTER = Pattern.compile(
                "(?is)ALTER\\s+TABLE\\s+(\\w+)\\s+(ADD|DROP)\\s+(?:COLUMN\\s+)?(.+?)\\s*;?\\s*");
        private static final Pattern OPTION = Pattern.compile("(?is)\\s*(\\w+)\\s*=\\s*('([^']*)'|\\d+)\\s*");

        private OldTableSql() {
        }

        static TableCommand parse(String sql) {
            String text = sql.strip();
            Matcher m = CREATE.matcher(text);
            if (m.matches()) {
                int partitions = DEFAULT_PARTITIONS;
                List<Integer> shards = new ArrayList<>();
                if (m.group(4) != null) {
                    for (String option : m.group(4).split(",(?=\\s*\\w+\\s*=)")) {
                        Matcher o = OPTION.matcher(option);
                        if (!o.matches()) {
                            throw unsupported("option '" + option.strip() + "' is not name = value");
                        }
                        String value = o.group(3) != null ? o.group(3) : o.group(2);
                        switch (o.group(1).toLowerCase(Locale.ROOT)) {
                            case "partitions" -> partitions = number(value, "partitions");
                            case "shards" -> {
                                for (String id : value.split(",")) {
                                    shards.add(number(id.strip(), "shards"));
                                }
                            }
                            default -> throw unsupported("option '" + o.group(1) + "' is not served; the options are partitions"
                                    + " and shards");
                        }
                    }
                }
                return new TableCommand.Create(new TableService.TableSpec(name(m.group(1)), name(m.group(3)), m.group(2), partitions, shards));
            }
            m = DROP.matcher(text);
            if (m.matches()) {
                return new TableCommand.Drop(name(m.group(2)), m.group(1) != null);
            }
            m = ALTER.matcher(text);
            if (m.matches()) {
                String what = m.group(3).strip();
                return new TableCommand.Alter(name(m.group(1)), m.group(2).equalsIgnoreCase("ADD")
                        ? new TableService.Change.AddColumn(what) : new TableService.Change.DropColumn(what));
            }
            if (text.toUpperCase(Locale.ROOT).matches("(?s)CREATE\\s+TABLE.*") && !text.toUpperCase(Locale.ROOT).contains("PARTITION")) {
                throw unsupported("a distributed table declares its key: CREATE TABLE name (columns) PARTITION BY HASH (key)");
            }
            throw unsupported("this form is not served");
        }

        private static String name(String n) {
            String lower = n.toLowerCase(Locale.ROOT);
            if (!java.util.regex.Pattern.compile("[a-z_][a-z0-9_]{0,62}").matcher(lower).matches()) {
                throw unsupported("'" + n + "' is not an identifier");
            }
            return lower;
        }

        private static int number(String v, String option) {
            try {
                return Integer.parseInt(v.strip());
            } catch (NumberFormatException e) {
                throw unsupported(option + " must be a number, not '" + v + "'");
            }
        }

        private static ThresherException unsupported(String why) {
            return new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, why + "; " + FORMS);
        }
    }
}
