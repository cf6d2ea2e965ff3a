package dev.thresher.http;

import dev.thresher.errors.Category;
import io.netty.handler.codec.http.HttpResponseStatus;

/** The one mapping of error categories to HTTP statuses. */
public final class HttpStatuses {
    private HttpStatuses() {}

    /** The HTTP status a failure with this code is answered with. */
    public static int statusOf(dev.thresher.errors.ErrorCode code) {
        return of(code).code();
    }

    static HttpResponseStatus of(dev.thresher.errors.ErrorCode code) {
        return switch (code) {
            case UNKNOWN_BINDING, UNKNOWN_CALL, UNKNOWN_TABLE -> HttpResponseStatus.NOT_FOUND;
            case PAYLOAD_TOO_LARGE -> HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE;
            case AUTHENTICATION_FAILED -> HttpResponseStatus.UNAUTHORIZED;
            case PERMISSION_DENIED -> HttpResponseStatus.FORBIDDEN;
            case TOPOLOGY_CHANGE_REFUSED -> HttpResponseStatus.CONFLICT;
            case IDEMPOTENCY_KEY_REUSED -> HttpResponseStatus.UNPROCESSABLE_ENTITY;
            default -> of(code.category());
        };
    }

    static HttpResponseStatus of(Category category) {
        return switch (category) {
            case INVALID_STATEMENT_OR_ARGUMENTS -> HttpResponseStatus.BAD_REQUEST;
            case AUTHENTICATION_OR_AUTHORIZATION -> HttpResponseStatus.FORBIDDEN;
            case BATCH_OR_PARTIAL_BOUND, GUEST_FAILURE -> HttpResponseStatus.UNPROCESSABLE_ENTITY;
            case DEADLINE -> HttpResponseStatus.GATEWAY_TIMEOUT;
            case HOST_CELL_UNAVAILABLE, TARGET_STALE -> HttpResponseStatus.SERVICE_UNAVAILABLE;
            case UNCLASSIFIED_TRANSPORT -> HttpResponseStatus.BAD_GATEWAY;
            case INTERNAL -> HttpResponseStatus.INTERNAL_SERVER_ERROR;
        };
    }
}
