package dev.thresher.pgwire;

import dev.thresher.bindings.BindingCommand;
import dev.thresher.bindings.TableCommand;
import dev.thresher.bindings.TableService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.SqlLexer.Kind;
import dev.thresher.pgwire.SqlLexer.Token;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * The table and binding statements, read into the commands the table and binding services run:
 *
 * <pre>
 * CREATE TABLE name ( column type [NOT NULL], ... ) PARTITION BY HASH ( key )
 *     [ WITH ( partitions = n [, shards = '1,2'] ) ]          -- thresher table create; 16 partitions unless told
 * DROP TABLE [IF EXISTS] name                                   -- thresher table drop
 * ALTER TABLE name ADD [COLUMN] column type [NOT NULL]          -- thresher table alter --add-column
 * ALTER TABLE name DROP [COLUMN] column                         -- thresher table alter --drop-column
 * CREATE BINDING WITH MANIFEST '&lt;json&gt;' MODULE '&lt;module&gt;'      -- the module as hex (\x optional) or base64;
 *                                                                  -- either string '...' or E'...'
 * ALTER BINDING name ROLLBACK TO VERSION n
 * </pre>
 *
 * A table's name and key are unquoted identifiers, folded to lower case; the columns are kept as written, for the
 * table service to read as {@code thresher table create} does. A binding's name is kept as written. Anything else is
 * {@link ErrorCode#UNSUPPORTED_STATEMENT} with the forms served. The statement reaches here without its semicolon,
 * already checked by {@link CallStatementParser} for parameters (and, for a table statement, escape strings).
 */
final class DdlGrammar {
    static final int DEFAULT_PARTITIONS = 16;
    static final String TABLE_FORMS = "the table statements served are CREATE TABLE name (columns) PARTITION BY HASH (key)"
            + " [WITH (partitions = n, shards = '1,2')], DROP TABLE [IF EXISTS] name, ALTER TABLE name ADD [COLUMN] column type"
            + " [NOT NULL] and ALTER TABLE name DROP [COLUMN] column";
    static final String BINDING_FORMS = "the binding statements served are CREATE BINDING"
            + " WITH MANIFEST '<json>' MODULE '<hex or base64>' and ALTER BINDING name ROLLBACK TO VERSION n";
    /** A table's or column's name as the shard databases hold it. */
    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final Pattern BINDING_NAME = Pattern.compile("[A-Za-z0-9_]+");

    private DdlGrammar() {
    }

    /**
     * A {@code CREATE TABLE}, {@code DROP TABLE} or {@code ALTER TABLE} statement as a command.
     *
     * @throws ThresherException {@link ErrorCode#UNSUPPORTED_STATEMENT} naming what is wrong and the forms served
     */
    static TableCommand table(String sql) {
        TokenCursor c = TokenCursor.of(sql, SqlLexer.STATEMENTS);
        Token verb = c.next();
        if (verb == null || !c.accept("TABLE")) {
            throw unsupported("this form is not served");
        }
        if (verb.is("CREATE")) {
            TableCommand create = create(c);
            if (create == null) {
                c.reset(0);
                throw unsupported(c.anyAhead("PARTITION") ? "this form is not served"
                        : "a distributed table declares its key: CREATE TABLE name (columns) PARTITION BY HASH (key)");
            }
            return create;
        }
        TableCommand command = verb.is("DROP") ? drop(c) : verb.is("ALTER") ? alter(c) : null;
        if (command == null) {
            throw unsupported("this form is not served");
        }
        return command;
    }

    /** The create, or null when the statement is not of its form. */
    private static TableCommand create(TokenCursor c) {
        String name = tableName(c);
        Token open = c.next();
        if (name == null || open == null || !open.isSymbol("(")) {
            return null;
        }
        Token close = closing(c);
        if (close == null || !c.accept("PARTITION") || !c.accept("BY") || !c.accept("HASH") || !c.acceptSymbol("(")) {
            return null;
        }
        String key = tableName(c);
        if (key == null || !c.acceptSymbol(")")) {
            return null;
        }
        int partitions = DEFAULT_PARTITIONS;
        List<Integer> shards = new ArrayList<>();
        if (c.accept("WITH")) {
            if (!c.acceptSymbol("(")) {
                return null;
            }
            do {
                Option option = option(c);
                switch (option.name().toLowerCase(Locale.ROOT)) {
                    case "partitions" -> partitions = number(option.value(), "partitions");
                    case "shards" -> {
                        for (String id : option.value().split(",")) {
                            shards.add(number(id.strip(), "shards"));
                        }
                    }
                    default -> throw unsupported("option '" + option.name() + "' is not served; the options are partitions"
                            + " and shards");
                }
            } while (c.acceptSymbol(","));
            if (!c.acceptSymbol(")")) {
                return null;
            }
        }
        if (!c.atEnd()) {
            return null;
        }
        String columns = c.sql().substring(open.end(), close.start());
        return new TableCommand.Create(new TableService.TableSpec(name, key, columns, partitions, shards));
    }

    /** Takes the tokens up to the parenthesis closing one just taken, and returns it; null when there is none. */
    private static Token closing(TokenCursor c) {
        int depth = 1;
        for (Token t = c.next(); t != null; t = c.next()) {
            if (t.isSymbol("(")) {
                depth++;
            } else if (t.isSymbol(")") && --depth == 0) {
                return t;
            }
        }
        return null;
    }

    private record Option(String name, String value) {
    }

    /** {@code name = 'text'} or {@code name = digits}. */
    private static Option option(TokenCursor c) {
        int start = c.position();
        Token name = c.next();
        Token equals = c.next();
        Token value = c.next();
        if (name != null && name.kind() == Kind.WORD && equals != null && equals.isSymbol("=") && value != null
                && (value.kind() == Kind.STRING && !value.text().contains("'")
                    || value.kind() == Kind.NUMBER && value.text().chars().allMatch(Character::isDigit))) {
            return new Option(name.text(), value.text());
        }
        c.reset(0);
        while (c.position() < start) {
            c.next();
        }
        while (!c.atEnd() && !c.peekSymbol(",") && !c.peekSymbol(")")) {
            c.next();
        }
        throw unsupported("option '" + c.sql().substring(start, c.position()).strip() + "' is not name = value");
    }

    private static TableCommand drop(TokenCursor c) {
        boolean ifExists = c.peekIs("IF") && c.peek(1) != null && c.peek(1).is("EXISTS") && c.peek(2) != null;
        if (ifExists) {
            c.next();
            c.next();
        }
        String name = tableName(c);
        return name == null || !c.atEnd() ? null : new TableCommand.Drop(name, ifExists);
    }

    private static TableCommand alter(TokenCursor c) {
        String name = tableName(c);
        Token verb = c.next();
        if (name == null || verb == null || !verb.is("ADD") && !verb.is("DROP")) {
            return null;
        }
        if (c.peekIs("COLUMN") && c.peek(1) != null) {
            c.next();
        }
        if (c.atEnd()) {
            return null;
        }
        int from = c.position();
        Token last = c.peek();
        for (Token t = c.next(); t != null; t = c.next()) {
            last = t;
        }
        String what = c.sql().substring(from, last.end()).strip();
        return new TableCommand.Alter(name, verb.is("ADD")
                ? new TableService.Change.AddColumn(what) : new TableService.Change.DropColumn(what));
    }

    /**
     * A table's or key's name: an unquoted word, folded to lower case; null when the next token is no name at all.
     *
     * @throws ThresherException {@link ErrorCode#UNSUPPORTED_STATEMENT} for a name the shard databases cannot hold
     */
    private static String tableName(TokenCursor c) {
        Token t = c.peek();
        if (t == null || t.kind() != Kind.WORD && t.kind() != Kind.NUMBER && t.kind() != Kind.QUOTED_NAME) {
            return null;
        }
        c.next();
        String written = c.sql().substring(t.start(), t.end());
        String lower = t.kind() == Kind.WORD ? t.folded() : written;
        if (!IDENTIFIER.matcher(lower).matches()) {
            throw unsupported("'" + written + "' is not an identifier");
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
        return new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, why + "; " + TABLE_FORMS);
    }

    /**
     * A {@code CREATE BINDING} or {@code ALTER BINDING} statement as a command.
     *
     * @throws ThresherException {@link ErrorCode#UNSUPPORTED_STATEMENT} with the forms served for any other,
     *     {@link ErrorCode#INVALID_ARGUMENTS} for a module that is neither hex nor base64
     */
    static BindingCommand binding(String sql) {
        TokenCursor c = TokenCursor.of(sql, SqlLexer.STATEMENTS);
        Token verb = c.next();
        if (verb != null && c.accept("BINDING")) {
            if (verb.is("CREATE") && c.accept("WITH") && c.accept("MANIFEST")) {
                Token manifest = c.next();
                if (isString(manifest) && c.accept("MODULE")) {
                    Token module = c.next();
                    if (isString(module) && c.atEnd()) {
                        return new BindingCommand.Deploy(text(c, manifest).getBytes(StandardCharsets.UTF_8),
                                moduleBytes(text(c, module)));
                    }
                }
            } else if (verb.is("ALTER")) {
                Token name = c.next();
                if (name != null && name.kind() == Kind.WORD && BINDING_NAME.matcher(name.text()).matches()
                        && c.accept("ROLLBACK") && c.accept("TO") && c.accept("VERSION")) {
                    Token version = c.next();
                    if (version != null && version.kind() == Kind.NUMBER && version.text().matches("\\d{1,9}") && c.atEnd()) {
                        return new BindingCommand.Rollback(name.text(), Integer.parseInt(version.text()));
                    }
                }
            }
        }
        throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, BINDING_FORMS);
    }

    private static boolean isString(Token t) {
        return t != null && (t.kind() == Kind.STRING || t.kind() == Kind.ESCAPE_STRING);
    }

    /** A string's value: an escape string's backslash escapes decoded. */
    private static String text(TokenCursor c, Token t) {
        return t.kind() == Kind.ESCAPE_STRING ? SqlLexer.escapeStringValue(c.sql(), t) : t.text();
    }

    /** A module as SQL text: hex ({@code \x} prefix optional) or base64. */
    private static byte[] moduleBytes(String text) {
        String t = text.strip();
        String hex = t.startsWith("\\x") ? t.substring(2) : t;
        if (hex.matches("(?s)[0-9a-fA-F\\s]+") && hex.replaceAll("\\s", "").length() % 2 == 0) {
            return HexFormat.of().parseHex(hex.replaceAll("\\s", ""));
        }
        try {
            return java.util.Base64.getMimeDecoder().decode(t);
        } catch (IllegalArgumentException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "MODULE is neither hex nor base64: " + e.getMessage());
        }
    }
}
