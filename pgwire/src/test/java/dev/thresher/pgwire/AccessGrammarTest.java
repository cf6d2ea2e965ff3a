package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.access.AccessStatement;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.errors.ThresherException;
import org.junit.jupiter.api.Test;

class AccessGrammarTest {
    @Test
    void parsesUsersAndGrants() {
        assertThat(AccessGrammar.parse("CREATE USER ann WITH PASSWORD 'it''s long enough';"))
                .isInstanceOfSatisfying(AccessStatement.CreateUser.class, c -> {
                    assertThat(c.name()).isEqualTo("ann");
                    assertThat(c.password().text()).isEqualTo("it's long enough");
                });
        assertThat(AccessGrammar.parse("create role \"Bob\" login password 'abcdefgh'"))
                .isEqualTo(new AccessStatement.CreateUser("Bob", new AccessStatement.Password("abcdefgh")));
        assertThat(AccessGrammar.parse("GRANT CALL ON BINDING revenue_by_region TO ann"))
                .isEqualTo(new AccessStatement.GrantTo(Grant.call("revenue_by_region"), "ann"));
        assertThat(AccessGrammar.parse("grant call on all bindings to ann"))
                .isEqualTo(new AccessStatement.GrantTo(Grant.callAll(), "ann"));
        assertThat(AccessGrammar.parse("GRANT deploy TO ann")).isEqualTo(new AccessStatement.GrantTo(Grant.of(Privilege.DEPLOY), "ann"));
        assertThat(AccessGrammar.parse("REVOKE ADMIN FROM ann")).isEqualTo(new AccessStatement.RevokeFrom(Grant.of(Privilege.ADMIN), "ann"));
        assertThat(AccessGrammar.parse("DROP USER IF EXISTS ann")).isEqualTo(new AccessStatement.DropUser("ann", true));
        assertThat(AccessGrammar.parse("ALTER USER ann PASSWORD 'SCRAM-SHA-256$4096:c2FsdHNhbHRzYWx0c2FsdA==$"
                + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='"))
                .isInstanceOfSatisfying(AccessStatement.AlterPassword.class,
                        a -> assertThat(a.password().verifier().iterations()).isEqualTo(4096));
        // which statements reach this grammar is the statement parser's choice, by their first words
        assertThat(CallStatementParser.parse("  grant call on binding x to y")).isInstanceOf(ParsedStatement.AccessStatement.class);
        assertThat(CallStatementParser.parse("CREATE TABLE t (a int)")).isInstanceOf(ParsedStatement.TableStatement.class);
    }

    @Test
    void refusesWhatItDoesNotKnowWithoutEchoingIt() {
        assertThatThrownBy(() -> AccessGrammar.parse("GRANT SELECT ON t TO ann")).isInstanceOf(ThresherException.class);
        assertThatThrownBy(() -> AccessGrammar.parse("CREATE USER ann")).hasMessageContaining("PASSWORD");
        // parsed; the length is checked when the verifier is made
        assertThat(AccessGrammar.parse("CREATE USER ann PASSWORD 'short'")).isInstanceOf(AccessStatement.CreateUser.class);
        String longName = "u".repeat(10_000);
        assertThatThrownBy(() -> AccessGrammar.parse("DROP USER " + longName))
                .isInstanceOf(ThresherException.class)
                .satisfies(e -> assertThat(e.getMessage().length()).isLessThan(200));
        assertThatThrownBy(() -> AccessGrammar.parse("GRANT ADMIN TO ann; DROP USER bob")).isInstanceOf(ThresherException.class);
        assertThatThrownBy(() -> new AccessStatement.Password("short").verifier()).hasMessageContaining("at least 8");
    }
}
