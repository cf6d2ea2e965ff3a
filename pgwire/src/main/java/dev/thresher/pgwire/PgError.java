package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.RetryClass;
import dev.thresher.errors.ThresherException;
import java.util.Objects;

/**
 * One error as pgwire reports it in an ErrorResponse, its message as {@link dev.thresher.errors.Quoted#message} sends
 * one.
 *
 * @param fatal whether the connection closes after it (severity {@code FATAL} instead of {@code ERROR})
 * @param code the Thresher code reported as {@code thresher_code=} in the detail
 * @param sqlState the SQLSTATE, {@link SqlStates#of} of the code unless a wire-protocol condition refines it
 * @param guestCodeRan whether guest code of the failed call ran or may have run (shapes the retry hint)
 * @param retryClass how the caller may react: the code's class unless the failure proved that no guest code ran
 */
record PgError(boolean fatal, ErrorCode code, String sqlState, String message, boolean guestCodeRan,
               RetryClass retryClass) {
    PgError {
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(sqlState, "sqlState");
        Objects.requireNonNull(message, "message");
        message = dev.thresher.errors.Quoted.message(message); // whoever built it, nothing a stranger sent goes out raw
        if (sqlState.length() != 5) {
            throw new IllegalArgumentException("a SQLSTATE has five characters: " + sqlState);
        }
    }

    PgError(boolean fatal, ErrorCode code, String sqlState, String message) {
        this(fatal, code, sqlState, message, false, code.retryClass());
    }

    static PgError of(ThresherException e) {
        return new PgError(false, e.code(), SqlStates.of(e.code()), e.getMessage(), e.guestCodeRan(), e.retryClass());
    }

    static PgError of(Throwable t) {
        return of(ThresherException.of(t));
    }

    static PgError error(ErrorCode code, String message) {
        return new PgError(false, code, SqlStates.of(code), message);
    }

    static PgError fatal(ErrorCode code, String message) {
        return new PgError(true, code, SqlStates.of(code), message);
    }

    /** A wire-protocol condition ({@link ErrorCode#PROTOCOL_VIOLATION}) with a more precise SQLSTATE. */
    static PgError protocol(String sqlState, String message) {
        return new PgError(false, ErrorCode.PROTOCOL_VIOLATION, sqlState, message);
    }

    String severity() {
        return fatal ? "FATAL" : "ERROR";
    }

    /** E.g. {@code thresher_code=1003 category=INVALID_STATEMENT_OR_ARGUMENTS retry_class=TERMINAL}. */
    String detail() {
        return "thresher_code=" + code.code() + " category=" + code.category() + " retry_class=" + retryClass;
    }

    String hint() {
        return SqlStates.hint(code, retryClass, guestCodeRan);
    }
}
