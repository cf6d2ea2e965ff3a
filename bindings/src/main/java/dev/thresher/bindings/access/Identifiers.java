package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
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
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} otherwise
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
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a " + what + " is at most " + MAX_BYTES
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
     * {@code "name"} for a message: at most {@value #MAX_BYTES} characters (longer ones cut, with their length said),
     * control characters escaped, double quotes doubled.
     */
    public static String quoted(String name) {
        if (name == null) {
            return "(none)";
        }
        StringBuilder out = new StringBuilder("\"");
        int shown = Math.min(name.length(), MAX_BYTES);
        for (int i = 0; i < shown; i++) {
            char c = name.charAt(i);
            if (c == '"') {
                out.append("\"\"");
            } else if (Character.isISOControl(c)) {
                out.append(String.format("\\x%02x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
        if (shown < name.length()) {
            out.append("... (").append(name.length()).append(" characters)");
        }
        return out.toString();
    }
}
