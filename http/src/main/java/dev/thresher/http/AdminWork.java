package dev.thresher.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * What the admin routes share: their blocking work runs on the front's admin threads, never on the event loop, and
 * its result is answered as JSON (records as objects, instants as ISO-8601 text); a body is a JSON object.
 */
final class AdminWork {
    static final ObjectMapper JSON = new ObjectMapper();
    /** Admin answers: records as objects, instants as ISO-8601 text. */
    private static final ObjectMapper ADMIN_JSON = new ObjectMapper().registerModule(
            new com.fasterxml.jackson.databind.module.SimpleModule().addSerializer(java.time.Instant.class,
                    com.fasterxml.jackson.databind.ser.std.ToStringSerializer.instance));

    private final Executor executor;

    AdminWork(Executor executor) {
        this.executor = executor;
    }

    /**
     * Registers, for every method on each of {@code patterns}, the answer of a node that does not serve a family of
     * admin routes: 404 with {@code message}.
     */
    static void notServed(RouteTable<Exchange.Route> routes, String message, String... patterns) {
        for (String pattern : patterns) {
            routes.addAnyMethod(pattern, x -> x.write(Responses.notFound(message)));
        }
    }

    /** Answers with what {@code work} makes of the request's body (text; not UTF-8 is answered at once). */
    void withBody(Exchange x, HttpResponseStatus ok, Function<String, Object> work) {
        Optional<String> body = x.body();
        if (body.isPresent()) {
            run(x, ok, () -> work.apply(body.get()));
        }
    }

    /** Runs {@code work} on the admin threads and answers with its result as JSON, or its failure. */
    void run(Exchange x, HttpResponseStatus ok, Supplier<Object> work) {
        runJson(x, ok, () -> {
            try {
                return ADMIN_JSON.writeValueAsString(work.get());
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new ThresherException(ErrorCode.INTERNAL_ERROR, "cannot write the answer: " + e.getMessage(), e);
            }
        });
    }

    /** Runs {@code work} on the admin threads and answers with the JSON text it makes, as it is, or its failure. */
    void runJson(Exchange x, HttpResponseStatus ok, Supplier<String> work) {
        CompletableFuture<String> future;
        try {
            future = CompletableFuture.supplyAsync(work, executor);
        } catch (RejectedExecutionException e) {
            future = CompletableFuture.failedFuture(new ThresherException(ErrorCode.CELL_UNAVAILABLE,
                    "too many table administration requests waiting on this node; retry"));
        }
        x.finish(future, x.method() + " " + x.path(), (json, failure) -> {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            if (cause == null) {
                x.send(ok, json);
            } else {
                x.fail(ThresherException.of(cause));
            }
        });
    }

    /** The body as a JSON object. */
    static JsonNode json(String body) {
        try {
            JsonNode n = JSON.readTree(body);
            if (n == null || !n.isObject()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the body must be a JSON object");
            }
            return n;
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the body is not JSON: " + e.getOriginalMessage());
        }
    }

    /** The text of {@code field}, which must be there. */
    static String text(JsonNode n, String field) {
        if (!n.hasNonNull(field) || !n.get(field).isTextual()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"" + field + "\" (a string) is missing");
        }
        return n.get(field).asText();
    }
}
