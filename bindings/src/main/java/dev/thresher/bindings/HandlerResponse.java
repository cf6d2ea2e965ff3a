package dev.thresher.bindings;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What an HTTP handler answered.
 *
 * @param status the HTTP status, 200 to 599
 * @param headers the headers it set, names lower-case, in the order set
 * @param body the body it wrote
 */
public record HandlerResponse(int status, List<Map.Entry<String, String>> headers, byte[] body) {
    public HandlerResponse {
        headers = List.copyOf(headers);
        Objects.requireNonNull(body, "body");
    }
}
