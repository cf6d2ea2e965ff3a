package dev.thresher.bindings;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SelectorTest {
    @Test
    void plainSingleTableSelect() {
        Selector s = Selector.parse("SELECT region, amount FROM orders");
        assertThat(s.table()).isEqualTo("orders");
        assertThat(s.columns()).containsExactly("region", "amount");
        assertThat(s.where()).isEmpty();
    }

    @Test
    void whereIsKeptAndIdentifiersAreNormalised() {
        Selector s = Selector.parse("select Region, \"Amount\" from Orders where amount > 10 and region <> 'x'");
        assertThat(s.table()).isEqualTo("orders");
        assertThat(s.columns()).containsExactly("region", "Amount");
        assertThat(s.where()).contains("amount > 10 AND region <> 'x'");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT * FROM orders",
        "SELECT region FROM orders o JOIN customers c ON o.id = c.id",
        "SELECT region, sum(amount) FROM orders GROUP BY region",
        "SELECT region FROM orders ORDER BY region",
        "SELECT region FROM orders LIMIT 5",
        "SELECT DISTINCT region FROM orders",
        "SELECT region FROM orders UNION SELECT region FROM returns",
        "SELECT region FROM (SELECT region FROM orders) t",
        "SELECT region FROM orders WHERE id IN (SELECT id FROM other)",
        "SELECT region AS r FROM orders",
        "SELECT region, region FROM orders",
        "SELECT region FROM public.orders",
        "DELETE FROM orders",
        "SELEKT nonsense",
        "SELECT 1"
    })
    void refusesWhatOnePartitionCannotAnswer(String sql) {
        assertThatThrownBy(() -> Selector.parse(sql))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT region FROM orders WHERE set_config('work_mem', '1MB', false) = '1MB'",
        "SELECT region FROM orders WHERE pg_sleep(1) IS NOT NULL",
        "SELECT region FROM orders WHERE nextval('s') > 0",
        "SELECT region FROM orders WHERE lower(region) = 'x'",
        "SELECT region FROM orders WHERE region = current_user",
        "SELECT region FROM orders WHERE region = CURRENT_USER",
        "SELECT region FROM orders WHERE amount > ?",
        "SELECT region FROM orders WHERE region ~ 'x'",
        "SELECT region FROM orders WHERE amount::regclass IS NULL",
        "SELECT region FROM orders WHERE CAST(amount AS my_type) IS NULL",
        "SELECT region FROM orders WHERE other.amount > 1",
        "SELECT region FROM orders WHERE CASE WHEN amount > 1 THEN true ELSE false END",
        "SELECT region FROM orders WHERE EXISTS (SELECT 1)",
        "SELECT region FROM orders; DROP TABLE orders",
        "SELECT region FROM orders;",
        "SELECT region FROM orders -- trailing comment",
        "SELECT region FROM orders /* comment */ WHERE amount > 1",
        "SELECT region FROM orders WHERE region = $$x$$",
        "SELECT region FROM orders WHERE region = E'\\x'",
        "SELECT region FROM orders WHERE region = 'a\\'",
        "SELECT region FROM orders WHERE region = 'not closed",
        "SELECT \"region FROM orders",
        "SELECT region FROM orders WHERE region LIKE 'x' ESCAPE '!' OR region SIMILAR TO 'x'",
        "SELECT region FROM orders WHERE amount = ANY (SELECT 1)"
    })
    void theFilterIsAnAllowList(String sql) {
        assertThatThrownBy(() -> Selector.parse(sql))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR));
    }

    @Test
    void theAllowListKeepsTheUsualFilters() {
        Selector s = Selector.parse("SELECT region, amount FROM orders WHERE amount BETWEEN 1 AND 2 AND region IN ('a', 'b')"
                + " AND NOT (amount IS NULL) OR region ILIKE 'x%' AND amount::float8 > -1.5"
                + " AND CAST(amount AS bigint) % 2 = 0 AND orders.amount <> 3 AND region IS NOT NULL"
                + " AND region IS DISTINCT FROM 'y' AND (amount > 1) IS TRUE");
        assertThat(s.where()).contains("amount BETWEEN 1 AND 2 AND region IN ('a', 'b') AND NOT (amount IS NULL)"
                + " OR region ILIKE 'x%' AND amount::float8 > -1.5 AND CAST(amount AS bigint) % 2 = 0"
                + " AND amount <> 3 AND region IS NOT NULL AND region IS DISTINCT FROM 'y' AND (amount > 1) IS TRUE");
    }

    @Test
    void aColumnQualifiedByItsTableIsReadUnqualifiedSoItCannotCallAFunctionOnTheRow() {
        // kills: Selector.unqualify (PostgreSQL reads orders.row_to_json, with no such column, as row_to_json(orders))
        Selector s = Selector.parse("SELECT region FROM orders WHERE orders.row_to_json IS NOT NULL AND \"orders\".amount > 1");
        assertThat(s.where()).contains("row_to_json IS NOT NULL AND amount > 1");
    }

    @Test
    void aSelectorThatWouldTakeTheParserLongIsRefusedAtItsBound() {
        // balanced and shallow, yet the parser's second pass backtracks exponentially in it (found by SelectorFuzzTest)
        assertThatThrownBy(() -> Selector.parse("SELECT r((((((((('a')))))))) FROM t"))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR);
                    assertThat(e.getMessage()).contains("too complex to parse within " + Selector.PARSE_TIMEOUT_MS + " ms");
                });
    }

    @Test
    void parenthesesNestedPastTheBoundAreRefusedBeforeTheParserRuns() {
        String deep = "SELECT region FROM orders WHERE " + "(".repeat(WhereAllowList.MAX_NESTING) + "amount > 1"
                + ")".repeat(WhereAllowList.MAX_NESTING);
        assertThat(Selector.parse(deep).where()).isPresent();
        String deeper = "SELECT region FROM orders WHERE " + "(".repeat(200) + "amount > 1" + ")".repeat(200);
        assertThatThrownBy(() -> Selector.parse(deeper)).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR);
            assertThat(e.getMessage()).contains("nest more than " + WhereAllowList.MAX_NESTING).hasSizeLessThan(300);
        });
    }

    @Test
    void quotedTextMayHoldWhatTheLexicalCheckRefusesOutsideIt() {
        Selector s = Selector.parse("SELECT region FROM orders WHERE region = 'it''s; -- /* $1 */' AND \"amount;--\" > 0");
        assertThat(s.where()).contains("region = 'it''s; -- /* $1 */' AND \"amount;--\" > 0");
    }

    @Test
    void longSelectorsAreRefused() {
        String sql = "SELECT region FROM orders WHERE " + "amount > 0 AND ".repeat(Selector.MAX_LENGTH / 15) + "true";
        assertThatThrownBy(() -> Selector.parse(sql))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR);
                    assertThat(e.getMessage()).contains("characters long");
                });
    }
}
