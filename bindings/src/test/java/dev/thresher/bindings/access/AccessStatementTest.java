package dev.thresher.bindings.access;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ThresherException;
import org.junit.jupiter.api.Test;

class AccessStatementTest {
    @Test
    void parsesUsersAndGrants() {
        assertThat(AccessStatement.parse("CREATE USER ann WITH PASSWORD 'it''s long enough';"))
                .isInstanceOfSatisfying(AccessStatement.CreateUser.class, c -> {
                    assertThat(c.name()).isEqualTo("ann");
                    assertThat(c.password().text()).isEqualTo("it's long enough");
                });
        assertThat(AccessStatement.parse("create role \"Bob\" login password 'abcdefgh'"))
                .isEqualTo(new AccessStatement.CreateUser("Bob", new AccessStatement.Password("abcdefgh")));
        assertThat(AccessStatement.parse("GRANT CALL ON BINDING revenue_by_region TO ann"))
                .isEqualTo(new AccessStatement.GrantTo(Grant.call("revenue_by_region"), "ann"));
        assertThat(AccessStatement.parse("grant call on all bindings to ann"))
                .isEqualTo(new AccessStatement.GrantTo(Grant.callAll(), "ann"));
        assertThat(AccessStatement.parse("GRANT deploy TO ann")).isEqualTo(new AccessStatement.GrantTo(Grant.of(Privilege.DEPLOY), "ann"));
        assertThat(AccessStatement.parse("REVOKE ADMIN FROM ann")).isEqualTo(new AccessStatement.RevokeFrom(Grant.of(Privilege.ADMIN), "ann"));
        assertThat(AccessStatement.parse("DROP USER IF EXISTS ann")).isEqualTo(new AccessStatement.DropUser("ann", true));
        assertThat(AccessStatement.parse("ALTER USER ann PASSWORD 'SCRAM-SHA-256$4096:c2FsdHNhbHRzYWx0c2FsdA==$"
                + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='"))
                .isInstanceOfSatisfying(AccessStatement.AlterPassword.class,
                        a -> assertThat(a.password().verifier().iterations()).isEqualTo(4096));
        assertThat(AccessStatement.matches("  grant call on binding x to y")).isTrue();
        assertThat(AccessStatement.matches("CREATE TABLE t (a int)")).isFalse();
    }

    @Test
    void refusesWhatItDoesNotKnowWithoutEchoingIt() {
        assertThatThrownBy(() -> AccessStatement.parse("GRANT SELECT ON t TO ann")).isInstanceOf(ThresherException.class);
        assertThatThrownBy(() -> AccessStatement.parse("CREATE USER ann")).hasMessageContaining("PASSWORD");
        // parsed; the length is checked when the verifier is made
        assertThat(AccessStatement.parse("CREATE USER ann PASSWORD 'short'")).isInstanceOf(AccessStatement.CreateUser.class);
        String longName = "u".repeat(10_000);
        assertThatThrownBy(() -> AccessStatement.parse("DROP USER " + longName))
                .isInstanceOf(ThresherException.class)
                .satisfies(e -> assertThat(e.getMessage().length()).isLessThan(200));
        assertThatThrownBy(() -> AccessStatement.parse("GRANT ADMIN TO ann; DROP USER bob")).isInstanceOf(ThresherException.class);
        assertThatThrownBy(() -> new AccessStatement.Password("short").verifier()).hasMessageContaining("at least 8");
    }
}
