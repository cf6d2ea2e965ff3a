package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.BindingService;
import dev.thresher.bindings.HandlerResponse;
import dev.thresher.bindings.HandlerService;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.TableService;
import dev.thresher.bindings.TopologyService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpServerCodec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Timeout;

/**
 * Whatever bytes a client sends, the HTTP front (its own pipeline, {@link HttpFront#configure}: Netty's HTTP/1.1 codec,
 * the aggregator, an {@link HttpConnection} with every route served) answers with well-formed HTTP responses only,
 * none of them an internal error, lets no exception out of the pipeline, sends a bounded amount, and closes the
 * connection only after a response that says so; the same bytes give the same responses whether they come at once or
 * in pieces. Services answer at once and always the same way, so one input always gives one output. Regression
 * inputs: {@code src/test/resources/dev/thresher/http/HttpFrontFuzzTestInputs/requests/}; fuzzing: docs/security.md,
 * "Fuzzing".
 */
class HttpFrontFuzzTest {
    static final String TOKEN = "fuzzing-admin-token-0123456789";
    private static final String TENANT = "t1";
    private static final int OUTPUT_BOUND_BYTES = 4 << 20;
    /** Small, so that a fuzz input reaches the refusal of a body over the limit. */
    private static final Limits LIMITS = Wire.limits(Map.of("directCallPayloadBytes", "2048"));
    /** How long one input may take: far above what any takes, so passing it means a loop or a blow-up. */
    private static final long INPUT_BOUND_MS = 5_000;

    @Timeout(30)
    @FuzzTest
    void requests(byte[] input) {
        long start = System.nanoTime();
        Connection whole = new Connection().feed(input, new int[] {input.length});
        Connection pieces = new Connection().feed(input, pieces(input));
        // Interim responses are not compared: whether a client is told to go on depends on what arrived meanwhile.
        List<Response> answered = finals(whole.check());
        assertThat(finals(pieces.check())).as("the responses to the same bytes in pieces").isEqualTo(answered);
        whole.channel.finishAndReleaseAll();
        pieces.channel.finishAndReleaseAll();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("milliseconds the input took")
                .isLessThan(INPUT_BOUND_MS);
    }

    private static List<Response> finals(List<Response> responses) {
        return responses.stream().filter(r -> r.status() >= 200).toList();
    }

