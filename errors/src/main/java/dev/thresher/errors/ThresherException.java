package dev.thresher.errors;

import java.util.Objects;

/**
 * The one exception type that carries an {@link ErrorCode}. Expected, high-volume failures
 * (everything but {@link Category#INTERNAL}) skip stack capture.
 */
public final class ThresherException extends RuntimeException {
    private final ErrorCode code;
    private final boolean guestCodeRan;

    public ThresherException(ErrorCode code, String message) {
        this(code, message, null);
    }

    public ThresherException(ErrorCode code, String message, Throwable cause) {
        this(code, message, cause, false);
    }

    private ThresherException(ErrorCode code, String message, Throwable cause, boolean guestCodeRan) {
        super(Objects.requireNonNull(message, "message"), cause, true, code.category() == Category.INTERNAL);
        this.code = Objects.requireNonNull(code, "code");
        this.guestCodeRan = guestCodeRan;
    }

    public ErrorCode code() {
        return code;
    }

    /**
     * Whether guest code of the failed call ran (or may have run) before it failed. A retryable code
     * says the target can be resolved again; only when this is false does a retry also run no guest
     * code twice.
     */
    public boolean guestCodeRan() {
        return guestCodeRan;
    }

    /** The same failure, marked as one after which guest code of the call ran or may have run. */
    public ThresherException afterGuestCode() {
        return guestCodeRan ? this : new ThresherException(code, getMessage(), this, true);
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
