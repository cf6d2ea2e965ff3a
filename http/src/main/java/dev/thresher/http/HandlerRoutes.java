package dev.thresher.http;

import dev.thresher.bindings.HandlerRequest;
import dev.thresher.bindings.HandlerResponse;
import dev.thresher.bindings.HandlerService;
import dev.thresher.bindings.IdempotentRequests;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * The HTTP routes of HTTP handler bindings: {@code <METHOD> /v1/http/<binding><route path>?<query>}, served by every
 * node once the binding is deployed (docs/components.md, "HTTP handlers"). The request is handed to the node's
 * {@link HandlerService}, which matches it to one of the binding's routes and runs the handler; its answer, or its
 * typed failure in the error JSON of every HTTP failure, is written back.
 *
 * <pre>
 * 200..599  what the handler set: its status, its headers, its body
 * 404       UNKNOWN_BINDING (no HTTP handler of that name), or UNSUPPORTED_STATEMENT (no route matches the path)
 * 405       UNSUPPORTED_STATEMENT: routes serve the path with other methods (Allow names them)
 * 413       PAYLOAD_TOO_LARGE: a body over limits.directCallPayloadBytes
 * other     the typed failure of the handler or of its nested call, as HttpStatuses maps it
 * </pre>
 */
final class HandlerRoutes {
    static final String PREFIX = "/v1/http/";
    private static final Pattern BINDING_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private final Limits limits;
    /** Journals requests with an Idempotency-Key; null: such requests are refused. */
    private final IdempotentRequests idempotency;
    private volatile HandlerService service;

    HandlerRoutes(Limits limits, IdempotentRequests idempotency) {
        this.limits = limits;
        this.idempotency = idempotency;
    }

    /** Whether a path is one of these routes (served or not). */
    static boolean claims(String path) {
        return path.startsWith(PREFIX) || path.equals("/v1/http");
    }

    /** Registers every method on {@code /v1/http} and every path under {@code /v1/http/}: the handler service routes them. */
    void register(RouteTable<Exchange.Route> routes) {
        routes.addAnyMethod("/v1/http", this::handle).addAnyMethod(PREFIX + "{rest...}", this::handle);
    }

    /** Serves handler routes through {@code handlers} from now on. */
    void serve(HandlerService handlers) {
        this.service = handlers;
    }

    /** The binding a handler path names ({@code /v1/http/<binding>/...}), if any. */
    static Optional<String> bindingOf(String path) {
        String rest = path.length() > PREFIX.length() ? path.substring(PREFIX.length()) : "";
        int slash = rest.indexOf('/');
        String binding = slash < 0 ? rest : rest.substring(0, slash);
        return binding.isEmpty() ? Optional.empty() : Optional.of(binding);
    }

