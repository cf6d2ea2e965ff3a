package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Prepared statements and portals: their bounds by count and by bytes, and what closing one closes. */
class PgStatementsTest {
    private static final String SQL = "SHOW application_name";

    private static PgStatements store(int count, long bytes) {
        return new PgStatements(Limits.fromProperties(Map.of("limits.pgwireStatementsPerConnection",
                Integer.toString(count), "limits.pgwireStatementBytesPerConnection", Long.toString(bytes))));
    }

    private static PgStatements.Prepared prepare(PgStatements store, String name) {
        return store.prepare(name, SQL, CallStatementParser.parse(SQL), List.of());
    }

    private static void bind(PgStatements store, String portal, PgStatements.Prepared prepared, byte[]... values) {
        store.bind(portal, prepared, null, (short) 0, null, null, java.util.Arrays.asList(values));
    }

    @Test
    void closingAStatementClosesThePortalsBoundFromIt() {
        PgStatements store = store(10, 10_000);
        PgStatements.Prepared a = prepare(store, "a");
        PgStatements.Prepared b = prepare(store, "b");
        bind(store, "pa", a);
        bind(store, "pb", b);
        assertThat(store.closeStatement("a")).isTrue();
        assertThat(store.closeStatement("a")).isFalse();
        assertThat(store.portal("pa")).isNull();
        assertThat(store.portal("pb")).isNotNull();
        assertThat(store.statement("b")).isSameAs(b);
    }

    @Test
    void droppingTheUnnamedStatementLeavesItsPortals() {
        PgStatements store = store(10, 10_000);
        PgStatements.Prepared unnamed = prepare(store, "");
        bind(store, "", unnamed);
        store.dropUnnamed();
        assertThat(store.hasStatement("")).isFalse();
        assertThat(store.portal("").prepared()).isSameAs(unnamed);
    }

    @Test
    void portalsRunOnceAndCloseWithTheTransaction() {
        PgStatements store = store(10, 10_000);
        PgStatements.Prepared a = prepare(store, "a");
        bind(store, "p", a);
        assertThat(store.portal("p").executed()).isFalse();
        store.ran("p", store.portal("p"));
        assertThat(store.portal("p").executed()).isTrue();
        store.closePortals();
        assertThat(store.portal("p")).isNull();
        assertThat(store.statement("a")).isSameAs(a);
        store.closeAll();
        assertThat(store.statement("a")).isNull();
    }

    @Test
    void statementsAndPortalsAreBoundedByCount() {
        PgStatements store = store(2, 10_000);
        PgStatements.Prepared a = prepare(store, "a");
        prepare(store, "b");
        assertThatThrownBy(() -> prepare(store, "c")).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_PREPARED_STATEMENTS);
            assertThat(e.getMessage()).isEqualTo("this connection holds 2 prepared statements;"
                    + " limits.pgwireStatementsPerConnection is 2 (close some)");
        });
        bind(store, "p1", a);
        bind(store, "p2", a);
        bind(store, "p2", a); // replacing one is no more
        assertThatThrownBy(() -> bind(store, "p3", a)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).isEqualTo("this connection holds 2 portals;"
                        + " limits.pgwireStatementsPerConnection is 2 (close some)"));
    }

    @Test
    void namesTextAndBoundValuesAreBoundedByBytes() {
        long statementBytes = 1 + SQL.length();
        PgStatements store = store(10, statementBytes + 3 + 10);
        PgStatements.Prepared a = prepare(store, "a");
        assertThat(store.heldBytes()).isEqualTo(statementBytes);
        bind(store, "pé", a, "0123456789".getBytes(StandardCharsets.UTF_8), null); // "pé" is three bytes
        assertThat(store.heldBytes()).isEqualTo(statementBytes + 3 + 10);
    }

    @Test
    void aPortalReplacedCountsOnlyOnce() {
        long statementBytes = 1 + SQL.length();
        PgStatements store = store(10, statementBytes + 1 + 10);
        PgStatements.Prepared a = prepare(store, "a");
        bind(store, "p", a, new byte[10]);
        bind(store, "p", a, new byte[10]);
        assertThatThrownBy(() -> bind(store, "p", a, new byte[11])).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).isEqualTo("this connection's prepared statements and portals hold "
                        + statementBytes + " bytes; a portal of 12 bytes more would pass"
                        + " limits.pgwireStatementBytesPerConnection (" + (statementBytes + 11) + "; close some)"));
        assertThatThrownBy(() -> prepare(store, "b")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_PREPARED_STATEMENTS));
    }
}
