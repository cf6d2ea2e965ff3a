package dev.thresher.http;

import dev.thresher.bindings.CallOutcome;
import dev.thresher.bindings.CallOutcomes;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.IdempotentRequests;
import dev.thresher.bindings.JournalScope;
import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.Category;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.RetryClass;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The direct call route:
 *
 * <pre>
 * POST /v1/bindings/{name}/call       body: the JSON arguments; headers Thresher-Deadline-Ms, Idempotency-Key optional
 *      200 {"call_id": "...", "result": &lt;the reduced JSON&gt;}
 *      4xx/5xx the error JSON ({@link ErrorJson}), with the status of its code ({@link HttpStatuses})
 * </pre>
 *
 * A call with an {@code Idempotency-Key} runs once per (tenant, key), journaled in {@link IdempotentRequests}; without
 * that journal such calls are refused. Binding names are at most {@value #MAX_NAME_BYTES} bytes; what an error echoes
 * of a name goes through {@link Quoted}.
 */
final class CallRoutes {
    static final String PATTERN = "/v1/bindings/{name}/call";
    private static final Pattern CALL = Pattern.compile("^/v1/bindings/([^/]+)/call$");
    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    static final String IDEMPOTENT_REPLAYED = "Idempotent-Replayed";
    static final Pattern BINDING_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    /** The longest binding name, in bytes: PostgreSQL's identifier length, as over pgwire. */
    static final int MAX_NAME_BYTES = 63;

    private final Limits limits;
    private final CallService calls;
    /** Journals calls with an Idempotency-Key; null: such calls are refused. */
    private final IdempotentRequests idempotency;
    private final CallOutcomes outcomes;

    private CallRoutes(Limits limits, CallService calls, IdempotentRequests idempotency, CallOutcomes outcomes) {
        this.limits = limits;
        this.calls = calls;
        this.idempotency = idempotency;
        this.outcomes = outcomes;
    }

    static void register(RouteTable<Exchange.Route> routes, Limits limits, CallService calls,
                         IdempotentRequests idempotency, CallOutcomes outcomes) {
        CallRoutes r = new CallRoutes(limits, calls, idempotency, outcomes);
        routes.add(HttpMethod.POST, PATTERN, r::call);
    }

    /** The binding a direct call's path names, when the path is the direct call route (whatever the method). */
    static Optional<String> bindingOf(String path) {
        Matcher m = CALL.matcher(path);
        return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
    }

    /** {@link ErrorCode#NAME_TOO_LONG} for a binding name of the path, shown cut short. */
    static ThresherException nameTooLong(String name) {
        return new ThresherException(ErrorCode.NAME_TOO_LONG, "a binding name is at most " + MAX_NAME_BYTES
                + " bytes: '" + Quoted.of(name) + "'");
    }

    /** A call's arguments over {@code limits.directCallPayloadBytes}. */
    static ThresherException tooLarge(Limits limits) {
        return new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "the arguments exceed limits.directCallPayloadBytes ("
                + limits.directCallPayloadBytes() + " bytes)");
    }

    /**
     * The deadline a request asks for in {@code Thresher-Deadline-Ms}, if any.
     *
     * @throws ThresherException {@code INVALID_DEADLINE} when the header is not an integer
     */
    static Optional<Long> deadlineHeader(HttpRequest req) {
        String header = req.headers().get("Thresher-Deadline-Ms");
        try {
            return header == null ? Optional.empty() : Optional.of(Long.parseLong(header.trim()));
        } catch (NumberFormatException nfe) {
            throw new ThresherException(ErrorCode.INVALID_DEADLINE, "Thresher-Deadline-Ms must be an integer");
        }
    }

    /** Checks the request in order (name, size, deadline, text, not empty), then calls, now or once journaled. */
    private void call(Exchange x) {
        String name = x.capture("name");
        if (!BINDING_NAME.matcher(name).matches()) {
            x.fail(new ThresherException(ErrorCode.UNKNOWN_BINDING, "no binding can be named '"
                    + Quoted.of(name) + "': a name is a letter or '_', then letters, digits or '_'"));
            return;
        }
        if (name.length() > MAX_NAME_BYTES) { // the pattern admits ASCII only: a character is a byte
            x.fail(nameTooLong(name));
            return;
        }
        ByteBuf content = x.request().content();
        if (content.readableBytes() > limits.directCallPayloadBytes()) {
            x.fail(tooLarge(limits));
            return;
        }
        Optional<Long> deadline;
        try {
            deadline = deadlineHeader(x.request());
        } catch (ThresherException e) {
            x.fail(e);
            return;
        }
        Optional<String> decoded = Utf8.decode(content.nioBuffer());
        if (decoded.isEmpty()) {
            x.fail(new ThresherException(ErrorCode.INVALID_TEXT_ENCODING, "the body is not valid UTF-8"));
            return;
        }
        String body = decoded.get();
        if (body.isBlank()) {
            x.fail(new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                    "the body is empty; it must be the call's JSON arguments, e.g. {}"));
            return;
        }
        String idempotencyKey = x.request().headers().get(IDEMPOTENCY_KEY);
        if (idempotencyKey != null) {
            idempotentCall(x, name, body, deadline, idempotencyKey, content);
            return;
        }
        x.finish(run(new CallRequest(x.tenant(), x.caller(), name, body, deadline)), "a call of " + name,
                (result, failure) -> x.write(answer(result, failure)));
    }

    /** The call service's call, its failure to start as a failed call. */
    private CompletableFuture<CallResult> run(CallRequest request) {
        CompletableFuture<CallResult> future;
        try {
            future = calls.call(request);
        } catch (RuntimeException e) {
            future = CompletableFuture.failedFuture(e);
        }
        return future != null ? future : CompletableFuture.failedFuture(
                new ThresherException(ErrorCode.INTERNAL_ERROR, "the call service returned no future"));
    }

    /** A finished call's answer: 200 with its call id and result, or its failure. */
    static FullHttpResponse answer(CallResult result, Throwable failure) {
        if (failure == null && result == null) {
            failure = new ThresherException(ErrorCode.INTERNAL_ERROR, "the call service completed with no result");
        }
        return failure == null ? Responses.json(HttpResponseStatus.OK, success(result.callId(), result.resultJson()))
                : Responses.failure(ThresherException.of(failure));
    }

    /**
     * A direct call with an {@code Idempotency-Key}: run once per (tenant, key) and journaled with a fingerprint of
     * the route and body; a repeat is answered the journaled response with {@code Idempotent-Replayed: true}.
     */
    private void idempotentCall(Exchange x, String name, String body, Optional<Long> deadline, String key,
                                ByteBuf content) {
        if (idempotency == null) {
            x.fail(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "this node does not journal Idempotency-Keys"));
            return;
        }
        byte[] fingerprint = fingerprint("POST /v1/bindings/" + name + "/call", content);
        long waitMs = deadline.filter(d -> d > 0).orElse(limits.callDeadlineMs());
        CompletableFuture<IdempotentRequests.Answer> answer;
        try {
            answer = idempotency.once(x.tenant(), key, fingerprint, Math.min(waitMs, limits.maxCallDeadlineMs()),
                    run -> outcome(x.tenant(), x.caller(), name, body, deadline, run));
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        x.finish(answer, "an idempotent call of " + name, (a, failure) -> {
            if (failure != null || a == null) {
                x.fail(failure == null ? new ThresherException(ErrorCode.INTERNAL_ERROR,
                        "the idempotency journal completed with no answer") : ThresherException.of(failure));
                return;
            }
            FullHttpResponse res = Responses.json(HttpResponseStatus.valueOf(a.response().status()), a.response().body());
            if (a.replayed()) {
                res.headers().set(IDEMPOTENT_REPLAYED, "true");
            }
            x.write(res);
        });
    }

    /**
     * Runs the call, or answers from the call an earlier owner of the key recorded when that one succeeded (it
     * was published once; it is not run again). A success is kept with the key, a failure as {@link #keeps} says.
     */
    private CompletableFuture<IdempotentRequests.Outcome> outcome(String tenant, String caller, String name, String body,
                                                                 Optional<Long> deadline, IdempotentRequests.Run run) {
        if (run.previousCall().isPresent() && outcomes != null) {
            // the caller may call this binding (checked before the route ran): it sees that binding's calls only
            Optional<CallOutcome> earlier = outcomes.lookup(JournalScope.bindings(tenant, Set.of(name)),
                    run.previousCall().get());
            if (earlier.isPresent() && "succeeded".equals(earlier.get().state())) {
                return CompletableFuture.completedFuture(new IdempotentRequests.Outcome(new IdempotentRequests.Response(
                        200, success(earlier.get().callId().toString(), earlier.get().resultJson())), true));
            }
        }
        return run(new CallRequest(tenant, caller, name, body, deadline).onRecorded(run.onRecorded()))
                .handle((result, failure) -> {
                    if (failure == null && result != null) {
                        return new IdempotentRequests.Outcome(new IdempotentRequests.Response(200,
                                success(result.callId(), result.resultJson())), true);
                    }
                    ThresherException e = failure == null ? new ThresherException(ErrorCode.INTERNAL_ERROR,
                            "the call service completed with no result") : ThresherException.of(failure);
                    return new IdempotentRequests.Outcome(new IdempotentRequests.Response(
                            HttpStatuses.statusOf(e.code()), ErrorJson.of(e)), keeps(e));
                });
    }

    /**
     * Whether a failed call's answer is kept under its key: only a terminal failure after guest code ran (the
     * same request fails the same way). A failure before any guest, a retryable or ambiguous one, or a deadline
     * releases the key: nothing was published, and the same key may run again.
     */
    static boolean keeps(ThresherException e) {
        return e.retryClass() == RetryClass.TERMINAL && e.guestCodeRan() && e.code().category() != Category.DEADLINE;
    }

    /** SHA-256 of the route and the body's bytes: what makes two requests with one key the same request. */
    static byte[] fingerprint(String route, ByteBuf body) {
        try {
            java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-256");
            d.update(route.getBytes(StandardCharsets.UTF_8));
            d.update((byte) 0);
            d.update(body.nioBuffer());
            return d.digest();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String success(String callId, String resultJson) {
        return "{\"call_id\":\"" + callId + "\",\"result\":" + resultJson + "}";
    }
}
