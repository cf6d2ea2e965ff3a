package dev.thresher.server.node;

import dev.thresher.bindings.TableService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.TableAdmin;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The SQL forms of the table commands, as pgwire serves them:
 *
 * <pre>
 * CREATE TABLE name ( column type [NOT NULL], ... ) PARTITION BY HASH ( key )
 *     [ WITH ( partitions = n [, shards = '1,2'] ) ]          -- thresher table create; 16 partitions unless told
 * DROP TABLE [IF EXISTS] name                                   -- thresher table drop
 * ALTER TABLE name ADD [COLUMN] column type [NOT NULL]          -- thresher table alter --add-column
 * ALTER TABLE name DROP [COLUMN] column                         -- thresher table alter --drop-column
 * </pre>
 *
 * Names are unquoted lower-case identifiers. Anything else is {@link ErrorCode#UNSUPPORTED_STATEMENT} with
 * the forms served.
 */
final class TableSql {
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

    private TableSql() {
    }

    sealed interface Statement permits Create, Drop, Alter {
    }

    record Create(TableService.TableSpec spec) implements Statement {
    }

    record Drop(String table, boolean ifExists) implements Statement {
    }

    record Alter(String table, TableService.Change change) implements Statement {
    }

    static Statement parse(String sql) {
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
            return new Create(new TableService.TableSpec(name(m.group(1)), name(m.group(3)), m.group(2), partitions, shards));
        }
        m = DROP.matcher(text);
        if (m.matches()) {
            return new Drop(name(m.group(2)), m.group(1) != null);
        }
        m = ALTER.matcher(text);
        if (m.matches()) {
            String what = m.group(3).strip();
            return new Alter(name(m.group(1)), m.group(2).equalsIgnoreCase("ADD")
                    ? new TableService.Change.AddColumn(what) : new TableService.Change.DropColumn(what));
        }
        if (text.toUpperCase(Locale.ROOT).matches("(?s)CREATE\\s+TABLE.*") && !text.toUpperCase(Locale.ROOT).contains("PARTITION")) {
            throw unsupported("a distributed table declares its key: CREATE TABLE name (columns) PARTITION BY HASH (key)");
        }
        throw unsupported("this form is not served");
    }

    private static String name(String n) {
        String lower = n.toLowerCase(Locale.ROOT);
        if (!TableAdmin.IDENTIFIER.matcher(lower).matches()) {
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
