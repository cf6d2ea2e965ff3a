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
 *
 * <p>It reads which statement comes, {@code CALL}, {@code INSERT} and what it hands on; the families have a grammar
 * each, over the same scanner ({@link SqlScanner}: whitespace, words, names, strings through {@link SqlLexer}):
 * {@link SessionGrammar} ({@code set}, {@code show}, {@code session} but {@code DISCARD}, {@code CLOSE},
 * {@code UNLISTEN}, {@code begin}, {@code commit}, {@code rollback}), {@link CopyGrammar} ({@code copy}),
 * {@link DdlGrammar} ({@code table}, {@code binding}), {@link AccessGrammar} ({@code access}), and for a
 * {@code SELECT} {@link SessionQueries} then {@link JournalSqlParser}.
 */
final class CallStatementParser extends SqlScanner {
    static final String USAGE = "Thresher accepts CALL BINDING name('<json>'), name() or name($1), COPY table FROM STDIN,"
            + " INSERT INTO table VALUES ..., CREATE/ALTER/DROP TABLE,"
            + " CREATE/ALTER BINDING, SHOW CALL '<call id>', SHOW CALLS, SELECT ... FROM thresher.invocations or"
            + " thresher.shard_runs, SELECT of constants and session functions (SELECT 1, version(), current_schema(),"
            + " current_setting('name')), and SET, SHOW, RESET, DISCARD ALL, DEALLOCATE, BEGIN, COMMIT and ROLLBACK"
            + " (docs/clients.md)";

    /** PostgreSQL's NAMEDATALEN - 1: the longest identifier, in UTF-8 bytes. */
    static final int MAX_NAME_BYTES = 63;

    private CallStatementParser(String sql) {
        super(sql, 0);
    }

    /** Reads a statement of the session's with {@link SessionGrammar}, from here on. */
    private ParsedStatement session(java.util.function.Function<SessionGrammar, ParsedStatement> read) {
        SessionGrammar grammar = new SessionGrammar(sql, pos);
        ParsedStatement statement = read.apply(grammar);
        pos = grammar.pos;
        return statement;
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
            case "SET" -> session(SessionGrammar::set);
            case "SHOW" -> session(SessionGrammar::show);
            case "BEGIN" -> {
                optionalWord("WORK", "TRANSACTION");
                yield session(SessionGrammar::begin);
            }
            case "START" -> {
                skipTrivia();
                if (!word().equalsIgnoreCase("TRANSACTION")) {
                    throw syntax("expected TRANSACTION after START");
                }
                yield session(SessionGrammar::begin);
            }
            case "COPY" -> {
                CopyGrammar grammar = new CopyGrammar(sql, pos);
                ParsedStatement copy = grammar.copy(start);
                pos = grammar.pos;
                yield copy;
            }
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
            case "RESET" -> session(SessionGrammar::reset);
            case "DEALLOCATE" -> session(SessionGrammar::deallocate);
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
            case "COMMIT", "END" -> session(g -> g.endBlock(ParsedStatement.Transaction.Kind.COMMIT));
            case "ROLLBACK", "ABORT" -> session(g -> g.endBlock(ParsedStatement.Transaction.Kind.ROLLBACK));
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

    /**
     * {@code INSERT ...}, to the end of the statement (quotes, dollar quotes and comments respected), read by
     * {@link InsertGrammar}; {@code $n} parameters are counted.
     */
    private ParsedStatement insert(int start) {
        int parameters = skipToEnd(true);
        return ParsedStatement.Insert.of(sql.substring(start, pos).strip(), parameters);
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
            skipToEnd(true); // a manifest may come as E'...', as psql's \set of a text with a backslash sends it
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
}
