package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import org.junit.jupiter.api.Test;

/** What an ErrorResponse's message carries: whoever built the message, nothing a stranger sent goes out raw. */
class PgErrorTest {
    @Test
    void aMessageThatForgotToQuoteItsInputHasItsTerminalAndReorderingCharactersEscaped() {
        PgError e = PgError.of(new ThresherException(ErrorCode.UNKNOWN_TABLE, "there is no table t\u001b[31m\u202Eevil"));
        assertThat(e.message()).isEqualTo("there is no table t\\x1b[31m\\u202eevil");
        assertThat(e.sqlState()).isEqualTo("42P01");
        assertThat(PgError.error(ErrorCode.SYNTAX_ERROR, "line one\nline two\tend").message())
                .as("lines and tabs, as guest output has them, stay").isEqualTo("line one\nline two\tend");
    }
}
