package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.InsertCommand;
import dev.thresher.bindings.InsertCommand.Value;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The INSERT grammar: what it reads into a command, and what it refuses with which code. */
class InsertGrammarTest {
    private static Value text(String t) {
        return new Value.Text(t);
    }

    private static InsertCommand parse(String sql) {
        return InsertGrammar.parse(sql);
    }

    @Test
    void literalsOfEveryFormAreKeptAsTheTextTheColumnReads() {
        InsertCommand i = parse("insert into Sales (Sale_Id, \"Region\", amount, ok, note, raw) values "
                + "(1, 'it''s', -2.5e3, TRUE, E'tab\\there \\x41', $$dollar 'q'$$),"
                + " (+7, 'x'::text, CAST('3' AS double precision), false, NULL, int8 '5')");
        assertThat(i.table()).isEqualTo("sales");
        assertThat(i.columns()).containsExactly("sale_id", "Region", "amount", "ok", "note", "raw");
        assertThat(i.rows()).containsExactly(
                List.of(text("1"), text("it's"), text("-2.5e3"), text("true"), text("tab\there A"), text("dollar 'q'")),
                List.of(text("7"), text("x"), text("3"), text("false"), Value.NULL, text("5")));
        assertThat(i.parameterCount()).isZero();
    }

    @Test
    void aPublicQualifierAndCastsWithModifiersAndArraysAreRead() {
        InsertCommand i = parse("INSERT INTO public.t VALUES ('a'::varchar(10), '{1}'::int[], '1'::numeric(10, 2))");
        assertThat(i.table()).isEqualTo("t");
        assertThat(i.rows().get(0)).containsExactly(text("a"), text("{1}"), text("1"));
    }

    @Test
    void parametersAreBoundByNumberAndAMissingOneIsRefused() {
        InsertCommand i = parse("INSERT INTO t VALUES ($2, $1, '$1'), ($1::int, NULL, $2)");
        assertThat(i.parameterCount()).isEqualTo(2);
        InsertCommand bound = i.bind(Arrays.asList("a", null));
        assertThat(bound.rows()).containsExactly(List.of(Value.NULL, text("a"), text("$1")),
                List.of(text("a"), Value.NULL, Value.NULL));
        assertThatThrownBy(() -> i.bind(List.of("only one"))).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
    }

    @Test
    void whatIsNoLiteralIsRefusedNamingItsRowAndValue() {
        for (String[] c : new String[][] {
                {"INSERT INTO t VALUES (1, now())", "row 1, value 2", "'now()'"},
                {"INSERT INTO t VALUES (1), (2 + 3)", "row 2, value 1", "'2 + 3'"},
                {"INSERT INTO t VALUES (other_column)", "row 1, value 1", "'other_column'"},
                {"INSERT INTO t VALUES (DEFAULT)", "row 1, value 1", "'DEFAULT'"},
                {"INSERT INTO t VALUES ((1))", "row 1, value 1", "'(1)'"}}) {
            assertThatThrownBy(() -> parse(c[0])).as(c[0]).isInstanceOfSatisfying(ThresherException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT);
                assertThat(e.getMessage()).startsWith(c[1] + ": " + InsertGrammar.LITERALS).endsWith(c[2]);
            });
        }
    }

    @Test
    void theFormsNotServedAreRefusedWithWhatIs() {
        assertThatThrownBy(() -> parse("INSERT INTO t SELECT * FROM u")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).contains("INSERT ... SELECT is not served"));
        assertThatThrownBy(() -> parse("INSERT INTO t DEFAULT VALUES")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT));
        for (String tail : List.of("RETURNING *", "ON CONFLICT DO NOTHING")) {
            assertThatThrownBy(() -> parse("INSERT INTO t VALUES (1) " + tail)).as(tail)
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT);
                        assertThat(e.getMessage()).contains("RETURNING and ON CONFLICT are not served");
                    });
        }
        assertThatThrownBy(() -> parse("INSERT INTO other.t VALUES (1)")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).isEqualTo("tables live in the public schema, not other"));
    }

    @Test
    void textThatIsNoInsertIsASyntaxErrorAtItsPosition() {
        for (String[] c : new String[][] {
                {"INSERT t VALUES (1)", "position 8: expected INTO, found 't'"},
                {"INSERT INTO t VALUES (1", "expected ')', found the end of the statement"},
                {"INSERT INTO t VALUES (1) extra", "unexpected 'extra' after the rows"},
                {"INSERT INTO t VALUES", "expected '(', found the end of the statement"},
                {"INSERT INTO t VALUES ('open", "unterminated quoted string"},
                {"INSERT INTO (a) VALUES (1)", "expected a table name, found '('"}}) {
            assertThatThrownBy(() -> parse(c[0])).as(c[0]).isInstanceOfSatisfying(ThresherException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.SYNTAX_ERROR);
                assertThat(e.getMessage()).contains(c[1]);
            });
        }
        assertThatThrownBy(() -> parse("INSERT INTO t VALUES (E'\\xff')")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_TEXT_ENCODING));
    }
}
