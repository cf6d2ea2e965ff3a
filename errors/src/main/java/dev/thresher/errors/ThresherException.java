package dev.thresher.errors;

import java.util.Objects;

/**
 * The one exception type that carries an {@link ErrorCode}. Expected, high-volume failures
 * (everything but {@link Category#INTERNAL}) skip stack capture.
 */
public final class ThresherException extends RuntimeException {
    private final ErrorCode code;

    public ThresherException(ErrorCode code, String message) {
        this(code, message, null);
    }

    public ThresherException(ErrorCode code, String message, Throwable cause) {
        super(Objects.requireNonNull(message, "message"), cause, true, code.category() == Category.INTERNAL);
        this.code = Objects.requireNonNull(code, "code");
    }

    public ErrorCode code() {
        return code;
    }

    /** The exception as a {@link ThresherException}: itself, or {@link ErrorCode#INTERNAL_ERROR} around it. */
    public static ThresherException of(Throwable t) {
        Throwable cur = t;
        while (cur != null) {
            if (cur instanceof ThresherException te) {
                return te;
            }
            cur = cur.getCause();
        }
        return new ThresherException(ErrorCode.INTERNAL_ERROR, String.valueOf(t), t);
    }

    @Override
    public String toString() {
        return "ThresherException[" + code + "(" + code.code() + ")]: " + getMessage();
    }
}