    /** Piece sizes from 1 to 16 bytes, the same for the same input. */
    private static int[] pieces(byte[] input) {
        Random random = new Random(Arrays.hashCode(input));
        int[] sizes = new int[64];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = 1 + random.nextInt(16);
        }
        return sizes;
    }

    /** One response as sent: its status, headers (names in lower case) and body. */
    record Response(int status, Map<String, String> headers, String body) {
    }

    /** One connection of the front on an {@link EmbeddedChannel}. */
    private static final class Connection {
        final EmbeddedChannel channel;
        /** The methods of the requests the codec decoded, in order: a response to HEAD has no body. */
        final List<HttpMethod> methods = new ArrayList<>();
        /** For each interim response written, the number of requests decoded before the one it answers. */
        final List<Integer> interimFor = new ArrayList<>();
        final ByteArrayOutputStream sent = new ByteArrayOutputStream();

        Connection() {
            HttpConnection handler = HttpFront.builder().tenant(TENANT).limits(LIMITS).calls(CALLS)
                    .tables(service(TableService.class)).bindings(service(BindingService.class))
                    .topologyChanges(service(TopologyService.class)).adminExecutor(Runnable::run)
                    .journal((tenant, select) -> new JournalRows(select.resolvedColumns(), List.of(), false))
                    .topology(() -> "{\"partitions\":[]}")
                    .access(new HttpAccess(Optional.of(TOKEN), HttpAccess.OpenEndpoints.ANYWHERE))
                    .connection(new AtomicInteger(), metrics(), handlers());
            channel = new EmbeddedChannel(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    HttpFront.configure(ch.pipeline(), LIMITS, handler);
                    ch.pipeline().addAfter(ch.pipeline().context(HttpServerCodec.class).name(), "fuzz-requests",
                            new ChannelDuplexHandler() {
                                @Override
                                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                    if (msg instanceof HttpRequest r) {
                                        methods.add(r.method());
                                    }
                                    ctx.fireChannelRead(msg);
                                }

                                @Override
                                public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                                    if (msg instanceof HttpResponse r && r.status().code() < 200) {
                                        interimFor.add(methods.size() - 1);
                                    }
                                    ctx.write(msg, promise);
                                }
                            });
                }
            });
        }

        /** Feeds the bytes in pieces of these sizes (cycled) until all are fed or the front closed the connection. */
        Connection feed(byte[] bytes, int[] sizes) {
            int at = 0;
            for (int i = 0; at < bytes.length && channel.isOpen(); i++) {
                int n = Math.min(bytes.length - at, Math.max(1, sizes[i % sizes.length]));
                channel.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(bytes, at, at + n)));
                channel.runPendingTasks();
                collect();
                at += n;
            }
            channel.runPendingTasks();
            collect();
            channel.checkException();
            assertThat((Object) channel.readInbound()).as("a message that passed the handler").isNull();
            return this;
        }

        private void collect() {
            ByteBuf buf;
            while ((buf = channel.readOutbound()) != null) {
                try {
                    buf.readBytes(sent, buf.readableBytes());
                } catch (IOException e) {
                    throw new AssertionError(e);
                } finally {
                    buf.release();
                }
                assertThat(sent.size()).as("bytes the front answered").isLessThan(OUTPUT_BOUND_BYTES);
            }
        }

        /**
         * The responses sent, each of which must be well-formed: a status line, headers, and as many body bytes as its
         * Content-Length says (none for 1xx, 204, 304 and a response to HEAD); a JSON error names its code and is
         * never internal; and the connection is closed exactly when a response said {@code Connection: close}, after
         * it; an interim response (100 Continue) comes only once every earlier request is answered.
         */
        List<Response> check() {
            byte[] bytes = sent.toByteArray();
            List<Response> responses = new ArrayList<>();
            int at = 0;
            int answered = 0;
            int interims = 0;
            while (at < bytes.length) {
                int end = indexOf(bytes, "\r\n\r\n".getBytes(StandardCharsets.US_ASCII), at);
                assertThat(end).as("the end of a response head").isNotNegative();
                String[] lines = new String(bytes, at, end - at, StandardCharsets.ISO_8859_1).split("\r\n");
                assertThat(lines[0]).as("a status line").matches("HTTP/1\\.1 [1-5][0-9][0-9] [ -~]*");
                int status = Integer.parseInt(lines[0].substring(9, 12));
                Map<String, String> headers = new LinkedHashMap<>();
                for (int i = 1; i < lines.length; i++) {
                    int colon = lines[i].indexOf(':');
                    assertThat(colon).as("a header line: " + lines[i]).isPositive();
                    headers.put(lines[i].substring(0, colon).toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).strip());
                }
                at = end + 4;
                boolean informational = status < 200;
                if (informational) {
                    assertThat(interimFor).as("interim responses written").hasSizeGreaterThan(interims);
                    assertThat(interimFor.get(interims++)).as("requests answered before an interim response to a later"
                            + " one").isEqualTo(answered);
                }
                HttpMethod method = informational ? null : answered < methods.size() ? methods.get(answered) : null;
                if (!informational) {
                    answered++;
                }
                int length = 0;
                if (!informational && status != 204 && status != 304 && !HttpMethod.HEAD.equals(method)) {
                    assertThat(headers).as("headers of a " + status).containsKey("content-length");
                    length = Integer.parseInt(headers.get("content-length"));
                    assertThat(length).as("Content-Length").isBetween(0, bytes.length - at);
                }
                String body = new String(bytes, at, length, StandardCharsets.UTF_8);
                at += length;
                assertThat(status).as("a status that is not an internal failure: " + body).isNotEqualTo(500);
                if (headers.getOrDefault("content-type", "").startsWith("application/json") && length > 0) {
                    JsonNode json = json(body);
                    if (status >= 400) {
                        assertThat(json.path("error").path("code").isInt()).as("an error's code: " + body).isTrue();
                        assertThat(json.path("error").path("category").asText()).isNotEqualTo("INTERNAL");
                    }
                }
                responses.add(new Response(status, headers, body));
            }
            boolean saidClose = !responses.isEmpty()
                    && "close".equalsIgnoreCase(responses.getLast().headers().get("connection"));
            for (int i = 0; i < responses.size() - 1; i++) {
                assertThat(responses.get(i).headers().get("connection")).as("a response before the last")
                        .isNotEqualToIgnoringCase("close");
            }
            assertThat(channel.isOpen()).as("the connection open after " + responses.size() + " responses")
                    .isEqualTo(!saidClose);
            return responses;
        }
    }

    private static JsonNode json(String body) {
        try {
            return Wire.JSON.readTree(body);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + body, e);
        }
    }

    private static int indexOf(byte[] bytes, byte[] what, int from) {
        outer:
        for (int i = from; i <= bytes.length - what.length; i++) {
            for (int j = 0; j < what.length; j++) {
                if (bytes[i + j] != what[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /**
     * A binding named like an error code fails with it; any other returns its name and arguments at once. Arguments
     * that are not one JSON value are refused, as the coordinator refuses them.
     */
    private static final Wire.StubCalls CALLS = new Wire.StubCalls(r -> {
        try (com.fasterxml.jackson.core.JsonParser p = Wire.JSON.createParser(r.argumentsJson())) {
            Wire.JSON.readTree(p);
            if (p.nextToken() != null) {
                throw new IOException("more than one value");
            }
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new ThresherException(ErrorCode.INVALID_ARGUMENTS, "not JSON"));
        }
        for (ErrorCode code : ErrorCode.values()) {
            if (code.category() != dev.thresher.errors.Category.INTERNAL && code.name().equalsIgnoreCase(r.bindingName())) {
                return CompletableFuture.failedFuture(new ThresherException(code, "failed as asked"));
            }
        }
        return CompletableFuture.completedFuture(Wire.StubCalls.echoOf(r));
    });

    /**
     * A service of the admin routes: lists are empty, lookups find nothing, every change is refused; a binding's
     * history is refused as unknown, as the real one refuses a binding with no versions.
     */
    private static <T> T service(Class<T> type) {
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
            if (method.getDeclaringClass() == Object.class) {
                return switch (method.getName()) {
                    case "equals" -> proxy == args[0];
                    case "hashCode" -> System.identityHashCode(proxy);
                    default -> type.getSimpleName();
                };
            }
            if (method.getName().equals("history")) {
                throw new ThresherException(ErrorCode.UNKNOWN_BINDING, "no binding " + args[1]);
            }
            if (method.getReturnType() == List.class) {
                return List.of();
            }
            if (method.getReturnType() == Optional.class) {
                return Optional.empty();
            }
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, method.getName() + ": not in this test's cluster");
        }));
    }

    private static MetricsRoute metrics() {
        MetricsRoute metrics = new MetricsRoute();
        metrics.serve(contentType -> "# TYPE thresher_calls counter\nthresher_calls_total 1\n");
        return metrics;
    }

    /** Handler {@code echo} answers the request's body; any other handler is not there. */
    private static HandlerRoutes handlers() {
        HandlerRoutes routes = new HandlerRoutes(LIMITS, null);
        HandlerService service = request -> request.binding().equals("echo")
                ? CompletableFuture.completedFuture(new HandlerResponse(200, List.of(Map.entry("content-type",
                        "text/plain")), request.body()))
                : CompletableFuture.failedFuture(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "no route",
                        new HandlerService.RouteRefusal(Set.of("GET"))));
        routes.serve(service);
        return routes;
    }
}
