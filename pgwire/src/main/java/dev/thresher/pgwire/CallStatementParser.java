package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A hand-written parser for the few statements pgwire serves. The grammar, with keywords
 * case-insensitive and whitespace, {@code -- line} and (nested) {@code /* block * /} comments allowed
 * between all tokens:
 *
 * <pre>
 * query      := ';'* ( statement ( ';'+ statement )* )? ';'*   -- a simple query; nothing at all is the empty query
 * prepared   := ';'* statement? ';'*                  -- the extended protocol's Parse: one statement at most
 * statement  := call | set | show | begin | commit | rollback | copy | insert | select | session | table | binding
 *             | access
 * select     := SELECT any                          -- answered by the session (SessionQueries), else a query
 *                                                   -- of a journal view (JournalSqlParser)
 * session    := DISCARD ALL | RESET ( ALL | name ('.' name)* ) | DEALLOCATE PREPARE? ( ALL | name )
 *             | CLOSE ALL | UNLISTEN ( '*' | name )
 * copy       := COPY table ( '(' name ( ',' name )* ')' )? FROM STDIN copyoptions   -- see copy()
 * insert     := INSERT any                           -- kept as written for the table service
 * table      := (CREATE | ALTER | DROP) TABLE any     -- the table service's command (DdlGrammar)
 * binding    := (CREATE | ALTER) BINDING any          -- the binding service's command (DdlGrammar)
 * access     := (CREATE | ALTER | DROP) (USER | ROLE) any | (GRANT | REVOKE) any   -- the access service's (AccessGrammar)
 * call       := CALL BINDING name '(' argument? ')'     -- no argument: '{}'
 * name       := [A-Za-z_][A-Za-z0-9_]*               -- folded to lower case, as PostgreSQL does
 *             | '"' ( any but '"' | '""' )+ '"'        -- kept as written
 * argument   := ( '(' argument ')' | CAST '(' argument AS type ')' | literal ) ( '::' type )*
 * type       := ( pg_catalog '.' )? ( json | jsonb )
 * literal    := '\'' ( any but '\'' | '\'\'' )* '\''   -- standard_conforming_strings: no backslash escapes
 *             | E '\'' ( any but '\'' or '\\' | '\'\'' | escape )* '\''   -- \b \f \n \r \t \ooo \xhh, backslash u
 *                                                   -- XXXX, \UXXXXXXXX; any other character after '\' is itself
 *             | '$' tag? '$' any '$' tag? '$'          -- dollar quoting
 *             | '$1'
 * set        := SET (SESSION | LOCAL)? name ('.' name)* ( '=' | TO )? value
 *             | SET SESSION CHARACTERISTICS AS TRANSACTION mode ( ','? mode )*   -- accepted and ignored
 * show       := SHOW ( TRANSACTION ISOLATION LEVEL | TIME ZONE | CALL callid | CALLS | name ('.' name)* )
 * callid     := '\'' uuid '\''                           -- 8-4-4-4-12 hex digits, any case; else INVALID_ARGUMENTS
 * begin      := ( BEGIN (WORK | TRANSACTION)? | START TRANSACTION ) mode ( ','? mode )*   -- modes are ignored
 * mode       := ISOLATION LEVEL (SERIALIZABLE | REPEATABLE READ | READ COMMITTED | READ UNCOMMITTED)
 *             | READ WRITE | READ ONLY | NOT? DEFERRABLE
 * commit     := (COMMIT | END) (WORK | TRANSACTION)? (AND NO CHAIN)?
 * rollback   := (ROLLBACK | ABORT) (WORK | TRANSACTION)? (AND NO CHAIN)?
 * </pre>
 *
 * <p>Example: {@code call Binding "Sales"( '{"region": ''eu''}' ) ;} parses to
 * {@code Call("Sales", Literal("{\"region\": 'eu'}"))}.
 *
 * <p>Failures are {@link ThresherException}s: {@link ErrorCode#UNSUPPORTED_STATEMENT} for a statement
 * other than those above (or several in one prepared statement, or {@code AND CHAIN}),
 * {@link ErrorCode#SYNTAX_ERROR} for a malformed one, {@link ErrorCode#NAME_TOO_LONG} for a name (of a binding,
 * table, column or setting) of more than {@value #MAX_NAME_BYTES} bytes, where PostgreSQL would truncate it, and
 * {@link ErrorCode#INVALID_ARGUMENTS} for a call id of {@code SHOW CALL} that is not a UUID, each naming the 1-based
 * character position. Messages show the text they quote through {@link Quoted}: cut short, control characters escaped.
 *
 * <p>The parser is a loop over statements and recursive in nothing that a statement can repeat, so no input grows
 * its stack; a simple query's statements are capped ({@code limits.pgwireStatementsPerQuery}) as they are read.
 */
final class CallStatementParser {
    static final String USAGE = "Thresher accepts CALL BINDING name('<json>'), name() or name($1), COPY table FROM STDIN,"
            + " INSERT INTO table VALUES ..., CREATE/ALTER/DROP TABLE,"
            + " CREATE/ALTER BINDING, SHOW CALL '<call id>', SHOW CALLS, SELECT ... FROM thresher.invocations or"
            + " thresher.shard_slots, SELECT of constants and session functions (SELECT 1, version(), current_schema(),"
            + " current_setting('name')), and SET, SHOW, RESET, DISCARD ALL, DEALLOCATE, BEGIN, COMMIT and ROLLBACK"
            + " (docs/clients.md)";
    private static final java.util.regex.Pattern UUID_TEXT = java.util.regex.Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final java.util.Set<String> TRANSACTION_MODE_WORDS = java.util.Set.of("ISOLATION", "LEVEL",
            "SERIALIZABLE", "REPEATABLE", "READ", "COMMITTED", "UNCOMMITTED", "WRITE", "ONLY", "NOT", "DEFERRABLE");

    /** PostgreSQL's NAMEDATALEN - 1: the longest identifier, in UTF-8 bytes. */
    static final int MAX_NAME_BYTES = 63;

    private final String sql;
    private int pos;

    private CallStatementParser(String sql) {
        this.sql = sql;
    }

    /**
     * Parses one statement (the extended protocol's Parse: one statement at most).
     *
     * @throws ThresherException {@link ErrorCode#SYNTAX_ERROR} or {@link ErrorCode#UNSUPPORTED_STATEMENT}
     */
    static ParsedStatement parse(String sql) {
        CallStatementParser p = new CallStatementParser(sql);
        p.skipSemicolons();
        if (p.atEnd()) {
            return new ParsedStatement.Empty();
        }
        ParsedStatement result = p.statement();
        p.skipSemicolons();
        if (!p.atEnd()) {
            throw unsupported(p.pos, "a prepared statement holds one statement");
        }
        return result;
    }

    /**
     * Parses a simple query: statements separated by semicolons, all parsed before any runs (as
     * PostgreSQL does), so a syntax error anywhere runs nothing. Empty statements are dropped; an
     * empty list means an empty query.
     *
     * @throws ThresherException {@link ErrorCode#SYNTAX_ERROR} or {@link ErrorCode#UNSUPPORTED_STATEMENT}
     */
    static List<ParsedStatement> parseScript(String sql) {
        return parseScript(sql, Integer.MAX_VALUE);
    }

    /**
     * As {@link #parseScript(String)}, refusing a query of more than {@code maxStatements} statements as soon as the
     * one past it begins.
     *
     * @throws ThresherException {@link ErrorCode#PAYLOAD_TOO_LARGE} ({@code 54000}) past {@code maxStatements}
     */
    static List<ParsedStatement> parseScript(String sql, int maxStatements) {
        CallStatementParser p = new CallStatementParser(sql);
        List<ParsedStatement> statements = new ArrayList<>();
        p.skipSemicolons();
        while (!p.atEnd()) {
            if (statements.size() == maxStatements) {
                throw new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "a simple query holds at most " + maxStatements
                        + " statements (limits.pgwireStatementsPerQuery); this one holds more");
            }
            statements.add(p.statement());
            p.skipSemicolons();
        }
        return statements;
    }

    /** One statement from the current position, up to (not including) its semicolon or the end. */
    private ParsedStatement statement() {
        int start = pos;
        String keyword = word();
        ParsedStatement result = switch (keyword.toUpperCase(Locale.ROOT)) {
            case "CALL" -> call(start);
            case "SET" -> set();
            case "SHOW" -> show();
            case "BEGIN" -> {
                optionalWord("WORK", "TRANSACTION");
                yield begin();
            }
            case "START" -> {
                skipTrivia();
                if (!word().equalsIgnoreCase("TRANSACTION")) {
                    throw syntax("expected TRANSACTION after START");
                }
                yield begin();
            }
            case "COPY" -> copy(start);
            case "INSERT" -> insert(start);
            case "SELECT" -> {
                skipToEnd(true);
                int end = pos;
                yield SessionQueries.match(sql, start, end).<ParsedStatement>map(ParsedStatement.Answered::new)
                        .orElseGet(() -> new ParsedStatement.Select(JournalSqlParser.parse(sql, start, end)));
            }
            case "DISCARD" -> {
                skipTrivia();
                int at = pos;
                if (!word().equalsIgnoreCase("ALL")) {
                    throw unsupported(at, "DISCARD " + describe(at) + " is not supported; DISCARD ALL is");
                }
                yield new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.DISCARD_ALL, "");
            }
            case "RESET" -> reset();
            case "DEALLOCATE" -> deallocate();
            case "CLOSE" -> {
                skipTrivia();
                int at = pos;
                if (!word().equalsIgnoreCase("ALL")) {
                    throw unsupported(at, "CLOSE of a cursor is not supported (there are no SQL cursors); CLOSE ALL is");
                }
                yield new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.CLOSE_ALL, "");
            }
            case "UNLISTEN" -> {
                skipTrivia();
                if (!atEnd() && peek() == '*') {
                    pos++;
                    yield new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.UNLISTEN, "");
                }
                yield new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.UNLISTEN,
                        identifier("a channel name or *"));
            }
            case "CREATE", "DROP", "ALTER" -> tableStatement(start, keyword);
            case "GRANT", "REVOKE" -> {
                if (skipToEnd(false) > 0) {
                    throw unsupported(start, keyword.toUpperCase(Locale.ROOT) + " takes no parameters");
                }
                yield ParsedStatement.AccessStatement.of(sql.substring(start, pos).strip());
            }
            case "COMMIT", "END" -> endBlock(ParsedStatement.Transaction.Kind.COMMIT);
            case "ROLLBACK", "ABORT" -> endBlock(ParsedStatement.Transaction.Kind.ROLLBACK);
            default -> throw unsupported(start, "statement " + describe(start) + " is not supported");
        };
        skipTrivia();
        if (!atEnd() && peek() != ';') {
            throw syntax("unexpected " + describe(pos) + " after the end of the statement");
        }
        return result;
    }

    private ParsedStatement call(int start) {
        skipTrivia();
        int bindingAt = pos;
        String second = word();
        if (second.isEmpty()) {
            throw syntax("expected BINDING after CALL");
        }
        if (!second.equalsIgnoreCase("BINDING")) {
            throw unsupported(start, "CALL of procedure '" + Quoted.of(second) + "' at position " + (bindingAt + 1)
                    + " is not supported");
        }
        skipTrivia();
        String name = identifier("a binding name");
        skipTrivia();
        expect('(');
        skipTrivia();
        if (!atEnd() && peek() == ')') {
            pos++; // no arguments: the empty JSON object
            return new ParsedStatement.Call(name, new ParsedStatement.Argument.Literal("{}"));
        }
        ParsedStatement.Argument argument = argument();
        skipTrivia();
        expect(')');
        return new ParsedStatement.Call(name, argument);
    }

    /**
     * The argument in the forms drivers write it: in parentheses ({@code ('{}')}, as pgjdbc inlines a parameter in
     * its simple query mode), cast to json or jsonb ({@code '{}'::jsonb}, {@code CAST('{}' AS json)}), an escape
     * string, a dollar-quoted string, or {@code $1}.
     */
    private ParsedStatement.Argument argument() {
        return argument(0);
    }

    /** Parentheses and casts around an argument nest at most this deep. */
    private static final int MAX_ARGUMENT_NESTING = 16;

    private ParsedStatement.Argument argument(int depth) {
        if (depth > MAX_ARGUMENT_NESTING) {
            throw syntax("the argument is nested in more than " + MAX_ARGUMENT_NESTING + " parentheses or casts");
        }
        ParsedStatement.Argument argument;
        int save = pos;
        if (!atEnd() && peek() == '(') {
            pos++;
            skipTrivia();
            argument = argument(depth + 1);
            skipTrivia();
            expect(')');
        } else if (word().equalsIgnoreCase("CAST") && skipTriviaThen('(')) {
            pos++;
            skipTrivia();
            argument = argument(depth + 1);
            requireWords("AS");
            skipTrivia();
            castType();
            skipTrivia();
            expect(')');
        } else {
            pos = save;
            argument = literal();
        }
        skipTrivia();
        while (sql.startsWith("::", pos)) {
            pos += 2;
            skipTrivia();
            castType();
            skipTrivia();
        }
        return argument;
    }

    /** Whether {@code c} comes next after whitespace and comments, which are skipped. */
    private boolean skipTriviaThen(char c) {
        skipTrivia();
        return !atEnd() && peek() == c;
    }

    /** The type an argument is cast to: json or jsonb, optionally qualified by pg_catalog. */
    private void castType() {
        int typeAt = pos;
        String type = word().toLowerCase(Locale.ROOT);
        if (type.equals("pg_catalog") && !atEnd() && peek() == '.') {
            pos++;
            type = word().toLowerCase(Locale.ROOT);
        }
        if (!type.equals("json") && !type.equals("jsonb")) {
            pos = typeAt;
            throw syntax("the argument can only be cast to json or jsonb");
        }
    }

    private ParsedStatement.Argument literal() {
        if (atEnd()) {
            throw syntax("expected a string literal or $1, found the end of the statement");
        }
        char c = peek();
        if (c == '\'') {
            return new ParsedStatement.Argument.Literal(quoted('\''));
        }
        if ((c == 'E' || c == 'e') && pos + 1 < sql.length() && sql.charAt(pos + 1) == '\'') {
            pos++;
            return new ParsedStatement.Argument.Literal(escapeString());
        }
        if (c == '$' && pos + 1 < sql.length() && isDigit(sql.charAt(pos + 1))) {
            int at = pos++;
            while (!atEnd() && isDigit(peek())) {
                pos++;
            }
            String digits = sql.substring(at + 1, pos);
            if (!digits.equals("1")) {
                pos = at;
                throw syntax("only parameter $1 is supported, found $" + digits);
            }
            return new ParsedStatement.Argument.Parameter(1);
        }
        if (c == '$') {
            return new ParsedStatement.Argument.Literal(dollarQuoted());
        }
        throw syntax("expected a string literal or $1, found " + describe(pos));
    }

    private ParsedStatement set() {
        skipTrivia();
        String name = identifier("a parameter name");
        boolean local = false;
        if (name.equals("session") || name.equals("local")) {
            int save = pos;
            skipTrivia();
            if (startsIdentifier() || (!atEnd() && peek() == '"')) {
                local = name.equals("local");
                boolean session = name.equals("session");
                name = identifier("a parameter name");
                if (session && name.equals("characteristics")) {
                    requireWords("AS", "TRANSACTION");
                    skipTrivia();
                    int modesAt = pos;
                    transactionModes();
                    return new ParsedStatement.Set("session_characteristics", sql.substring(modesAt, pos).strip());
                }
            } else {
                pos = save;
            }
        }
        while (!atEnd() && peek() == '.') {
            pos++;
            name = name + "." + identifier("a parameter name");
        }
        skipTrivia();
        if (!atEnd() && peek() == '=') {
            pos++;
        } else {
            int save = pos;
            if (!word().equalsIgnoreCase("TO")) {
                pos = save;
            }
        }
        skipTrivia();
        if (!atEnd() && peek() == '\'') {
            return new ParsedStatement.Set(name, quoted('\''), local);
        }
        int valueStart = pos;
        while (!atEnd() && peek() != ';') {
            pos++;
        }
        String value = sql.substring(valueStart, pos).strip();
        if (value.isEmpty()) {
            throw syntax("SET " + name + " needs a value");
        }
        return new ParsedStatement.Set(name, value, local);
    }

    /** {@code RESET ALL} or {@code RESET name}. */
    private ParsedStatement reset() {
        skipTrivia();
        String name = identifier("a parameter name or ALL");
        if (name.equals("all")) {
            return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.RESET_ALL, "");
        }
        if (name.equals("time")) {
            requireWords("ZONE");
            name = "timezone";
        }
        while (!atEnd() && peek() == '.') {
            pos++;
            name = name + "." + identifier("a parameter name");
        }
        return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.RESET, name);
    }

    /** {@code DEALLOCATE [PREPARE] name} or {@code DEALLOCATE [PREPARE] ALL}. */
    private ParsedStatement deallocate() {
        skipTrivia();
        int at = pos;
        if (!word().equalsIgnoreCase("PREPARE")) {
            pos = at;
        }
        skipTrivia();
        at = pos;
        if (word().equalsIgnoreCase("ALL")) {
            return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.DEALLOCATE_ALL, "");
        }
        pos = at;
        return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.DEALLOCATE,
                identifier("a prepared statement name or ALL"));
    }

    private ParsedStatement show() {
        skipTrivia();
        String name = identifier("a parameter name");
        if (name.equals("transaction")) {
            requireWords("ISOLATION", "LEVEL");
            return new ParsedStatement.Show("transaction_isolation");
        }
        if (name.equals("time")) {
            requireWords("ZONE");
            return new ParsedStatement.Show("timezone");
        }
        if (name.equals("calls")) {
            int save = pos;
            skipTrivia();
            if (atEnd() || peek() == ';') {
                return new ParsedStatement.Select(JournalSqlParser.showCalls());
            }
            pos = save;
        }
        if (name.equals("call")) {
            int save = pos;
            skipTrivia();
            if (!atEnd() && peek() == '\'') {
                return showCall();
            }
            pos = save; // SHOW call: a parameter of that name (there is none)
        }
        while (!atEnd() && peek() == '.') {
            pos++;
            name = name + "." + identifier("a parameter name");
        }
        return new ParsedStatement.Show(name);
    }

    /** {@code SHOW CALL 'id'} from the quote on: the id must be a UUID in its canonical text form. */
    private ParsedStatement showCall() {
        int at = pos;
        String id = quoted('\'');
        if (!UUID_TEXT.matcher(id).matches()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "invalid call id at position " + (at + 1)
                    + ": '" + Quoted.of(id)
                    + "' is not a UUID (SHOW CALL takes the id a CALL BINDING was told, e.g. '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f')");
        }
        return new ParsedStatement.ShowCall(java.util.UUID.fromString(id));
    }

    /** The transaction modes after BEGIN or START TRANSACTION: checked, then ignored. */
    private ParsedStatement begin() {
        transactionModes();
        return new ParsedStatement.Transaction(ParsedStatement.Transaction.Kind.BEGIN);
    }

    /** Transaction modes to the end of the statement, checked. */
    private void transactionModes() {
        while (true) {
            skipTrivia();
            if (atEnd() || peek() == ';') {
                return;
            }
            if (peek() == ',') {
                pos++;
                continue;
            }
            int at = pos;
            if (!TRANSACTION_MODE_WORDS.contains(word().toUpperCase(Locale.ROOT))) {
                pos = at;
                throw syntax("expected a transaction mode, found " + describe(at));
            }
        }
    }

    private ParsedStatement endBlock(ParsedStatement.Transaction.Kind kind) {
        int at = pos;
        optionalWord("WORK", "TRANSACTION");
        skipTrivia();
        int andAt = pos;
        if (word().equalsIgnoreCase("AND")) {
            skipTrivia();
            int noAt = pos;
            if (!word().equalsIgnoreCase("NO")) {
                throw unsupported(andAt, "AND CHAIN is not supported");
            }
            pos = noAt;
            requireWords("NO", "CHAIN");
        } else {
            pos = andAt;
        }
        skipTrivia();
        if (!atEnd() && peek() != ';' && kind == ParsedStatement.Transaction.Kind.ROLLBACK) {
            throw unsupported(at, "savepoints are not supported");
        }
        return new ParsedStatement.Transaction(kind);
    }

    /**
     * {@code COPY table [(column, ...)] FROM STDIN [[WITH] (option, ...) | legacy options]}; options
     * {@code FORMAT text|csv}, {@code HEADER [boolean]}, {@code DELIMITER 'c'}, {@code NULL 'string'},
     * {@code QUOTE '"'}, {@code ESCAPE '"'}, {@code ENCODING 'UTF8'}; legacy {@code CSV}, {@code HEADER},
     * {@code DELIMITER [AS] 'c'}, {@code NULL [AS] 'string'} (what psql's {@code \copy} sends).
     */
    private ParsedStatement copy(int start) {
        skipTrivia();
        String table = qualifiedTable();
        skipTrivia();
        List<String> columns = new ArrayList<>();
        if (!atEnd() && peek() == '(') {
            pos++;
            do {
                skipTrivia();
                columns.add(identifier("a column name"));
                skipTrivia();
            } while (!atEnd() && peek() == ',' && ++pos > 0);
            expect(')');
        }
        skipTrivia();
        int directionAt = pos;
        String direction = word();
        if (direction.equalsIgnoreCase("TO")) {
            throw unsupported(directionAt, "COPY ... TO is not served: read the shard databases with SQL, or call a binding");
        }
        if (!direction.equalsIgnoreCase("FROM")) {
            pos = directionAt;
            throw syntax("expected FROM STDIN, found " + describe(directionAt));
        }
        skipTrivia();
        int sourceAt = pos;
        String source = word();
        if (!source.equalsIgnoreCase("STDIN")) {
            throw unsupported(sourceAt, "COPY FROM a file or a program is not served: the server reads neither; send"
                    + " the rows with COPY ... FROM STDIN (psql: \\copy table FROM 'file')");
        }
        CopyOptions o = new CopyOptions();
        skipTrivia();
        optionalWord("WITH");
        skipTrivia();
        if (!atEnd() && peek() == '(') {
            pos++;
            do {
                skipTrivia();
                int at = pos;
                String option = word().toUpperCase(Locale.ROOT);
                skipTrivia();
                switch (option) {
                    case "FORMAT" -> o.format(word(), at);
                    case "HEADER" -> o.header = atEnd() || peek() == ',' || peek() == ')' || booleanValue(word(), at);
                    case "DELIMITER" -> o.delimiter = singleChar(stringValue(), "DELIMITER", at);
                    case "NULL" -> o.nullString = stringValue();
                    case "QUOTE", "ESCAPE" -> o.quoteOrEscape(option, stringValue(), at);
                    case "ENCODING" -> o.encoding(stringValue(), at);
                    default -> throw unsupported(at, "COPY option " + describe(at) + " is not served");
                }
                skipTrivia();
            } while (!atEnd() && peek() == ',' && ++pos > 0);
            expect(')');
        } else {
            while (true) {
                skipTrivia();
                int at = pos;
                String option = word().toUpperCase(Locale.ROOT);
                switch (option) {
                    case "" -> {
                        return o.statement(table, columns);
                    }
                    case "CSV" -> o.format("csv", at);
                    case "BINARY" -> o.format("binary", at);
                    case "HEADER" -> o.header = true;
                    case "DELIMITER" -> {
                        optionalWord("AS");
                        skipTrivia();
                        o.delimiter = singleChar(stringValue(), "DELIMITER", at);
                    }
                    case "NULL" -> {
                        optionalWord("AS");
                        skipTrivia();
                        o.nullString = stringValue();
                    }
                    case "QUOTE", "ESCAPE" -> {
                        optionalWord("AS");
                        skipTrivia();
                        o.quoteOrEscape(option, stringValue(), at);
                    }
                    default -> throw unsupported(at, "COPY option " + describe(at) + " is not served");
                }
            }
        }
        return o.statement(table, columns);
    }

    /** The options of one COPY, with PostgreSQL's defaults per format. */
    private final class CopyOptions {
        boolean csv;
        boolean header;
        Character delimiter;
        String nullString;

        void format(String name, int at) {
            switch (name.toLowerCase(Locale.ROOT)) {
                case "csv" -> csv = true;
                case "text" -> csv = false;
                case "binary" -> throw unsupported(at, "COPY in binary format is not served; use text or csv");
                default -> throw syntax("COPY format " + describe(at) + " is not recognized");
            }
        }

        void quoteOrEscape(String option, String value, int at) {
            if (!value.equals("\"")) {
                throw unsupported(at, "COPY " + option + " other than '\"' is not served");
            }
        }

        void encoding(String value, int at) {
            if (!value.replace("-", "").equalsIgnoreCase("UTF8")) {
                throw unsupported(at, "COPY ENCODING '" + Quoted.of(value) + "' is not served; data is UTF-8");
            }
        }

        ParsedStatement.Copy statement(String table, List<String> columns) {
            char d = delimiter != null ? delimiter : csv ? ',' : '\t';
            String n = nullString != null ? nullString : csv ? "" : "\\N";
            if (header && !csv) {
                throw unsupported(pos, "COPY HEADER is served with FORMAT csv only");
            }
            if (d == '\n' || d == '\r' || d == '\\' || (csv && d == '"')) {
                throw unsupported(pos, "COPY DELIMITER " + describeChar(d) + " is not allowed");
            }
            return new ParsedStatement.Copy(table, columns, csv, header, d, n);
        }
    }

    private static String describeChar(char c) {
        return c < ' ' ? String.format("U+%04X", (int) c) : "'" + c + "'";
    }

    private boolean booleanValue(String w, int at) {
        return switch (w.toLowerCase(Locale.ROOT)) {
            case "true", "on", "1", "yes" -> true;
            case "false", "off", "0", "no" -> false;
            case "match" -> throw unsupported(at, "COPY HEADER MATCH is not served; use HEADER true");
            default -> throw syntax("expected a boolean for HEADER, found " + describe(at));
        };
    }

    private String stringValue() {
        if (atEnd() || peek() != '\'') {
            throw syntax("expected a quoted string, found " + describe(pos));
        }
        return quoted('\'');
    }

    private char singleChar(String value, String option, int at) {
        if (value.length() != 1 || value.charAt(0) > 0x7f) { // one byte of UTF-8, as PostgreSQL requires
            throw unsupported(at, "COPY " + option + " must be a single one-byte character");
        }
        return value.charAt(0);
    }

    /** A table name, optionally qualified by the schema {@code public}. */
    private String qualifiedTable() {
        String name = identifier("a table name");
        if (!atEnd() && peek() == '.') {
            if (!name.equals("public")) {
                throw syntax("tables live in the shard databases' public schema, not '" + Quoted.of(name) + "'");
            }
            pos++;
            name = identifier("a table name");
        }
        return name;
    }

    /**
     * {@code INSERT ...}: kept as written, to the end of the statement (quotes, dollar quotes and comments
     * respected), for the table writer to parse; {@code $n} parameters are counted.
     */
    private ParsedStatement insert(int start) {
        int parameters = skipToEnd(false);
        return new ParsedStatement.Insert(sql.substring(start, pos).strip(), parameters);
    }

    /**
     * The statement with each {@code $n} outside quotes, dollar quotes and comments replaced by
     * {@code literals.get(n - 1)}.
     */
    static String substitute(String sql, List<String> literals) {
        CallStatementParser p = new CallStatementParser(sql);
        StringBuilder out = new StringBuilder(sql.length() + 16 * literals.size());
        int copied = 0;
        while (!p.atEnd()) {
            char c = p.peek();
            if (c == '\'' || c == '"') {
                p.quoted(c);
            } else if (c == '$' && p.pos + 1 < sql.length() && isDigit(sql.charAt(p.pos + 1))) {
                int at = p.pos++;
                while (!p.atEnd() && isDigit(p.peek())) {
                    p.pos++;
                }
                int n = Integer.parseInt(sql.substring(at + 1, Math.min(p.pos, at + 7)));
                out.append(sql, copied, at).append(literals.get(n - 1));
                copied = p.pos;
            } else if (c == '$') {
                p.dollarQuoted();
            } else if (c == '-' && sql.startsWith("--", p.pos) || c == '/' && sql.startsWith("/*", p.pos)) {
                p.skipTrivia();
            } else {
                p.pos++;
            }
        }
        return out.append(sql, copied, sql.length()).toString();
    }

    /** {@code CREATE TABLE}, {@code DROP TABLE}, {@code ALTER TABLE}: kept as written for the table service. */
    private ParsedStatement tableStatement(int start, String keyword) {
        skipTrivia();
        int at = pos;
        String object = word();
        if (object.equalsIgnoreCase("USER") || object.equalsIgnoreCase("ROLE")) {
            if (skipToEnd(false) > 0) {
                throw unsupported(start, keyword.toUpperCase(Locale.ROOT) + " USER takes no parameters");
            }
            return ParsedStatement.AccessStatement.of(sql.substring(start, pos).strip());
        }
        if (object.equalsIgnoreCase("BINDING") && !keyword.equalsIgnoreCase("DROP")) {
            skipToEnd(false);
            return ParsedStatement.BindingStatement.of(sql.substring(start, pos).strip());
        }
        if (!object.equalsIgnoreCase("TABLE")) {
            throw unsupported(start, keyword.toUpperCase(Locale.ROOT) + " " + describe(at) + " is not supported;"
                    + " of the schema statements only CREATE TABLE, ALTER TABLE, DROP TABLE, CREATE BINDING, ALTER BINDING, CREATE USER, ALTER USER and DROP USER are");
        }
        if (skipToEnd(false) > 0) {
            throw unsupported(start, keyword.toUpperCase(Locale.ROOT) + " TABLE takes no parameters");
        }
        return ParsedStatement.TableStatement.of(sql.substring(start, pos).strip());
    }

    /**
     * Moves to the end of the statement (its semicolon or the end), over quoted strings, quoted names,
     * dollar quotes and comments, and escape strings when {@code escapes} (else they are refused: the table service
     * does not read them); returns the highest {@code $n} parameter seen.
     */
    private int skipToEnd(boolean escapes) {
        int parameters = 0;
        while (!atEnd() && peek() != ';') {
            char c = peek();
            if (c == '\'' || c == '"') {
                quoted(c);
            } else if (c == '$' && pos + 1 < sql.length() && isDigit(sql.charAt(pos + 1))) {
                int from = ++pos;
                while (!atEnd() && isDigit(peek())) {
                    pos++;
                }
                parameters = Math.max(parameters, Integer.parseInt(sql.substring(from, Math.min(pos, from + 6))));
            } else if (c == '$') {
                dollarQuoted();
            } else if (c == '-' && sql.startsWith("--", pos) || c == '/' && sql.startsWith("/*", pos)) {
                skipTrivia();
            } else if (c == 'E' || c == 'e') {
                if (pos + 1 < sql.length() && sql.charAt(pos + 1) == '\'' && (pos == 0 || !isIdentifierPart(sql.charAt(pos - 1)))) {
                    if (!escapes) {
                        throw unsupported(pos, "escape string constants (E'...') are not served");
                    }
                    pos++;
                    escapeString();
                } else {
                    pos++;
                }
            } else {
                pos++;
            }
        }
        return parameters;
    }

    /** Skips one of {@code words} (case-insensitive) if it comes next. */
    private void optionalWord(String... words) {
        skipTrivia();
        int at = pos;
        String w = word();
        for (String each : words) {
            if (w.equalsIgnoreCase(each)) {
                return;
            }
        }
        pos = at;
    }

    private void requireWords(String... words) {
        for (String each : words) {
            skipTrivia();
            int at = pos;
            if (!word().equalsIgnoreCase(each)) {
                pos = at;
                throw syntax("expected " + each + ", found " + describe(at));
            }
        }
    }

    /** An unquoted identifier folded to lower case, or a quoted one as written; at most {@value #MAX_NAME_BYTES} bytes. */
    private String identifier(String what) {
        if (atEnd()) {
            throw syntax("expected " + what + ", found the end of the statement");
        }
        int at = pos;
        String name;
        if (peek() == '"') {
            name = quoted('"');
            if (name.isEmpty()) {
                pos = at;
                throw syntax("zero-length quoted identifier");
            }
        } else if (!startsIdentifier()) {
            throw syntax("expected " + what + ", found " + describe(pos));
        } else {
            name = word().toLowerCase(Locale.ROOT);
        }
        return checkedName(name, what, at);
    }

    /**
     * {@code name} when it is at most {@value #MAX_NAME_BYTES} bytes; PostgreSQL would truncate a longer one (with a
     * notice), which could name another object, so Thresher refuses it.
     *
     * @throws ThresherException {@link ErrorCode#NAME_TOO_LONG} ({@code 42622})
     */
    static String checkedName(String name, String what, int at) {
        if (Quoted.longerThan(name, MAX_NAME_BYTES)) {
            throw new ThresherException(ErrorCode.NAME_TOO_LONG, what + " at position " + (at + 1) + " is longer than "
                    + MAX_NAME_BYTES + " bytes: \"" + Quoted.of(name) + "\"");
        }
        return name;
    }

    /** Text between {@code quote} characters, a doubled quote standing for one ({@link SqlLexer}). */
    private String quoted(char quote) {
        SqlLexer lexer = lexerAt(pos);
        try {
            String value = lexer.readQuoted(quote);
            pos = lexer.position();
            return value;
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
    }

    /** An escape string's value from its quote on ({@code E} already read): {@link EscapeString}. */
    private String escapeString() {
        SqlLexer lexer = lexerAt(pos);
        try {
            String value = lexer.readEscapeString();
            pos = lexer.position();
            return value;
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
    }

    /** A dollar-quoted string's value from its {@code $} on ({@link SqlLexer}). */
    private String dollarQuoted() {
        SqlLexer lexer = lexerAt(pos);
        String value;
        try {
            value = lexer.readDollarQuoted();
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
        if (value == null) {
            throw syntax("expected a string literal or $1, found " + describe(pos));
        }
        pos = lexer.position();
        return value;
    }

    /** Skips whitespace, {@code --} line comments and nested block comments ({@link SqlLexer}). */
    private void skipTrivia() {
        try {
            pos = lexerAt(pos).skipSpace();
        } catch (SqlLexer.LexError e) {
            throw lexError(e);
        }
    }

    private SqlLexer lexerAt(int at) {
        return new SqlLexer(sql, at, sql.length(), SqlLexer.CALL);
    }

    /** What the lexer could not read, as this parser reports it: at the lexer's position, with the forms served. */
    private ThresherException lexError(SqlLexer.LexError e) {
        if (e.code() != ErrorCode.SYNTAX_ERROR) {
            return new ThresherException(e.code(), e.problem());
        }
        pos = e.at();
        return syntax(e.problem());
    }

    /** A run of identifier characters (possibly empty); keywords are read with it too. */
    private String word() {
        int start = pos;
        if (startsIdentifier()) {
            pos++;
            while (!atEnd() && isIdentifierPart(peek())) {
                pos++;
            }
        }
        return sql.substring(start, pos);
    }

    private void expect(char c) {
        if (atEnd() || peek() != c) {
            throw syntax("expected '" + c + "', found " + describe(pos));
        }
        pos++;
    }

    private void skipSemicolons() {
        skipTrivia();
        while (!atEnd() && peek() == ';') {
            pos++;
            skipTrivia();
        }
    }

    private boolean startsIdentifier() {
        if (atEnd()) {
            return false;
        }
        char c = peek();
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    private static boolean isIdentifierPart(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || isDigit(c);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private boolean atEnd() {
        return pos >= sql.length();
    }

    private char peek() {
        return sql.charAt(pos);
    }

    /** A short quote of the text at {@code at} for messages (at most 20 characters, control characters escaped). */
    private String describe(int at) {
        if (at >= sql.length()) {
            return "the end of the statement";
        }
        int end = at;
        while (end < sql.length() && end - at < 20 && !Character.isWhitespace(sql.charAt(end))) {
            end++;
        }
        return "'" + Quoted.of(sql.substring(at, Math.max(end, at + 1))) + "'";
    }

    private ThresherException syntax(String message) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR,
                "syntax error at position " + (pos + 1) + ": " + message + "; " + USAGE);
    }

    private static ThresherException unsupported(int at, String message) {
        return new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                message + " (position " + (at + 1) + "); " + USAGE);
    }
}
