package dev.thresher.http;

import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request being answered, as a route sees it: the request, who sent it (authenticated already), what the route's
 * pattern captured, and the one answer it is owed. A route answers exactly once, now or once its work completes
 * ({@link #finish}); the request's body is read before the route returns (it is released then).
 */
final class Exchange {
    private static final Logger log = LoggerFactory.getLogger(Exchange.class);

    /** What answers a route of the front door. */
    @FunctionalInterface
    interface Route {
        void answer(Exchange x);
    }

    private final ChannelHandlerContext ctx;
    private final FullHttpRequest request;
    private final String path;
    private final String tenant;
    private final String caller;
    private final Consumer<FullHttpResponse> writer;
    private Map<String, String> captures = Map.of();

    /**
     * @param tenant the tenant the request runs in: its user's, or the node's
     * @param caller the user the request runs as: the principal of its calls
     * @param writer writes the answer on the connection
     */
    Exchange(ChannelHandlerContext ctx, FullHttpRequest request, String path, String tenant, String caller,
             Consumer<FullHttpResponse> writer) {
        this.ctx = ctx;
        this.request = request;
        this.path = path;
        this.tenant = tenant;
        this.caller = caller;
        this.writer = writer;
    }

    Exchange captured(Map<String, String> captures) {
        this.captures = Map.copyOf(captures);
        return this;
    }

    ChannelHandlerContext ctx() {
        return ctx;
    }

    FullHttpRequest request() {
        return request;
    }

    HttpMethod method() {
        return request.method();
    }

    /** The request target's path: before its {@code ?}, not decoded. */
    String path() {
        return path;
    }

    /** The request target as sent, query included. */
    String uri() {
        return request.uri();
    }

    String tenant() {
        return tenant;
    }

    String caller() {
        return caller;
    }

    /** What the route's {@code {name}} segment captured, as sent. */
    String capture(String name) {
        String v = captures.get(name);
        if (v == null) {
            throw new IllegalStateException("the route captured no " + name);
        }
        return v;
    }

    /** Answers with {@code res}. */
    void write(FullHttpResponse res) {
        writer.accept(res);
    }

    /** Answers {@code json} with {@code status}. */
    void send(HttpResponseStatus status, String json) {
        write(Responses.json(status, json));
    }

    /** Answers the failure {@code e}: its code's status, its error JSON. */
    void fail(ThresherException e) {
        write(Responses.failure(e));
    }

    /** Answers 404: no route serves this path. */
    void noRoute() {
        write(Responses.noRoute(method(), path));
    }

    /** Answers 405: the path is served with {@code allowed}, each named in {@code Allow}. */
    void wrongMethod(List<HttpMethod> allowed) {
        FullHttpResponse res = Responses.json(HttpResponseStatus.METHOD_NOT_ALLOWED, ErrorJson.of(new ThresherException(
                ErrorCode.UNSUPPORTED_STATEMENT, Quoted.of(path) + " serves " + allowed.stream().map(HttpMethod::name)
                .collect(Collectors.joining(" or ")) + ", not " + method())));
        res.headers().set(HttpHeaderNames.ALLOW, allowed.stream().map(HttpMethod::name).collect(Collectors.joining(", ")));
        write(res);
    }

    /**
     * The body of an upload ({@link UploadRequests}) as it arrives, to be read to its end on a worker thread, never
     * the event loop; empty for any other request, whose body is {@link #body} whole.
     */
    Optional<java.io.InputStream> upload() {
        return request instanceof UploadRequests.UploadRequest u ? Optional.of(u.body) : Optional.empty();
    }

    /** The body as text; when it is not UTF-8, answers {@code INVALID_TEXT_ENCODING} and returns empty. */
    Optional<String> body() {
        Optional<String> body = Utf8.decode(request.content().nioBuffer());
        if (body.isEmpty()) {
            fail(new ThresherException(ErrorCode.INVALID_TEXT_ENCODING, "the body is not valid UTF-8"));
        }
        return body;
    }

    /**
     * Once {@code work} completes, {@code done} answers with its value or failure, on the connection's event loop;
     * when the connection closed meanwhile, or the loop shut down, nothing is answered ({@code what} says what is
     * dropped, in the log).
     */
    <T> void finish(CompletableFuture<T> work, String what, BiConsumer<T, Throwable> done) {
        work.whenComplete((value, failure) -> {
            try {
                ctx.executor().execute(() -> {
                    if (!ctx.channel().isActive()) {
                        log.debug("{} closed before {} completed; dropping the answer", ctx.channel(), what);
                        return;
                    }
                    done.accept(value, failure);
                });
            } catch (RejectedExecutionException e) {
                log.debug("event loop shut down; dropping the answer of {}", what);
            }
        });
    }
}
