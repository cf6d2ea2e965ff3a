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
}