    /**
     * Answers one request, now or once the handler completes; the handler and its nested call run as the request's
     * user in its tenant.
     */
    private void handle(Exchange x) {
        FullHttpRequest req = x.request();
        String path = x.path();
        String tenant = x.tenant();
        Consumer<FullHttpResponse> write = x::write;
        HandlerService handlers = service;
        String rest = path.length() > PREFIX.length() ? path.substring(PREFIX.length()) : "";
        int slash = rest.indexOf('/');
        String binding = slash < 0 ? rest : rest.substring(0, slash);
        String below = slash < 0 ? "/" : rest.substring(slash);
        if (handlers == null) {
            write.accept(error(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                    "this node serves no HTTP handlers"), HttpResponseStatus.NOT_FOUND, null));
            return;
        }
        if (binding.isEmpty()) {
            write.accept(error(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "no route for " + req.method() + " "
                    + Quoted.of(path) + ": handlers are served at " + PREFIX + "<binding>/<route>"), HttpResponseStatus.NOT_FOUND, null));
            return;
        }
        if (!BINDING_NAME.matcher(binding).matches()) {
            write.accept(error(new ThresherException(ErrorCode.UNKNOWN_BINDING, "no binding can be named '"
                    + Quoted.of(binding) + "': a name is a letter or '_', then letters, digits or '_'"), null, null));
            return;
        }
        if (binding.length() > CallRoutes.MAX_NAME_BYTES) { // the pattern admits ASCII only: a character is a byte
            write.accept(error(CallRoutes.nameTooLong(binding), null, null));
            return;
        }
        if (req.content().readableBytes() > limits.directCallPayloadBytes()) {
            write.accept(error(new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "the request body exceeds"
                    + " limits.directCallPayloadBytes (" + limits.directCallPayloadBytes() + " bytes)"), null, null));
            return;
        }
        Optional<Long> deadline;
        try {
            deadline = CallRoutes.deadlineHeader(req);
        } catch (ThresherException e) {
            write.accept(error(e, null, null));
            return;
        }
        String uri = req.uri();
        int q = uri.indexOf('?');
        String rawQuery = q < 0 ? "" : uri.substring(q + 1);
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        for (Map.Entry<String, String> h : req.headers()) {
            headers.add(new AbstractMap.SimpleImmutableEntry<>(h.getKey().toLowerCase(Locale.ROOT), h.getValue()));
        }
        HandlerRequest request = new HandlerRequest(tenant, x.caller(), binding, req.method().name(), below, rawQuery, headers,
                ByteBufUtil.getBytes(req.content()), deadline);
        String key = req.headers().get(CallRoutes.IDEMPOTENCY_KEY);
        if (key != null) {
            once(x, binding, key, deadline, () -> run(handlers, request));
            return;
        }
        x.finish(run(handlers, request), "handler " + binding,
                (response, failure) -> x.write(failure == null && response != null ? response(response) : refusal(failure)));
    }

    private static CompletableFuture<HandlerResponse> run(HandlerService handlers, HandlerRequest request) {
        try {
            CompletableFuture<HandlerResponse> f = handlers.handle(request);
            return f != null ? f : CompletableFuture.failedFuture(new ThresherException(ErrorCode.INTERNAL_ERROR,
                    "the handler service returned no future"));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * A request with an {@code Idempotency-Key}: the handler runs once per (tenant, key) and its outer response
     * (status, headers, body) is journaled with a fingerprint of method, path, query and body; a repeat is answered it
     * with {@code Idempotent-Replayed: true}. A response under 500 is kept, a failure as {@link CallRoutes#keeps} keeps a
     * direct call's; anything else releases the key.
     */
    private void once(Exchange x, String binding, String key, Optional<Long> deadline,
                      java.util.function.Supplier<CompletableFuture<HandlerResponse>> execute) {
        FullHttpRequest req = x.request();
        Consumer<FullHttpResponse> write = x::write;
        if (idempotency == null) {
            write.accept(error(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                    "this node does not journal Idempotency-Keys"), null, null));
            return;
        }
        byte[] fingerprint = CallRoutes.fingerprint(req.method().name() + " " + req.uri(), req.content());
        long waitMs = Math.min(deadline.filter(d -> d > 0).orElse(limits.callDeadlineMs()), limits.maxCallDeadlineMs());
        CompletableFuture<IdempotentRequests.Answer> answer;
        try {
            answer = idempotency.once(x.tenant(), key, fingerprint, waitMs, run -> execute.get().handle((response, failure) -> {
                if (failure == null && response != null) {
                    return new IdempotentRequests.Outcome(stored(response(response)), response.status() < 500);
                }
                ThresherException e = failure == null ? new ThresherException(ErrorCode.INTERNAL_ERROR,
                        "the handler service completed with no response") : ThresherException.of(failure);
                return new IdempotentRequests.Outcome(stored(refusal(failure == null ? e : failure)),
                        CallRoutes.keeps(e));
            }));
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        x.finish(answer, "handler " + binding, (a, failure) -> {
            if (failure != null || a == null) {
                write.accept(error(failure == null ? new ThresherException(ErrorCode.INTERNAL_ERROR,
                        "the idempotency journal completed with no answer") : ThresherException.of(failure), null, null));
                return;
            }
            FullHttpResponse res = restored(a.response());
            if (a.replayed()) {
                res.headers().set(CallRoutes.IDEMPOTENT_REPLAYED, "true");
            }
            write.accept(res);
        });
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper STORED = new com.fasterxml.jackson.databind.ObjectMapper();

    /** An outer response as journaled: {"headers": [[name, value], ...], "body": base64}; the response is released. */
    private static IdempotentRequests.Response stored(FullHttpResponse res) {
        try {
            com.fasterxml.jackson.databind.node.ObjectNode o = STORED.createObjectNode();
            com.fasterxml.jackson.databind.node.ArrayNode headers = o.putArray("headers");
            for (Map.Entry<String, String> h : res.headers()) {
                if (!h.getKey().equalsIgnoreCase(HttpHeaderNames.CONTENT_LENGTH.toString())) {
                    headers.addArray().add(h.getKey()).add(h.getValue());
                }
            }
            o.put("body", java.util.Base64.getEncoder().encodeToString(ByteBufUtil.getBytes(res.content())));
            return new IdempotentRequests.Response(res.status().code(), o.toString());
        } finally {
            res.release();
        }
    }

    private static FullHttpResponse restored(IdempotentRequests.Response r) {
        com.fasterxml.jackson.databind.JsonNode o;
        try {
            o = STORED.readTree(r.body());
        } catch (java.io.IOException e) {
            throw new IllegalStateException("a journaled response that is not JSON", e);
        }
        byte[] body = java.util.Base64.getDecoder().decode(o.path("body").asText(""));
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(r.status()),
                Unpooled.wrappedBuffer(body));
        for (com.fasterxml.jackson.databind.JsonNode h : o.path("headers")) {
            res.headers().add(h.get(0).asText(), h.get(1).asText());
        }
        HttpUtil.setContentLength(res, body.length);
        return res;
    }

    private static FullHttpResponse response(HandlerResponse r) {
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(r.status()),
                Unpooled.wrappedBuffer(r.body()));
        for (Map.Entry<String, String> h : r.headers()) {
            res.headers().add(h.getKey(), h.getValue());
        }
        HttpUtil.setContentLength(res, r.body().length);
        return res;
    }

    /** A failure of the handler service: a routing refusal is 404 or 405, anything else as HttpStatuses maps it. */
    private static FullHttpResponse refusal(Throwable failure) {
        ThresherException e = failure == null
                ? new ThresherException(ErrorCode.INTERNAL_ERROR, "the handler service completed with no response")
                : ThresherException.of(failure);
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof HandlerService.RouteRefusal r) {
                return r.allowed().isEmpty() ? error(e, HttpResponseStatus.NOT_FOUND, null)
                        : error(e, HttpResponseStatus.METHOD_NOT_ALLOWED, String.join(", ", r.allowed()));
            }
        }
        return error(e, null, null);
    }

    /** The error JSON of {@code e}, with {@code status} or the code's own, and an Allow header when given. */
    private static FullHttpResponse error(ThresherException e, HttpResponseStatus status, String allow) {
        return Responses.failure(e, status, allow);
    }
}
