package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A session's transaction state and its transitions, and the settings and reports that follow them. */
class PgSessionTest {
    private final List<BackendMessage> out = new ArrayList<>();

    private static PgSession session(Map<String, String> startup) {
        PgSession session = new PgSession(Limits.fromProperties(Map.of()));
        session.startupSettings(startup, name -> { });
        session.authenticated(new PgAuthentication.Authenticated("alice", "db", "acme"));
        return session;
    }

    private static PgSession session() {
        return session(Map.of("user", "alice"));
    }

    private static ParsedStatement.Set set(String name, String value, boolean local) {
        return new ParsedStatement.Set(name, value, local);
    }

    @Test
    void theStatusLettersFollowBeginFailCommitAndRollback() {
        PgSession s = session();
        assertThat(s.status()).isEqualTo(PgSession.TransactionStatus.IDLE);
        assertThat(s.status().letter).isEqualTo('I');
        s.fail(); // an error outside a block fails nothing
        assertThat(s.status().letter).isEqualTo('I');
        s.begin();
        assertThat(s.status().letter).isEqualTo('T');
        s.begin(); // BEGIN in a block: the block goes on
        assertThat(s.status().letter).isEqualTo('T');
        assertThat(s.commit(out::add)).isEqualTo("COMMIT");
        assertThat(s.status().letter).isEqualTo('I');
        s.begin();
        s.fail();
        assertThat(s.status().letter).isEqualTo('E');
        s.fail();
        assertThat(s.status().letter).isEqualTo('E');
        s.rollback(out::add);
        assertThat(s.status().letter).isEqualTo('I');
        assertThat(out).isEmpty();
    }

    @Test
    void aFailedBlockRefusesAllButCommitAndRollback() {
        PgSession s = session();
        ParsedStatement show = CallStatementParser.parse("SHOW application_name");
        ParsedStatement begin = CallStatementParser.parse("BEGIN");
        s.begin();
        assertThat(s.refused(show)).isNull();
        s.fail();
        assertThat(s.refused(show)).satisfies(e -> {
            assertThat(e.sqlState()).isEqualTo(SqlStates.IN_FAILED_SQL_TRANSACTION);
            assertThat(e.message()).isEqualTo("current transaction is aborted, commands ignored until end of transaction"
                    + " block");
        });
        assertThat(s.refused(begin)).isNotNull();
        assertThat(s.refused(CallStatementParser.parse("COMMIT"))).isNull();
        assertThat(s.refused(CallStatementParser.parse("ROLLBACK"))).isNull();
        s.rollback(out::add);
        assertThat(s.refused(show)).isNull();
    }

    @Test
    void commitOfAFailedBlockRollsItBack() {
        PgSession s = session();
        s.begin();
        s.set(set("application_name", "in-block", false), out::add);
        s.fail();
        assertThat(s.commit(out::add)).isEqualTo("ROLLBACK");
        assertThat(s.status().letter).isEqualTo('I');
        assertThat(s.setting("application_name")).isEmpty();
        // reported when set, and again when the rollback undid it
        assertThat(out).containsExactly(new BackendMessage.ParameterStatus("application_name", "in-block"),
                new BackendMessage.ParameterStatus("application_name", ""));
    }

    @Test
    void aCommittedSetStaysAndIsReportedOnce() {
        PgSession s = session();
        s.begin();
        s.set(set("client_encoding", "utf-8", false), out::add); // the same value under another name: no report
        s.set(set("application_name", "app", false), out::add);
        assertThat(s.commit(out::add)).isEqualTo("COMMIT");
        assertThat(s.setting("application_name")).isEqualTo("app");
        assertThat(out).containsExactly(new BackendMessage.ParameterStatus("application_name", "app"));
    }

    @Test
    void setLocalOutsideABlockWarnsAndEndsWithTheStatement() {
        PgSession s = session();
        assertThat(s.set(set("thresher.call_id_notice", "off", true), out::add)).isTrue();
        assertThat(out).hasSize(1);
        assertThat(out.getFirst()).isInstanceOfSatisfying(BackendMessage.NoticeResponse.class,
                n -> assertThat(n.sqlState()).isEqualTo(SqlStates.NO_ACTIVE_SQL_TRANSACTION));
        assertThat(s.callIdNotice()).isTrue();
    }

