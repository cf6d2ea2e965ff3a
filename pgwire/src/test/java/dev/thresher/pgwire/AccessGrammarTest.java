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
        assertThat(AccessGrammar.parse("GRANT ADMIN TO Ann-B /* a name with a hyphen, as before */"))
                .isEqualTo(new AccessStatement.GrantTo(Grant.of(Privilege.ADMIN), "ann-b"));
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

    /**
     * Every statement below, and variants of each, reads as the access statements' own parser read it
     * ({@link OldAccessParser}): the same statement, or a refusal with the same code. The messages of refusals
     * differ only where the old tokenizer stopped at a character it did not know ("syntax error at or near
     * character n") and the grammar now says what it expected there, and where an unterminated string or name is now
     * reported with its position.
     */
    @org.junit.jupiter.api.Test
    void readsWhatTheOldParserReadAndRefusesWhatItRefused() {
        java.util.List<String> seeds = java.util.List.of("CREATE USER ann WITH PASSWORD 'it''s long enough';",
                "create role \"Bob\" login password 'abcdefgh'", "CREATE ROLE bob PASSWORD 'abcdefghij'",
                "ALTER USER ann WITH PASSWORD 'abcdefghij'", "alter role ann password 'x'", "DROP USER ann",
                "DROP USER IF EXISTS \"A b\"", "DROP ROLE if exists ann", "GRANT CALL ON BINDING revenue TO ann",
                "grant call on all bindings to ann", "GRANT deploy TO ann-b", "REVOKE ADMIN FROM ann",
                "REVOKE CALL ON BINDING \"X\" FROM \"y\"", "GRANT SELECT ON t TO ann", "CREATE USER ann",
                "CREATE USER ann LOGIN LOGIN PASSWORD 'abcdefgh' PASSWORD 'ijklmnop'", "GRANT ADMIN TO ann; DROP USER bob",
                "GRANT ADMIN TO ann;", "GRANT ADMIN TO", "GRANT", "CREATE USER \"\" PASSWORD 'abcdefgh'",
                "DROP USER u" + "u".repeat(70), "GRANT CALL ON BINDING x_1 TO ann_2$");
        java.util.List<String> inputs = new java.util.ArrayList<>(seeds);
        String[] pieces = {" ", "'", "\"", ";", "ann", "WITH", "LOGIN", "PASSWORD", "IF", "EXISTS", "TO", "FROM", "ALL",
            "BINDINGS", "-", "_", "x1", "\u00e9"};
        java.util.Random random = new java.util.Random(31);
        for (int i = 0; i < 5_000; i++) {
            StringBuilder b = new StringBuilder(seeds.get(random.nextInt(seeds.size())));
            int at = random.nextInt(b.length() + 1);
            if (random.nextBoolean()) {
                b.insert(at, pieces[random.nextInt(pieces.length)]);
            } else if (at < b.length()) {
                b.deleteCharAt(at);
            }
            inputs.add(b.toString());
        }
        for (String sql : inputs) {
            Object before = outcome(() -> OldAccessParser.parse(sql));
            Object now = outcome(() -> AccessGrammar.parse(sql));
            if (before instanceof String refusal && refusal.contains("syntax error at or near character")) {
                assertThat(now).as(sql).isInstanceOf(String.class).asString().startsWith("SYNTAX_ERROR");
            } else if (now instanceof String refusal) { // an unterminated string or name now says where it opens
                assertThat(refusal.replaceFirst("syntax error at position \\d+: ", "")).as(sql).isEqualTo(before);
            } else {
                assertThat(now).as(sql).isEqualTo(before);
            }
        }
    }

    private static Object outcome(java.util.function.Supplier<AccessStatement> parse) {
        try {
            return parse.get();
        } catch (ThresherException e) {
            return e.code() + ": " + e.getMessage();
        }
    }
}
