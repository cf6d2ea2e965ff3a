package dev.thresher.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * The front door's JSON answers, a failure's among them: a {@link ThresherException} is answered with the status
 * {@link HttpStatuses} maps its code to (or one a route says) and the body {@link ErrorJson} writes, here only.
 */
final class Responses {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Responses() {
    }

    /** {@code json} with {@code status}: {@code Content-Type: application/json} and its {@code Content-Length}. */
    static FullHttpResponse json(HttpResponseStatus status, String json) {
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        HttpUtil.setContentLength(res, res.content().readableBytes());
        return res;
    }

    /** The failure {@code e}: the status of its code, its error JSON. */
    static FullHttpResponse failure(ThresherException e) {
        return json(HttpStatuses.of(e.code()), ErrorJson.of(e));
    }

    /**
     * The failure {@code e} with {@code status} (null: its code's), and {@code Allow} when given, written before the
     * {@code Content-Length} as handler routes always wrote it.
     */
    static FullHttpResponse failure(ThresherException e, HttpResponseStatus status, String allow) {
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status != null ? status
                : HttpStatuses.of(e.code()), Unpooled.copiedBuffer(ErrorJson.of(e), StandardCharsets.UTF_8));
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        if (allow != null) {
            res.headers().set(HttpHeaderNames.ALLOW, allow);
        }
        HttpUtil.setContentLength(res, res.content().readableBytes());
        return res;
    }

    /** A path no route serves: HTTP's own 404, with the code of a request Thresher does not serve. */
    static FullHttpResponse noRoute(HttpMethod method, String path) {
        return notFound("no route for " + method + " " + Quoted.of(path));
    }

    /** 404 with {@code UNSUPPORTED_STATEMENT} and this message. */
    static FullHttpResponse notFound(String message) {
        return json(HttpResponseStatus.NOT_FOUND, ErrorJson.of(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                message)));
    }

    /** {@code s} as a JSON string. */
    static String quote(String s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
