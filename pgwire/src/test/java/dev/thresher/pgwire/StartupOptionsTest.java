package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StartupOptionsTest {
    @Test
    void settingsInEveryFormLibpqAndPgjdbcPass() {
        assertThat(StartupOptions.parse("-c thresher.call_deadline_ms=2500 -cSearch_Path=a,b --application-name=my\\ app"))
                .containsExactly(Map.entry("thresher.call_deadline_ms", "2500"), Map.entry("search_path", "a,b"),
                        Map.entry("application_name", "my app"));
        assertThat(StartupOptions.parse("  ")).isEmpty();
        assertThat(StartupOptions.parse("-c a=")).containsExactly(Map.entry("a", ""));
    }

    @ParameterizedTest
    @ValueSource(strings = {"-x", "-c", "-c a", "--a", "-c =1", "geqo=off"})
    void otherSwitchesAreRefused(String options) {
        assertThatThrownBy(() -> StartupOptions.parse(options)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.SYNTAX_ERROR));
    }
}