    @Test
    void theImplicitBlockOfAScriptCommitsWhenItRanToTheEndAndRollsBackWhenItFailed() {
        PgSession s = session();
        s.queryStarts(2);
        s.statementStarts();
        s.set(set("thresher.call_deadline_ms", "5000", false), out::add);
        assertThat(s.inTransaction()).isTrue();
        s.queryEnds(false, out::add);
        assertThat(s.callDeadlineMs()).isEmpty();
        assertThat(s.inTransaction()).isFalse();

        s.queryStarts(2);
        s.statementStarts();
        s.set(set("thresher.call_deadline_ms", "5000", false), out::add);
        s.queryEnds(true, out::add);
        assertThat(s.callDeadlineMs()).isEqualTo(Optional.of(5000L));
        assertThat(s.status().letter).isEqualTo('I');
    }

    @Test
    void aQueryOfOneStatementHasNoImplicitBlock() {
        PgSession s = session();
        s.queryStarts(1);
        s.statementStarts();
        assertThat(s.inTransaction()).isFalse();
    }

    @Test
    void startupSettingsAreWhatResetGoesBackTo() {
        PgSession s = session(Map.of("user", "alice", "application_name", "psql", "options", "-c thresher.call_id_notice=off",
                "DateStyle", "ISO"));
        assertThat(s.reportedParameters()).containsEntry("application_name", "psql").containsEntry("session_authorization",
                "alice");
        assertThat(s.callIdNotice()).isFalse();
        s.set(set("application_name", "other", false), out::add);
        s.resetAll(out::add);
        assertThat(s.setting("application_name")).isEqualTo("psql");
        assertThat(s.reset("DateStyle", out::add)).isFalse();
        assertThat(out).containsExactly(new BackendMessage.ParameterStatus("application_name", "other"),
                new BackendMessage.ParameterStatus("application_name", "psql"));
    }

    @Test
    void anApplicationNameKeepsAtMost63BytesOfPrintableAscii() {
        // kills: settingValue keeping application_name as sent (7 MiB per session, echoed in every ParameterStatus)
        PgSession s = session(Map.of("user", "alice", "application_name", "a".repeat(1 << 20)));
        assertThat(s.reportedParameters().get("application_name")).isEqualTo("a".repeat(63));
        s.set(set("application_name", "b".repeat(7 << 20), false), out::add);
        assertThat(s.setting("application_name")).isEqualTo("b".repeat(63));
        s.set(set("application_name", "caf\u00e9\n\u001b[2J", true), out::add);
        assertThat(s.setting("application_name")).isEqualTo("b".repeat(63)); // SET LOCAL outside a block: no effect
        s.set(set("application_name", "caf\u00e9\n\u001b[2J", false), out::add);
        assertThat(s.setting("application_name")).isEqualTo("caf\\xc3\\xa9\\x0a\\x1b[2J");
        assertThat(out).filteredOn(BackendMessage.ParameterStatus.class::isInstance)
                .extracting(m -> ((BackendMessage.ParameterStatus) m).value())
                .containsExactly("b".repeat(63), "caf\\xc3\\xa9\\x0a\\x1b[2J");
    }

    @Test
    void showNamesTheParameterAsPostgreSqlDoesAndRefusesOthers() {
        PgSession s = session();
        assertThat(s.shown("DATESTYLE")).isEqualTo(Map.entry("DateStyle", "ISO, MDY"));
        assertThat(s.shown("thresher.call_deadline_ms").getValue())
                .isEqualTo(Long.toString(Limits.fromProperties(Map.of()).callDeadlineMs()));
        assertThatThrownBy(() -> s.shown("nope")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_SETTING));
        assertThatThrownBy(() -> s.shown("all")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.UNSUPPORTED_STATEMENT));
    }

    @Test
    void aValueASettingDoesNotTakeIsRefused() {
        PgSession s = session();
        assertThatThrownBy(() -> s.set(set("client_encoding", "LATIN1", false), out::add))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        assertThatThrownBy(() -> s.set(set("thresher.call_deadline_ms", "0", false), out::add))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_DEADLINE));
        assertThat(s.set(set("search_path", "x", false), out::add)).isFalse();
        assertThat(out).isEmpty();
    }
}
