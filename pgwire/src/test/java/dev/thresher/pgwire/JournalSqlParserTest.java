package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalSelect.And;
import dev.thresher.bindings.JournalSelect.Compare;
import dev.thresher.bindings.JournalSelect.In;
import dev.thresher.bindings.JournalSelect.Like;
import dev.thresher.bindings.JournalSelect.Not;
import dev.thresher.bindings.JournalSelect.Now;
import dev.thresher.bindings.JournalSelect.Null;
import dev.thresher.bindings.JournalSelect.Number;
import dev.thresher.bindings.JournalSelect.Op;
import dev.thresher.bindings.JournalSelect.Or;
import dev.thresher.bindings.JournalSelect.Order;
import dev.thresher.bindings.JournalSelect.Parameter;
import dev.thresher.bindings.JournalSelect.Text;
import dev.thresher.bindings.JournalSelect.Timestamp;
import dev.thresher.bindings.JournalType;
import dev.thresher.bindings.JournalView;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class JournalSqlParserTest {
    private static final String ID = "0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f";

    private static JournalSelect parse(String sql) {
        return JournalSqlParser.parse(sql);
    }

    @Test
    void starReadsEveryColumnOfTheViewWithNoFilterAndTheDefaultPage() {
        JournalSelect s = parse("SELECT * FROM thresher.invocations");
        assertThat(s.view()).isEqualTo(JournalView.INVOCATIONS);
        assertThat(s.columns()).isEqualTo(JournalView.INVOCATIONS.columns().stream().map(JournalColumn::name).toList());
        assertThat(s.where()).isEmpty();
        assertThat(s.orderBy()).isEmpty();
        assertThat(s.limit()).isEmpty();
        assertThat(s.effectiveLimit()).isEqualTo(JournalSelect.MAX_ROWS);
        assertThat(s.totalOrder()).containsExactly(new Order("created_at", true), new Order("call_id", true));
    }

    @Test
    void columnsFilterOrderAndPage() {
        JournalSelect s = parse("select call_id, State from THRESHER.\"invocations\" -- the failed ones\n"
                + " where state = 'failed' and binding <> 'x' or attempts >= 2 /* or */"
                + " order by created_at desc, call_id asc limit 10 offset 5;");
        assertThat(s.columns()).containsExactly("call_id", "state");
        assertThat(s.where()).contains(new Or(
                new And(new Compare("state", Op.EQ, new Text("failed")), new Compare("binding", Op.NE, new Text("x"))),
                new Compare("attempts", Op.GE, new Number(new BigDecimal("2")))));
        assertThat(s.orderBy()).containsExactly(new Order("created_at", true), new Order("call_id", false));
        assertThat(s.limit()).isEqualTo(OptionalLong.of(10));
        assertThat(s.offset()).isEqualTo(5);

        JournalSelect t = parse("SELECT run_index FROM thresher.shard_runs OFFSET 3 ROWS LIMIT ALL");
        assertThat(t.view()).isEqualTo(JournalView.SHARD_RUNS);
        assertThat(t.limit()).isEmpty();
        assertThat(t.offset()).isEqualTo(3);
    }

    @Test
    void theFormerNamesOfTheShardRunsViewAndItsIndexColumnAreStillRead() {
        JournalSelect old = parse("SELECT slot_index, state FROM thresher.shard_slots WHERE slot_index >= 1"
                + " ORDER BY slot_index DESC");
        assertThat(old.view()).isEqualTo(JournalView.SHARD_RUNS);
        assertThat(old.columns()).containsExactly("slot_index", "state");
        assertThat(old.resolvedColumns().get(0).name()).as("answered under the name the query used")
                .isEqualTo("slot_index");
        assertThat(old.resolvedColumns().get(0).type())
                .isEqualTo(JournalView.SHARD_RUNS.column("run_index").orElseThrow().type());
        assertThat(old.where()).contains(new Compare("slot_index", Op.GE, new Number(new BigDecimal("1"))));
        assertThat(parse("SELECT * FROM \"thresher\".\"shard_slots\"").columns())
                .as("* answers the columns' names of now").contains("run_index").doesNotContain("slot_index");
        assertThatThrownBy(() -> parse("SELECT slot_index FROM thresher.invocations"))
                .isInstanceOf(ThresherException.class).hasMessageContaining("slot_index");
    }

    @Test
    void everyPredicate() {
        JournalSelect s = parse("SELECT * FROM thresher.shard_runs WHERE call_id = '" + ID + "' AND NOT (state IN"
                + " ('published', 'unpublished') OR host_id NOT LIKE 'node-%') AND error_message ILIKE '%trap%'"
                + " AND published_at IS NULL AND lease_until IS NOT NULL AND epoch NOT IN (1) AND attempts BETWEEN 1 AND 2"
                + " AND call_id LIKE '0f8e%' AND epoch != -1");
        assertThat(s.where()).contains(
                new And(new And(new And(new And(new And(new And(new And(new And(
                        new Compare("call_id", Op.EQ, new Text(ID)),
                        new Not(new Or(new In("state", List.of(new Text("published"), new Text("unpublished")), false),
                                new Like("host_id", new Text("node-%"), false, true)))),
                        new Like("error_message", new Text("%trap%"), true, false)),
                        new Null("published_at", false)),
                        new Null("lease_until", true)),
                        new In("epoch", List.of(new Number(BigDecimal.ONE)), true)),
                        new And(new Compare("attempts", Op.GE, new Number(BigDecimal.ONE)),
                                new Compare("attempts", Op.LE, new Number(new BigDecimal("2"))))),
                        new Like("call_id", new Text("0f8e%"), false, false)),
                        new Compare("epoch", Op.NE, new Number(new BigDecimal("-1")))));
        assertThat(parse("SELECT * FROM thresher.shard_runs WHERE NOT attempts BETWEEN 1 AND 2").where())
                .contains(new Not(new And(new Compare("attempts", Op.GE, new Number(BigDecimal.ONE)),
                        new Compare("attempts", Op.LE, new Number(new BigDecimal("2"))))));
    }

    @Test
    void timesAreLiteralsOrNowMovedByAnInterval() {
        assertThat(where("created_at > now() - interval '1 hour'"))
                .isEqualTo(new Compare("created_at", Op.GT, new Now(-3_600_000_000L)));
        assertThat(where("created_at >= CURRENT_TIMESTAMP - '1 day 2 hours 30 minutes'::interval + interval '10s'"))
                .isEqualTo(new Compare("created_at", Op.GE, new Now(-(86_400L + 7_200 + 1_800 - 10) * 1_000_000L)));
        assertThat(where("created_at > now() - interval '00:30:00' - interval 'PT1H' - interval '1.5 ms'"))
                .isEqualTo(new Compare("created_at", Op.GT, new Now(-(1_800_000_000L + 3_600_000_000L + 1_500))));
        assertThat(where("created_at < '2025-01-31 09:15:02.5+00'"))
                .isEqualTo(new Compare("created_at", Op.LT, new Text("2025-01-31 09:15:02.5+00")));
        assertThat(where("created_at < timestamptz '2025-01-31T10:15:00+01:00' + interval '1 minute'"))
                .isEqualTo(new Compare("created_at", Op.LT, new Timestamp(Instant.parse("2025-01-31T09:16:00Z"))));
        assertThat(where("finished_at < '2025-01-31'::timestamp with time zone"))
                .isEqualTo(new Compare("finished_at", Op.LT, new Timestamp(Instant.parse("2025-01-31T00:00:00Z"))));
        assertThat(where("deadline_at <= '2025-01-31 09:15:00' - interval '1 week'"))
                .isEqualTo(new Compare("deadline_at", Op.LE, new Timestamp(Instant.parse("2025-01-24T09:15:00Z"))));
    }

    @Test
    void stringsReadAsTheirColumnsTypeAndCastsAreChecked() {
        assertThat(where("attempts = '2'")).isEqualTo(new Compare("attempts", Op.EQ, new Text("2")));
        assertThat(where("call_id = '" + ID + "'::uuid")).isEqualTo(new Compare("call_id", Op.EQ, new Text(ID)));
        assertThat(where("attempts = '2'::int")).isEqualTo(new Compare("attempts", Op.EQ, new Number(new BigDecimal("2"))));
        assertThat(where("binding = $$it's$$::text")).isEqualTo(new Compare("binding", Op.EQ, new Text("it's")));
        assertThat(where("binding = 'O''Brien'")).isEqualTo(new Compare("binding", Op.EQ, new Text("O'Brien")));
        assertThat(where("duration_ms > 1.5e3")).isEqualTo(new Compare("duration_ms", Op.GT, new Number(new BigDecimal("1.5e3"))));
    }

    @Test
    void parametersTakeTheirColumnsTypeAndAreBoundLater() {
        JournalSelect s = parse("SELECT call_id FROM thresher.invocations WHERE state = $1 AND created_at > $2"
                + " AND attempts IN ($3, $3) AND binding LIKE $4");
        assertThat(s.parameterTypes()).isEqualTo(Map.of(1, JournalType.TEXT, 2, JournalType.TIMESTAMPTZ,
                3, JournalType.INT4, 4, JournalType.TEXT));
        assertThat(new ParsedStatement.Select(s).parameterCount()).isEqualTo(4);
        JournalSelect bound = s.bind(List.of(new Text("failed"), new Text("2025-01-31T00:00:00Z"), new Text("1"),
                new Text("rev%")));
        assertThat(bound.hasParameters()).isFalse();
        assertThat(bound.where().orElseThrow().toString()).contains("Text[value=failed]").doesNotContain("Parameter");
        assertFails(() -> s.bind(List.of(new Text("failed"), new Text("soon"), new Text("1"), new Text("x"))),
                ErrorCode.INVALID_ARGUMENTS, "22023");
        assertFails(() -> s.bind(java.util.Arrays.asList(null, new Text("2025-01-31"), new Text("1"), new Text("x"))),
                ErrorCode.INVALID_ARGUMENTS, "22023");
        assertThat(where("state = $1::text")).isEqualTo(new Compare("state", Op.EQ, new Parameter(1)));
    }

    @Test
    void showCallsAndSelectsAreStatementsOfTheQueryParser() {
        List<ParsedStatement> script = CallStatementParser.parseScript(
                "SHOW CALLS; select state from thresher.invocations where binding = 'a;b'; SHOW calls");
        assertThat(script).hasSize(3);
        assertThat(script.get(0)).isEqualTo(new ParsedStatement.Select(JournalSqlParser.showCalls()));
        assertThat(((ParsedStatement.Select) script.get(1)).select().where())
                .contains(new Compare("binding", Op.EQ, new Text("a;b")));
        JournalSelect calls = JournalSqlParser.showCalls();
        assertThat(calls.columns()).containsExactlyElementsOf(JournalSqlParser.SHOW_CALLS_COLUMNS);
        assertThat(calls.limit()).isEqualTo(OptionalLong.of(JournalSqlParser.SHOW_CALLS_LIMIT));
        assertThat(CallStatementParser.parse("SELECT * FROM thresher.invocations WHERE attempts > $2"))
                .isInstanceOfSatisfying(ParsedStatement.Select.class, p -> assertThat(p.parameterCount()).isEqualTo(2));
        // SHOW of a parameter named like it is not SHOW CALLS
        assertThat(CallStatementParser.parse("SHOW calls.x")).isEqualTo(new ParsedStatement.Show("calls.x"));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT 2 + 2",
        "SELECT now()",
        "select * from t",
        "SELECT * FROM invocations",
        "SELECT * FROM public.invocations",
        "SELECT * FROM thresher.journal",
        "SELECT * FROM thresher.topology_changes",
        "SELECT * FROM thresher.invocations.x",
        "SELECT * FROM pg_catalog.pg_type",
        "SELECT count(*) FROM thresher.invocations",
        "SELECT DISTINCT state FROM thresher.invocations",
        "SELECT state AS s FROM thresher.invocations",
        "SELECT state s FROM thresher.invocations",
        "SELECT i.state FROM thresher.invocations i",
        "SELECT state FROM thresher.invocations i",
        "SELECT state FROM thresher.invocations AS i",
        "SELECT *, state FROM thresher.invocations",
        "SELECT attempts + 1 FROM thresher.invocations",
        "SELECT state::text FROM thresher.invocations",
        "SELECT * FROM thresher.invocations, thresher.shard_runs",
        "SELECT * FROM thresher.invocations JOIN thresher.shard_runs USING (call_id)",
        "SELECT state FROM thresher.invocations GROUP BY state",
        "SELECT state FROM thresher.invocations UNION SELECT state FROM thresher.shard_runs",
        "SELECT * FROM thresher.invocations FOR UPDATE",
        "SELECT * FROM thresher.invocations FETCH FIRST 1 ROWS ONLY",
        "SELECT * FROM thresher.invocations WHERE state = binding",
        "SELECT * FROM thresher.invocations WHERE state = \"binding\"",
        "SELECT * FROM thresher.invocations WHERE 'failed' = state",
        "SELECT * FROM thresher.invocations WHERE 1 = 1",
        "SELECT * FROM thresher.invocations WHERE true",
        "SELECT * FROM thresher.invocations WHERE lower(state) = 'x'",
        "SELECT * FROM thresher.invocations WHERE state = lower('X')",
        "SELECT * FROM thresher.invocations WHERE attempts + 1 > 2",
        "SELECT * FROM thresher.invocations WHERE attempts > 1 + 1",
        "SELECT * FROM thresher.invocations WHERE state || 'x' = 'y'",
        "SELECT * FROM thresher.invocations WHERE call_id IN (SELECT call_id FROM thresher.shard_runs)",
        "SELECT * FROM thresher.invocations WHERE EXISTS (SELECT 1)",
        "SELECT * FROM thresher.invocations WHERE (state, binding) = ('a', 'b')",
        "SELECT * FROM thresher.invocations WHERE state = NULL",
        "SELECT * FROM thresher.invocations WHERE state IS TRUE",
        "SELECT * FROM thresher.invocations WHERE state IS DISTINCT FROM 'x'",
        "SELECT * FROM thresher.invocations WHERE state SIMILAR TO 'x'",
        "SELECT * FROM thresher.invocations WHERE state LIKE 'x' ESCAPE '!'",
        "SELECT * FROM thresher.invocations WHERE attempts LIKE '1%'",
        "SELECT * FROM thresher.invocations WHERE result = '{}'",
        "SELECT * FROM thresher.invocations WHERE result IN ('{}')",
        "SELECT * FROM thresher.invocations WHERE state ~ 'x'",
        "SELECT * FROM thresher.invocations WHERE created_at > interval '1 hour'",
        "SELECT * FROM thresher.invocations WHERE state = E'x'",
        "SELECT * FROM thresher.invocations WHERE state = 'x'::json",
        "SELECT * FROM thresher.invocations ORDER BY 1",
        "SELECT * FROM thresher.invocations ORDER BY result",
        "SELECT * FROM thresher.invocations ORDER BY created_at NULLS FIRST",
        "SELECT * FROM thresher.invocations LIMIT $1",
        "WITH x AS (SELECT 1) SELECT * FROM thresher.invocations",
        "SELECT * FROM thresher.invocations; DELETE FROM invocations",
    })
    void whatIsNotServedIsRefusedAsUnsupported(String sql) {
        assertFails(() -> CallStatementParser.parseScript(sql), ErrorCode.UNSUPPORTED_STATEMENT, "0A000");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "SELECT tenant FROM thresher.invocations",
        "SELECT * FROM thresher.invocations WHERE tenant = 'other'",
        "SELECT * FROM thresher.invocations WHERE tenant = 'other' OR 1=1",
        "SELECT * FROM thresher.invocations WHERE state = 'x' OR tenant <> ''",
        "SELECT * FROM thresher.shard_runs WHERE \"State\" = 'x'",
        "SELECT * FROM thresher.invocations ORDER BY nope",
        "SELECT partials FROM thresher.shard_runs",
        "SELECT result_json FROM thresher.invocations",
    })
    void anUnknownColumnIsUndefinedColumn(String sql) {
        assertFails(() -> JournalSqlParser.parse(sql), ErrorCode.UNKNOWN_COLUMN, "42703");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT",
        "SELECT * FROM",
        "SELECT * FROM thresher.",
        "SELECT * FROM thresher.invocations WHERE",
        "SELECT * FROM thresher.invocations WHERE state",
        "SELECT * FROM thresher.invocations WHERE state =",
        "SELECT * FROM thresher.invocations WHERE (state = 'x'",
        "SELECT * FROM thresher.invocations WHERE state = 'x",
        "SELECT * FROM thresher.invocations WHERE state IN ()",
        "SELECT * FROM thresher.invocations WHERE state IS 'x'",
        "SELECT * FROM thresher.invocations WHERE state = 'x' AND",
        "SELECT * FROM thresher.invocations LIMIT -1",
        "SELECT * FROM thresher.invocations LIMIT 1.5",
        "SELECT * FROM thresher.invocations LIMIT 1 LIMIT 2",
        "SELECT * FROM thresher.invocations ORDER BY",
        "SELECT * FROM thresher.invocations ORDER created_at",
        "SELECT * FROM thresher.invocations LIMIT 1 WHERE state = 'x'",
        "SELECT state, FROM thresher.invocations",
        "SELECT * FROM thresher.invocations /* unterminated",
    })
    void malformedTextIsASyntaxError(String sql) {
        assertFails(() -> JournalSqlParser.parse(sql), ErrorCode.SYNTAX_ERROR, "42601");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "attempts = 'abc'",
        "attempts = 1.5e",
        "created_at > 'yesterday'",
        "created_at > 5",
        "call_id = 'not-a-uuid'",
        "call_id = 'abc'::uuid",
        "state = 5",
        "state = now()",
        "created_at > now() - interval '1 month'",
        "created_at > now() - interval 'soon'",
        "attempts IN (1, 'x')",
    })
    void aLiteralItsColumnDoesNotReadIsAnInvalidArgument(String condition) {
        assertFails(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations WHERE " + condition),
                condition.equals("attempts = 1.5e") ? ErrorCode.SYNTAX_ERROR : ErrorCode.INVALID_ARGUMENTS,
                condition.equals("attempts = 1.5e") ? "42601" : "22023");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "attempts > 1e131072",
        "attempts < -9223372036854775809",
        "attempts = '99999999999999999999'",
        "duration_ms >= 9.3e18",
    })
    void aNumberPastBigintIsOutOfRangeNeverAnAnswer(String condition) {
        // compared as it is, it would match every row or none
        assertFails(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations WHERE " + condition)
                .bind(List.of()), ErrorCode.NUMBER_OUT_OF_RANGE, "22003");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "created_at > now() - interval '99999999999999 days'",
        "created_at > now() - interval '9223372036854775807 hours'",
        "created_at > now() + interval '110000000 days'",
        "created_at > now() - interval '3000000 days'",
        "created_at > now() - interval '9223372036854775807:00'",
        "created_at > now() - interval 'PT9223372036854775807H'",
        "created_at > now() - interval '5000000 weeks' - interval '5000000 weeks'",
        "created_at < '2025-01-01'::timestamptz + interval '110000000 days'",
    })
    void anIntervalOrTimestampPastWhatItHoldsIsOutOfRange(String condition) {
        assertFails(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations WHERE " + condition),
                ErrorCode.DATETIME_OUT_OF_RANGE, "22008");
    }

    @Test
    void aLimitPastBigintIsOutOfRange() {
        assertFails(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations LIMIT 99999999999999999999"),
                ErrorCode.NUMBER_OUT_OF_RANGE, "22003");
    }

    @Test
    void theTenantIsNoColumnSoNoFilterNamesIt() {
        // what would reach another tenant's rows is refused before anything runs: there is no tenant column, no
        // literal-only condition, no subquery, no second statement in a prepared one, no comment that ends the query
        for (String sql : List.of(
                "SELECT * FROM thresher.invocations WHERE tenant = 'other' OR 1=1",
                "SELECT * FROM thresher.invocations WHERE 1=1 OR tenant = 'other'",
                "SELECT * FROM thresher.invocations WHERE state = 'x' OR true",
                "SELECT * FROM thresher.invocations WHERE call_id IN (SELECT call_id FROM invocations)",
                "SELECT * FROM thresher.invocations WHERE state = 'x' -- AND tenant = 'acme'\n OR 'a' = 'a'")) {
            assertThatThrownBy(() -> JournalSqlParser.parse(sql)).as(sql).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isIn(ErrorCode.UNKNOWN_COLUMN, ErrorCode.UNSUPPORTED_STATEMENT));
        }
        assertFails(() -> CallStatementParser.parse("SELECT * FROM thresher.invocations; SELECT * FROM thresher.invocations"),
                ErrorCode.UNSUPPORTED_STATEMENT, "0A000");
        // a quote inside a string is part of the value: one text literal, bound as one parameter
        assertThat(where("state = 'x'' OR tenant = ''other'")).isEqualTo(new Compare("state", Op.EQ,
                new Text("x' OR tenant = 'other")));
    }

    @Test
    void messagesNameWhatIsNotServedAndWhere() {
        assertThatThrownBy(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations GROUP BY state"))
                .hasMessageContaining("GROUP is not supported (position 36)");
        assertThatThrownBy(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations WHERE tenant = 'x'"))
                .hasMessageContaining("column \"tenant\" does not exist in thresher.invocations (position 42)")
                .hasMessageContaining("call_id, binding");
        assertThatThrownBy(() -> JournalSqlParser.parse("SELECT * FROM thresher.nope"))
                .hasMessageContaining("relation thresher.nope is not served")
                .hasMessageContaining("thresher.invocations and thresher.shard_runs");
        assertThatThrownBy(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations WHERE attempts = 'x'"))
                .hasMessageContaining("column attempts is integer: 'x' is not an integer");
    }

    @Test
    void theFilterIsBoundedInSizeAndDepthBeforeItIsBuilt() {
        int most = JournalSqlParser.MAX_CONDITIONS;
        int deepest = JournalSqlParser.MAX_NESTING;
        assertThat(where("state = 'x' OR ".repeat(most - 1) + "state = 'x'")).isInstanceOf(JournalSelect.Or.class);
        assertThat(where("(".repeat(deepest) + "state = 'x'" + ")".repeat(deepest))).isInstanceOf(Compare.class);
        assertThat(where("NOT ".repeat(deepest) + "state = 'x'")).isInstanceOf(JournalSelect.Not.class);
        // BETWEEN is one condition; each NOT and parenthesis one level, closed ones no longer count
        assertThat(where("(attempts BETWEEN 1 AND 2) AND ".repeat(most - 1) + "(state = 'x')"))
                .isInstanceOf(JournalSelect.And.class);
        // one more is refused before the tree is built: a deep one would overflow the stack where it is walked
        assertFails(() -> where("state = 'x' OR ".repeat(most) + "state = 'x'"), ErrorCode.UNSUPPORTED_STATEMENT, "0A000");
        assertFails(() -> where("(".repeat(deepest + 1) + "state = 'x'" + ")".repeat(deepest + 1)),
                ErrorCode.UNSUPPORTED_STATEMENT, "0A000");
        assertFails(() -> where("NOT (".repeat(deepest / 2) + "NOT state = 'x'" + ")".repeat(deepest / 2)),
                ErrorCode.UNSUPPORTED_STATEMENT, "0A000");
        assertThatThrownBy(() -> where("NOT ".repeat(100_000) + "state = 'x'"))
                .hasMessageContaining("nested more than " + deepest + " deep");
        assertThatThrownBy(() -> where("state = 'x' AND ".repeat(100_000) + "state = 'x'"))
                .hasMessageContaining("more than " + most + " conditions");
    }

    private static JournalSelect.Filter where(String condition) {
        return parse("SELECT * FROM thresher.invocations WHERE " + condition).where().orElseThrow();
    }

    private static void assertFails(org.assertj.core.api.ThrowableAssert.ThrowingCallable call, ErrorCode code,
                                    String sqlState) {
        assertThatThrownBy(call).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).as(e.getMessage()).isEqualTo(code);
            assertThat(SqlStates.of(e.code())).isEqualTo(sqlState);
        });
    }

    @Test
    void namesAreAtMostSixtyThreeBytesAndMessagesQuoteInputCutShort() {
        assertFails(() -> JournalSqlParser.parse("SELECT \"" + "c".repeat(64) + "\" FROM thresher.invocations"),
                ErrorCode.NAME_TOO_LONG, "42622");
        assertFails(() -> JournalSqlParser.parse("SELECT * FROM " + "s".repeat(64) + ".invocations"),
                ErrorCode.NAME_TOO_LONG, "42622");
        assertThatThrownBy(() -> JournalSqlParser.parse("SELECT * FROM thresher.invocations LIMIT " + "9".repeat(10_000)))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.getMessage())
                        .contains("…(10000 bytes)").hasSizeLessThan(300));
        assertThatThrownBy(() -> JournalSqlParser.parse("SELECT \"a\u0001\nb\" FROM thresher.invocations"))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_COLUMN);
                    assertThat(e.getMessage()).contains("column \"a\\x01\\nb\" does not exist");
                });
    }

    @Test
    void aQueryIsCheckedWhereverItIsMade() {
        assertFails(() -> new JournalSelect(JournalView.SHARD_RUNS, List.of("tenant"), Optional.empty(), List.of(),
                OptionalLong.empty(), 0), ErrorCode.UNKNOWN_COLUMN, "42703");
        assertFails(() -> new JournalSelect(JournalView.SHARD_RUNS, List.of("call_id"), Optional.empty(), List.of(),
                OptionalLong.of(-1), 0), ErrorCode.INVALID_ARGUMENTS, "22023");
        assertThat(new JournalSelect(JournalView.SHARD_RUNS, List.of("call_id"), Optional.empty(), List.of(),
                OptionalLong.of(5000), 0).effectiveLimit()).isEqualTo(JournalSelect.MAX_ROWS);
    }
}
