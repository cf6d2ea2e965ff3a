package dev.thresher.cellhost;

import java.util.List;
import java.util.Map;

/**
 * What one HTTP handler invocation answered.
 *
 * @param status the HTTP status the guest set (200 when it set none)
 * @param headers the headers it set, names lower-case, in order
 * @param body what it wrote with {@code http_body}
 * @param nestedCalls the nested calls it made (refused ones included)
 * @param guestNanos time spent in guest code, the nested calls' waits not included
 */
public record HandlerOutcome(int status, List<Map.Entry<String, String>> headers, byte[] body, int nestedCalls,
                             long guestNanos) {
    public HandlerOutcome {
        headers = List.copyOf(headers);
    }
}
