package dev.thresher.errors;

import java.util.Objects;

/**
 * The one exception type that carries an {@link ErrorCode}. Expected, high-volume failures
 * (everything but {@link Category#INTERNAL}) skip stack capture.
 */
public final class ThresherException extends RuntimeException {
    private final ErrorCode code;
    private final boolean guestCodeRan;
    private final boolean noGuestCodeRan;

    public ThresherException(ErrorCode code, String message) {
        this(code, message, null);
    }

    public ThresherException(ErrorCode code, String message, Throwable cause) {
        this(code, message, cause, false, false);
    }

    private ThresherException(ErrorCode code, String message, Throwable cause, boolean guestCodeRan,
                               boolean noGuestCodeRan) {
        super(Objects.requireNonNull(message, "message"), cause, true, code.category() == Category.INTERNAL);
        this.code = Objects.requireNonNull(code, "code");
        this.guestCodeRan = guestCodeRan;
        this.noGuestCodeRan = noGuestCodeRan;
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

    /**
     * Whether it is proven that no guest code of the failed call started anywhere (no slot's run, no reduce):
     * then even a failure whose outcome is otherwise unknown ({@link RetryClass#AMBIGUOUS}, a store outage)
     * is safe to retry.
     */
    public boolean noGuestCodeRan() {
        return noGuestCodeRan;
    }

    /** The same failure, marked as one after which guest code of the call ran or may have run. */
    public ThresherException afterGuestCode() {
        return guestCodeRan ? this : new ThresherException(code, getMessage(), this, true, false);
    }

    /** The same failure, marked as one before any guest code of the call started (proven by its caller). */
    public ThresherException beforeGuestCode() {
        return noGuestCodeRan ? this : new ThresherException(code, getMessage(), this, false, true);
    }

    /**
     * How a caller may react, as far as this failure shows: the code's class, except that an ambiguous code is
     * {@link RetryClass#RETRYABLE} when no guest code ran ({@link #noGuestCodeRan()}).
     */
    public RetryClass retryClass() {
        return noGuestCodeRan && code.retryClass() == RetryClass.AMBIGUOUS ? RetryClass.RETRYABLE : code.retryClass();
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
