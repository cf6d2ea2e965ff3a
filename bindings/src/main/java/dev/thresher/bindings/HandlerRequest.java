package dev.thresher.bindings;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One HTTP request for an HTTP handler binding, as the front door hands it over.
 *
 * @param tenant the tenant whose binding serves it
 * @param principal the authenticated caller
 * @param binding the handler binding's name (the segment after {@code /v1/http/})
 * @param method the request method
 * @param path the request path below {@code /v1/http/<binding>}, as received (percent-encoded); "/" at least
 * @param rawQuery the query as received, without {@code ?}; empty when there is none
 * @param headers every request header, names lower-case, in request order (the handler is given a selection)
 * @param body the request body
 * @param deadlineMs the deadline the caller asks for ({@code Thresher-Deadline-Ms}), or empty for the default call
 *     deadline; it covers the whole request, the nested call included
 */
public record HandlerRequest(String tenant, String principal, String binding, String method, String path, String rawQuery,
                             List<Map.Entry<String, String>> headers, byte[] body, Optional<Long> deadlineMs) {
    public HandlerRequest {
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(principal, "principal");
        Objects.requireNonNull(binding, "binding");
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(rawQuery, "rawQuery");
        headers = List.copyOf(headers);
        Objects.requireNonNull(body, "body");
        Objects.requireNonNull(deadlineMs, "deadlineMs");
    }
}
