package dev.thresher.cellhost;

import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import java.util.Objects;

/**
 * How an HTTP handler's {@code call} import reaches the node's call API (docs/guest-abi.md, "HTTP handlers"). The
 * cell host bounds how many calls one request makes and reads the guest's memory; the node runs the call and
 * renders its outcome as the guest reads it.
 */
public interface NestedCalls {
    /**
     * Runs one distributed call to completion, blocking the calling thread (a handler thread, never a thread the
     * call itself needs); never throws for the call's own failure.
     *
     * @param descriptor the binding's name, or {@code name@version} to require that version
     * @param argumentsJson the call's arguments as the guest passed them (UTF-8, not yet checked to be JSON)
     * @param deadline the request's deadline: the call is given what is left of it and waited for no longer
     */
    Outcome call(String descriptor, String argumentsJson, Deadline deadline);

    /** The outcome of a call refused before it was made (the guest's request was bad, or over a limit). */
    Outcome refused(ThresherException failure);

    /**
     * What the guest reads after {@code call} returns.
     *
     * @param code 0 when the call succeeded, else the failure's numeric error code
     * @param bytes what fd 0 then yields: the result JSON, or the failure as an error object
     * @param failure the failure, or null when the call succeeded
     */
    record Outcome(int code, byte[] bytes, ThresherException failure) {
        public Outcome {
            Objects.requireNonNull(bytes, "bytes");
            if ((code == 0) != (failure == null)) {
                throw new IllegalArgumentException("a failed outcome carries its failure and its code, a success neither");
            }
        }
    }
}
