package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;

/** User names and binding names in access statements: checked, and shown in messages without echoing input unbounded. */
public final class Identifiers {
    /** PostgreSQL's NAMEDATALEN - 1. */
    public static final int MAX_BYTES = 63;

    private Identifiers() {
    }

    /**
     * A user name as stored: 1..{@value #MAX_BYTES} bytes of UTF-8, no control characters.
     *
     * @throws ThresherException {@link ErrorCode#NAME_TOO_LONG} past {@value #MAX_BYTES} bytes,
     *     {@link ErrorCode#INVALID_ARGUMENTS} when empty or holding control characters
     */
    public static String userName(String name) {
        return check("user name", name);
    }

    /** A binding name in a grant: the same rules. */
    public static String bindingName(String name) {
        return check("binding name", name);
    }

    private static String check(String what, String name) {
        if (name == null || name.isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a " + what + " must not be empty");
        }
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_BYTES) {
            throw new ThresherException(ErrorCode.NAME_TOO_LONG, "a " + what + " is at most " + MAX_BYTES
                    + " bytes; " + quoted(name) + " is " + bytes);
        }
        for (int i = 0; i < name.length(); i++) {
            if (Character.isISOControl(name.charAt(i))) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a " + what + " must not hold control characters");
            }
        }
        return name;
    }

    /**
     * {@code "name"} for a message: {@link Quoted#of} inside double quotes (cut after a few dozen characters, control
     * and invisible characters escaped), double quotes doubled as in SQL.
     */
    public static String quoted(String name) {
        if (name == null) {
            return "(none)";
        }
        return "\"" + Quoted.of(name).replace("\"", "\"\"") + "\"";
    }
}
