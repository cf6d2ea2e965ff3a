package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** PostgreSQL's transaction semantics of SET, SET LOCAL and RESET. */
class SessionSettingsTest {
    private static SessionSettings settings() {
        SessionSettings s = new SessionSettings(Map.of("a", "0", "b", "0"));
        s.set("a", "startup");
        s.startupDone();
        return s;
    }

    @Test
    void aSessionSetLastsUnlessItsBlockRollsBack() {
        SessionSettings s = settings();
        s.set("a", "1");
        assertThat(s.get("a")).isEqualTo("1");
        s.begin();
        s.set("a", "2");
        s.commit();
        assertThat(s.get("a")).isEqualTo("2");
        s.begin();
        s.set("a", "3");
        s.set("b", "3");
        assertThat(s.get("a")).isEqualTo("3");
        s.rollback();
        assertThat(s.get("a")).isEqualTo("2");
        assertThat(s.get("b")).isEqualTo("0");
    }

    @Test
    void setLocalEndsWithItsTransactionAndIsRefusedOutsideOne() {
        SessionSettings s = settings();
        assertThat(s.setLocal("a", "1")).isFalse();
        assertThat(s.get("a")).isEqualTo("startup");
        s.begin();
        assertThat(s.setLocal("a", "1")).isTrue();
        assertThat(s.get("a")).isEqualTo("1");
        s.commit();
        assertThat(s.get("a")).isEqualTo("startup");
        s.begin();
        s.setLocal("a", "1");
        s.rollback();
        assertThat(s.get("a")).isEqualTo("startup");
    }

    @Test
    void aSessionSetAfterSetLocalSupersedesItAndSetLocalAfterSetMasksIt() {
        SessionSettings s = settings();
        s.begin();
        s.setLocal("a", "local");
        s.set("a", "session");
        s.commit();
        assertThat(s.get("a")).isEqualTo("session");
        s.begin();
        s.set("b", "session");
        s.setLocal("b", "local");
        assertThat(s.get("b")).isEqualTo("local");
        s.commit();
        assertThat(s.get("b")).isEqualTo("session");
    }

    @Test
    void resetGoesBackToTheStartupValueAndIsTransactional() {
        SessionSettings s = settings();
        s.set("a", "1");
        s.set("b", "1");
        s.reset("a");
        assertThat(s.get("a")).isEqualTo("startup");
        s.begin();
        s.resetAll();
        assertThat(s.get("b")).isEqualTo("0");
        s.rollback();
        assertThat(s.get("b")).isEqualTo("1");
        assertThat(s.initial("a")).isEqualTo("startup");
        assertThat(s.has("a")).isTrue();
        assertThat(s.has("c")).isFalse();
    }
}
