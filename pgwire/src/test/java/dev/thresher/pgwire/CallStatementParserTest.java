package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.ParsedStatement.Argument.Literal;
import dev.thresher.pgwire.ParsedStatement.Argument.Parameter;
import dev.thresher.pgwire.ParsedStatement.SessionCommand.Kind;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CallStatementParserTest {

    @Test
    void parsesLiteralCall() {
        assertThat(CallStatementParser.parse("CALL BINDING total_sales('{\"region\":\"eu\"}')"))
                .isEqualTo(new ParsedStatement.Call("total_sales", new Literal("{\"region\":\"eu\"}")));
    }

    @Test
    void emptyParenthesesCallWithTheEmptyObject() {
        assertThat(CallStatementParser.parse("CALL BINDING total_sales( /* none */ )"))
                .isEqualTo(new ParsedStatement.Call("total_sales", new Literal("{}")));
        assertThat(CallStatementParser.parse("call binding x()").parameterCount()).isZero();
    }

    @Test
    void parsesParameterCall() {
        ParsedStatement statement = CallStatementParser.parse("call binding x($1)");
        assertThat(statement).isEqualTo(new ParsedStatement.Call("x", new Parameter(1)));
        assertThat(statement.parameterCount()).isEqualTo(1);
    }

    @Test
    void keywordsAreCaseInsensitiveAndNamesFoldToLowerCase() {
        assertThat(CallStatementParser.parse("cAlL BiNdInG Total_Sales('{}')"))
                .isEqualTo(new ParsedStatement.Call("total_sales", new Literal("{}")));
    }

    @Test
    void quotedIdentifiersKeepTheirSpellingAndDoubledQuotes() {
        assertThat(CallStatementParser.parse("CALL BINDING \"Mixed\"\"Case\"('{}')"))
                .isEqualTo(new ParsedStatement.Call("Mixed\"Case", new Literal("{}")));
    }

    @Test
    void doubledSingleQuotesAreUnescapedAndBackslashesKept() {
        assertThat(CallStatementParser.parse("CALL BINDING x('{\"name\": \"O''Brien\", \"p\": \"a\\\\b\"}')"))
                .isEqualTo(new ParsedStatement.Call("x", new Literal("{\"name\": \"O'Brien\", \"p\": \"a\\\\b\"}")));
    }

    @Test
    void dollarQuotedArguments() {
        assertThat(CallStatementParser.parse("CALL BINDING x($$ {\"a\": \"it's\"} $$)"))
                .isEqualTo(new ParsedStatement.Call("x", new Literal(" {\"a\": \"it's\"} ")));
        assertThat(CallStatementParser.parse("CALL BINDING x($j${\"a\": \"$$\"}$j$)"))
                .isEqualTo(new ParsedStatement.Call("x", new Literal("{\"a\": \"$$\"}")));
    }

    @Test
    void whitespaceCommentsCastsAndSemicolonsAreTolerated() {
        String sql = """
                -- leading comment
                /* block /* nested */ comment */ CALL
                  BINDING\t x /* between */ ( \r\n '[1, 2]' :: JSONB -- trailing
                ) ;  ; -- done
                """;
        assertThat(CallStatementParser.parse(sql)).isEqualTo(new ParsedStatement.Call("x", new Literal("[1, 2]")));
        assertThat(CallStatementParser.parse("CALL BINDING x($1::json);"))
                .isEqualTo(new ParsedStatement.Call("x", new Parameter(1)));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "CALL BINDING x(('{\"a\": 1}'))", // pgjdbc's simple query mode inlines a parameter so
        "CALL BINDING x(('{\"a\": 1}')::json)",
        "CALL BINDING x(('{\"a\": 1}'::jsonb))",
        "CALL BINDING x('{\"a\": 1}'::json::pg_catalog.jsonb)",
        "CALL BINDING x(CAST('{\"a\": 1}' AS json))",
        "call binding x( cast ( ( '{\"a\": 1}' ) as pg_catalog.JSONB ) )",
        "CALL BINDING x(E'{\"a\": 1}')",
        "CALL BINDING x(e'{\\\"a\\\": \\x31}')",
        "CALL BINDING x(E'{\"\\u0061\": \\061}'::json)",
        "CALL BINDING x($$ {\"a\": 1} $$::jsonb)",
        "CALL BINDING x(CAST($body${\"a\": 1}$body$ AS jsonb))"
    })
    void literalFormsDriversAndToolsWrite(String sql) {
        ParsedStatement statement = CallStatementParser.parse(sql);
        assertThat(statement).isInstanceOfSatisfying(ParsedStatement.Call.class, c -> assertThat(c.argument())
                .isInstanceOfSatisfying(Literal.class, l -> assertThat(l.json().strip()).isEqualTo("{\"a\": 1}")));
    }

    @Test
    void escapeStringsUnescapeAsPostgreSqlDoes() {
        assertThat(CallStatementParser.parse("CALL BINDING x(E'it''s \\'q\\' \\b\\f\\n\\r\\t \\\\ \\z')"))
                .isEqualTo(new ParsedStatement.Call("x", new Literal("it's 'q' \b\f\n\r\t \\ z")));
        assertThat(CallStatementParser.parse("CALL BINDING x(E'\\303\\251 \\xc3\\xa9 \\u00e9 \\U0001F600 \\ud83d\\ude00 \\xg')"))
                .isEqualTo(new ParsedStatement.Call("x", new Literal("é é é 😀 😀 xg")));
        assertFails("CALL BINDING x(E'\\u00')", ErrorCode.SYNTAX_ERROR);
        assertFails("CALL BINDING x(E'\\ud83d')", ErrorCode.SYNTAX_ERROR);
        assertFails("CALL BINDING x(E'\\0')", ErrorCode.SYNTAX_ERROR);
        assertFails("CALL BINDING x(E'unterminated\\')", ErrorCode.SYNTAX_ERROR);
        assertFails("CALL BINDING x(E'\\xff')", ErrorCode.INVALID_TEXT_ENCODING);
    }

    @Test
    void argumentsNestAtMostSixteenDeep() {
        assertThat(CallStatementParser.parse("CALL BINDING x(" + "(".repeat(16) + "'{}'" + ")".repeat(16) + ")"))
                .isEqualTo(new ParsedStatement.Call("x", new Literal("{}")));
        assertFails("CALL BINDING x(" + "(".repeat(100_000) + "'{}'" + ")".repeat(100_000) + ")", ErrorCode.SYNTAX_ERROR);
        assertFails("CALL BINDING x(" + "CAST(".repeat(17) + "'{}'" + " AS json)".repeat(17) + ")", ErrorCode.SYNTAX_ERROR);
        String deep = SessionQueriesTest.PGJDBC_NAME_BY_OID.replace("$1", "(".repeat(100_000) + "1" + ")".repeat(100_000));
        assertThat(SessionQueries.match(deep, 0, deep.length())).isEmpty();
    }

    @Test
    void theParameterMayBeParenthesizedAndCast() {
        for (String sql : List.of("CALL BINDING x(($1))", "CALL BINDING x(($1)::jsonb)", "CALL BINDING x(CAST($1 AS json))")) {
            assertThat(CallStatementParser.parse(sql)).as(sql).isEqualTo(new ParsedStatement.Call("x", new Parameter(1)));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CALL BINDING x(('{}')", "CALL BINDING x(CAST('{}' AS int))", "CALL BINDING x(CAST('{}' json))",
        "CALL BINDING x(CAST '{}')", "CALL BINDING x(('{}')::text)", "CALL BINDING x(())", "CALL BINDING x(E)"})
    void malformedLiteralFormsAreSyntaxErrors(String sql) {
        assertFails(sql, ErrorCode.SYNTAX_ERROR);
    }

    @Test
    void setLocalAndSessionCharacteristics() {
        assertThat(CallStatementParser.parse("SET LOCAL thresher.call_deadline_ms = 500"))
                .isEqualTo(new ParsedStatement.Set("thresher.call_deadline_ms", "500", true));
        assertThat(CallStatementParser.parse("set session thresher.call_deadline_ms to 500"))
                .isEqualTo(new ParsedStatement.Set("thresher.call_deadline_ms", "500", false));
        assertThat(CallStatementParser.parse("SET local = 1")).isEqualTo(new ParsedStatement.Set("local", "1"));
        assertThat(CallStatementParser.parse("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED"))
                .isEqualTo(new ParsedStatement.Set("session_characteristics", "ISOLATION LEVEL READ COMMITTED"));
        assertFails("SET SESSION CHARACTERISTICS AS TRANSACTION SLOWLY", ErrorCode.SYNTAX_ERROR);
    }

    @Test
    void sessionCommandsPoolsSend() {
        // asyncpg's pool resets a connection it takes back with this simple query
        assertThat(CallStatementParser.parseScript("SELECT pg_advisory_unlock_all();\nCLOSE ALL;\nUNLISTEN *;\nRESET ALL;"))
                .hasSize(4).element(0).isInstanceOf(ParsedStatement.Answered.class);
        assertThat(CallStatementParser.parseScript("CLOSE ALL; UNLISTEN *; unlisten chan; RESET ALL; reset Thresher.Call_Deadline_Ms;"
                + " RESET TIME ZONE; DISCARD ALL; DEALLOCATE ALL; DEALLOCATE PREPARE s1; deallocate \"S 2\""))
                .containsExactly(command(Kind.CLOSE_ALL, ""), command(Kind.UNLISTEN, ""), command(Kind.UNLISTEN, "chan"),
                        command(Kind.RESET_ALL, ""), command(Kind.RESET, "thresher.call_deadline_ms"),
                        command(Kind.RESET, "timezone"), command(Kind.DISCARD_ALL, ""), command(Kind.DEALLOCATE_ALL, ""),
                        command(Kind.DEALLOCATE, "s1"), command(Kind.DEALLOCATE, "S 2"));
        assertFails("DISCARD PLANS", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("CLOSE my_cursor", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("RESET", ErrorCode.SYNTAX_ERROR);
    }

    @Test
    void selectsAreAnsweredOrJournalQueries() {
        assertThat(CallStatementParser.parse("SELECT 1")).isInstanceOf(ParsedStatement.Answered.class);
        assertThat(CallStatementParser.parse("select version();")).isInstanceOf(ParsedStatement.Answered.class);
        assertThat(CallStatementParser.parse("SELECT call_id FROM thresher.invocations")).isInstanceOf(ParsedStatement.Select.class);
        assertThat(CallStatementParser.parse("SELECT E'a\\'b' AS x")).isInstanceOf(ParsedStatement.Answered.class);
        assertFails("SELECT * FROM pg_catalog.pg_class", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("SELECT now()", ErrorCode.UNSUPPORTED_STATEMENT);
    }

    private static ParsedStatement command(Kind kind, String name) {
        return new ParsedStatement.SessionCommand(kind, name);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", ";", " ; ;", "-- only a comment", "/* c */ \n"})
    void emptyQueries(String sql) {
        assertThat(CallStatementParser.parse(sql)).isEqualTo(new ParsedStatement.Empty());
    }

    @Test
    void setStatements() {
        assertThat(CallStatementParser.parse("SET extra_float_digits = 3"))
                .isEqualTo(new ParsedStatement.Set("extra_float_digits", "3"));
        assertThat(CallStatementParser.parse("SET application_name = 'PostgreSQL JDBC Driver'"))
                .isEqualTo(new ParsedStatement.Set("application_name", "PostgreSQL JDBC Driver"));
        assertThat(CallStatementParser.parse("set session DateStyle to ISO;"))
                .isEqualTo(new ParsedStatement.Set("datestyle", "ISO"));
        assertThat(CallStatementParser.parse("SET TIME ZONE 'UTC'"))
                .isEqualTo(new ParsedStatement.Set("time", "ZONE 'UTC'"));
    }

    @Test
    void aSimpleQueryMayHoldSeveralStatements() {
        assertThat(CallStatementParser.parseScript(" ;; -- nothing\n")).isEmpty();
        assertThat(CallStatementParser.parseScript("SET thresher.call_deadline_ms = 900; CALL BINDING x('{}');"))
                .containsExactly(new ParsedStatement.Set("thresher.call_deadline_ms", "900"),
                        new ParsedStatement.Call("x", new ParsedStatement.Argument.Literal("{}")));
        assertThat(CallStatementParser.parseScript("CALL BINDING x('a;b') ; CALL BINDING y('{}')")).hasSize(2);
        assertThatThrownBy(() -> CallStatementParser.parseScript("CALL BINDING x('{}'); SELECT 2 + 2"))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT));
        assertThatThrownBy(() -> CallStatementParser.parseScript("CALL BINDING x('{}') CALL BINDING y('{}')"))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.SYNTAX_ERROR));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT 2 + 2",
        "select * from t",
        "SAVEPOINT a",
        "ROLLBACK TO SAVEPOINT a",
        "COMMIT AND CHAIN",
        "CALL my_procedure()",
        "(SELECT 1)",
        "CALL BINDING x('{}'); CALL BINDING y('{}')",
        "DELETE FROM t"
    })
    void otherStatementsAreUnsupported(String sql) {
        assertFails(sql, ErrorCode.UNSUPPORTED_STATEMENT);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "CALL",
        "CALL BINDING",
        "CALL BINDING x",
        "CALL BINDING x(",
        "CALL BINDING x() extra",
        "CALL BINDING x('{}'",
        "CALL BINDING x('{})",
        "CALL BINDING x({})",
        "CALL BINDING x($2)",
        "CALL BINDING x($1, $2)",
        "CALL BINDING x('{}', '{}')",
        "CALL BINDING x('{}') extra",
        "CALL BINDING \"\"('{}')",
        "CALL BINDING \"x('{}')",
        "CALL BINDING 1x('{}')",
        "CALL BINDING x('{}'::int)",
        "CALL BINDING x($$unterminated)",
        "CALL BINDING x('{}') /* unterminated",
        "SET",
        "SHOW",
        "SHOW TRANSACTION ISOLATION",
        "START",
        "BEGIN ISOLATION LEVEL CHAOTIC",
        "COMMIT AND NO"
    })
    void malformedCallsAreSyntaxErrors(String sql) {
        assertFails(sql, ErrorCode.SYNTAX_ERROR);
    }

    @Test
    void showNamesTheParameter() {
        assertThat(CallStatementParser.parse("SHOW TRANSACTION ISOLATION LEVEL")).isEqualTo(new ParsedStatement.Show("transaction_isolation"));
        assertThat(CallStatementParser.parse("show Transaction_Read_Only;")).isEqualTo(new ParsedStatement.Show("transaction_read_only"));
        assertThat(CallStatementParser.parse("SHOW thresher.call_deadline_ms")).isEqualTo(new ParsedStatement.Show("thresher.call_deadline_ms"));
        assertThat(CallStatementParser.parse("SHOW TIME ZONE")).isEqualTo(new ParsedStatement.Show("timezone"));
        assertThat(CallStatementParser.parse("SHOW ALL")).isEqualTo(new ParsedStatement.Show("all"));
    }

    @Test
    void showCallTakesTheCallIdAsAStringLiteral() {
        UUID id = UUID.fromString("0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f");
        assertThat(CallStatementParser.parse("SHOW CALL '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f'"))
                .isEqualTo(new ParsedStatement.ShowCall(id));
        assertThat(CallStatementParser.parse("  show /* c */ Call\n'0F8E6D2C-1B7A-4C3E-9D5F-2A4B6C8D0E1F' -- x\n;"))
                .isEqualTo(new ParsedStatement.ShowCall(id));
        assertThat(CallStatementParser.parse("SHOW CALL '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f'").parameterCount()).isZero();
        assertThat(CallStatementParser.parseScript("SET thresher.call_id_notice = off; SHOW CALL '"
                + id + "'; SHOW thresher.call_id_notice")).containsExactly(
                new ParsedStatement.Set("thresher.call_id_notice", "off"), new ParsedStatement.ShowCall(id),
                new ParsedStatement.Show("thresher.call_id_notice"));
        // without a literal, "call" is a parameter name (unknown when run), as in PostgreSQL
        assertThat(CallStatementParser.parse("SHOW call")).isEqualTo(new ParsedStatement.Show("call"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"SHOW CALL 'nope'", "SHOW CALL ''", "SHOW CALL ' 0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f'",
        "SHOW CALL '0f8e6d2c1b7a4c3e9d5f2a4b6c8d0e1f'", "SHOW CALL '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1'",
        "SHOW CALL '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1g'", "SHOW CALL '1-1-1-1-1'"})
    void aShowCallIdThatIsNoUuidIsInvalidArguments(String sql) {
        assertFails(sql, ErrorCode.INVALID_ARGUMENTS);
        assertThatThrownBy(() -> CallStatementParser.parseScript("SET a = 1; " + sql))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.getMessage())
                        .contains("invalid call id at position 22").contains("is not a UUID"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"SHOW CALL '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f", "SHOW CALL '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f' x",
        "SHOW CALL '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f' '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f'", "SHOW CALL x"})
    void malformedShowCallsAreSyntaxErrors(String sql) {
        assertFails(sql, ErrorCode.SYNTAX_ERROR);
    }

    @ParameterizedTest
    @ValueSource(strings = {"BEGIN", "begin work", "BEGIN TRANSACTION", "START TRANSACTION",
        "BEGIN ISOLATION LEVEL SERIALIZABLE", "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY, NOT DEFERRABLE",
        "BEGIN READ WRITE ISOLATION LEVEL READ COMMITTED;"})
    void beginAndItsModes(String sql) {
        assertThat(CallStatementParser.parse(sql))
                .isEqualTo(new ParsedStatement.Transaction(ParsedStatement.Transaction.Kind.BEGIN));
    }

    @Test
    void commitAndRollbackSpellings() {
        for (String sql : new String[] {"COMMIT", "commit work", "END", "END TRANSACTION", "COMMIT AND NO CHAIN"}) {
            assertThat(CallStatementParser.parse(sql)).as(sql)
                    .isEqualTo(new ParsedStatement.Transaction(ParsedStatement.Transaction.Kind.COMMIT));
        }
        for (String sql : new String[] {"ROLLBACK", "ROLLBACK WORK", "ABORT", "abort transaction"}) {
            assertThat(CallStatementParser.parse(sql)).as(sql)
                    .isEqualTo(new ParsedStatement.Transaction(ParsedStatement.Transaction.Kind.ROLLBACK));
        }
    }

    @Test
    void syntaxErrorsNameThePosition() {
        assertThatThrownBy(() -> CallStatementParser.parse("CALL BINDING x{'{}')"))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.getMessage()).contains("position 15").contains("expected '('"));
    }

    @Test
    void namesOfMoreThanSixtyThreeBytesAreRefusedNotTruncated() {
        String sixtyThree = "b".repeat(63);
        assertThat(CallStatementParser.parse("CALL BINDING " + sixtyThree + "('{}')"))
                .isEqualTo(new ParsedStatement.Call(sixtyThree, new Literal("{}")));
        // 21 three-byte characters are 63 bytes; one more is 66
        assertThat(CallStatementParser.parse("CALL BINDING \"" + "€".repeat(21) + "\"()")).isInstanceOf(ParsedStatement.Call.class);
        for (String sql : List.of("CALL BINDING " + "b".repeat(64) + "('{}')", "CALL BINDING \"" + "€".repeat(22) + "\"()",
                "SET " + "s".repeat(64) + " = 1", "SET thresher." + "s".repeat(64) + " = 1", "SHOW " + "s".repeat(64),
                "COPY " + "t".repeat(64) + " FROM STDIN", "COPY t (" + "c".repeat(64) + ") FROM STDIN",
                "SELECT " + "c".repeat(64) + " FROM thresher.invocations")) {
            assertThatThrownBy(() -> CallStatementParser.parse(sql)).as(sql.substring(0, 20))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.NAME_TOO_LONG);
                        assertThat(SqlStates.of(e.code())).isEqualTo("42622");
                        assertThat(e.getMessage()).contains("longer than 63 bytes").hasSizeLessThan(200);
                    });
        }
    }

    @Test
    void aSimpleQueryIsCutAtItsStatementLimitBeforeTheRestIsRead() {
        assertThat(CallStatementParser.parseScript("SET a = 1;".repeat(3), 3)).hasSize(3);
        assertThatThrownBy(() -> CallStatementParser.parseScript("SET a = 1;".repeat(3) + "CALL BINDING x(", 3))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
                    assertThat(e.getMessage()).contains("at most 3 statements").contains("limits.pgwireStatementsPerQuery");
                });
        // a script of many statements parses in a loop: no stack per statement
        assertThat(CallStatementParser.parseScript("SET a = 1;".repeat(200_000))).hasSize(200_000);
    }

    @Test
    void messagesQuoteInputCutShortWithControlCharactersEscaped() {
        assertThatThrownBy(() -> CallStatementParser.parse("CALL " + "p".repeat(100_000) + "()"))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.getMessage())
                        .contains("'" + "p".repeat(64) + "…(100000 bytes)'").hasSizeLessThan(800));
        assertThatThrownBy(() -> CallStatementParser.parse("CALL BINDING x(\u0007\u001b[2J)"))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.getMessage())
                        .contains("found '\\x07\\x1b[2J)'").doesNotContain("\u001b"));
    }

    @Test
    void copyFromStdinInEveryFormPsqlAndDriversSend() {
        assertThat(CallStatementParser.parse("COPY orders FROM STDIN"))
                .isEqualTo(new ParsedStatement.Copy("orders", List.of(), false, false, '\t', "\\N"));
        assertThat(CallStatementParser.parse("copy  Orders FROM STDIN CSV"))
                .isEqualTo(new ParsedStatement.Copy("orders", List.of(), true, false, ',', ""));
        assertThat(CallStatementParser.parse("COPY public.\"Sales\" (id, \"Region\") FROM STDIN CSV HEADER DELIMITER AS ';' NULL 'NA'"))
                .isEqualTo(new ParsedStatement.Copy("Sales", List.of("id", "Region"), true, true, ';', "NA"));
        assertThat(CallStatementParser.parse("copy t from stdin with (format csv, header true, delimiter '|', quote '\"', encoding 'utf8')"))
                .isEqualTo(new ParsedStatement.Copy("t", List.of(), true, true, '|', ""));
        assertThat(CallStatementParser.parse("COPY t FROM STDIN (FORMAT text, NULL '')"))
                .isEqualTo(new ParsedStatement.Copy("t", List.of(), false, false, '\t', ""));
        assertThat(CallStatementParser.parse("COPY t FROM STDIN (FORMAT csv, HEADER)"))
                .isEqualTo(new ParsedStatement.Copy("t", List.of(), true, true, ',', ""));
    }

    @Test
    void copyFormsThatAreNotServedSayWhy() {
        assertFails("COPY t TO STDOUT", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM '/etc/passwd'", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM PROGRAM 'ls'", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN BINARY", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN (FORMAT binary)", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN (HEADER match)", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN (FORMAT text, HEADER)", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN (QUOTE '''')", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN (DELIMITER 'ab')", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN (DELIMITER '\u00e9')", ErrorCode.UNSUPPORTED_STATEMENT); // one character, two bytes
        assertFails("COPY t FROM STDIN (FREEZE)", ErrorCode.UNSUPPORTED_STATEMENT);
        assertFails("COPY t FROM STDIN (FORMAT xml)", ErrorCode.SYNTAX_ERROR);
        assertFails("COPY other.t FROM STDIN", ErrorCode.SYNTAX_ERROR);
        assertFails("COPY t (a FROM STDIN", ErrorCode.SYNTAX_ERROR);
    }

    @Test
    void insertIsReadToItsEndWithParametersCounted() {
        assertThat(CallStatementParser.parseScript("INSERT INTO t VALUES (1, 'a;b', $$c;d$$) ; insert into t values ($2, $1)"))
                .containsExactly(ParsedStatement.Insert.of("INSERT INTO t VALUES (1, 'a;b', $$c;d$$)", 0),
                        ParsedStatement.Insert.of("insert into t values ($2, $1)", 2));
        ParsedStatement.Insert first = (ParsedStatement.Insert) CallStatementParser.parseScript(
                "INSERT INTO t VALUES (1, 'a;b', $$c;d$$) ; insert into t values ($2, $1)").get(0);
        assertThat(first.typed().rows().get(0)).containsExactly(new dev.thresher.bindings.InsertCommand.Value.Text("1"),
                new dev.thresher.bindings.InsertCommand.Value.Text("a;b"), new dev.thresher.bindings.InsertCommand.Value.Text("c;d"));
        assertThat(CallStatementParser.parse("INSERT INTO t VALUES ('it''s -- not a comment') -- a comment"))
                .isEqualTo(ParsedStatement.Insert.of("INSERT INTO t VALUES ('it''s -- not a comment') -- a comment", 0));
        ParsedStatement.Insert escaped = (ParsedStatement.Insert) CallStatementParser.parse("INSERT INTO t VALUES (E'\\n;')");
        assertThat(escaped.typed().rows().get(0)).containsExactly(new dev.thresher.bindings.InsertCommand.Value.Text("\n;"));
        ParsedStatement.Insert refused = (ParsedStatement.Insert) CallStatementParser.parse("INSERT INTO t VALUES (now())");
        assertThatThrownBy(refused::typed).as("refused when it runs, after the permission check")
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT));
    }

    private static void assertFails(String sql, ErrorCode code) {
        assertThatThrownBy(() -> CallStatementParser.parse(sql))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(code));
    }
}
