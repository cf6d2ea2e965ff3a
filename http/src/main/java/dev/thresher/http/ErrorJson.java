package dev.thresher.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.thresher.errors.ThresherException;

/**
 * The one JSON form of a failure over HTTP, also what an HTTP handler's guest reads when its nested call failed:
 * <pre>
 * {"error": {"code": 1003, "name": "UNKNOWN_BINDING", "category": "INVALID_STATEMENT_OR_ARGUMENTS",
 *            "retry": "TERMINAL", "guestCodeRan": false, "message": "..."}}
 * </pre>
 */
public final class ErrorJson {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ErrorJson() {
    }

    public static String of(ThresherException e) {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode err = root.putObject("error");
        err.put("code", e.code().code());
        err.put("name", e.code().name());
        err.put("category", e.code().category().name());
        err.put("retry", e.retryClass().name());
        err.put("guestCodeRan", e.guestCodeRan());
        err.put("message", dev.thresher.errors.Quoted.message(e.getMessage()));
        return root.toString();
    }
}
