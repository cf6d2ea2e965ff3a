package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import org.junit.jupiter.api.Test;

/** The one JSON form of a failure: its message escaped as every front door sends one. */
class ErrorJsonTest {
    @Test
    void theMessageHasNoRawTerminalOrReorderingCharacter() throws Exception {
        String json = ErrorJson.of(new ThresherException(ErrorCode.UNKNOWN_BINDING, "binding 'a\u001b[2J\u202E' is not"));
        assertThat(new ObjectMapper().readTree(json).at("/error/message").asText())
                .isEqualTo("binding 'a\\x1b[2J\\u202e' is not");
        assertThat(new ObjectMapper().readTree(json).at("/error/code").asInt()).isEqualTo(1003);
    }
}
