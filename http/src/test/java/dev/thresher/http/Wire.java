package dev.thresher.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.limits.Limits;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/** Test support: a stub call service, and HTTP/1.1 spoken byte by byte over a real socket. */
final class Wire {
    static final ObjectMapper JSON = new ObjectMapper();
    /** Every bounded wait of these tests; generous, because a passing test never waits for it. */
    static final int WAIT_MS = 10_000;

    private Wire() {}

    static Limits limits(Map<String, String> overrides) {
        Map<String, String> p = new HashMap<>();
        overrides.forEach((k, v) -> p.put("limits." + k, v));
        return Limits.fromProperties(p);
    }

    /** Answers each call with {@code behaviour}; records every request and the most calls in flight at once. */
    static final class StubCalls implements CallService {
        final LinkedBlockingQueue<CallRequest> requests = new LinkedBlockingQueue<>();
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicInteger maxInFlight = new AtomicInteger();
        final Map<String, CompletableFuture<CallResult>> held = new ConcurrentHashMap<>();
        private final Function<CallRequest, CompletableFuture<CallResult>> behaviour;

        StubCalls(Function<CallRequest, CompletableFuture<CallResult>> behaviour) {
            this.behaviour = behaviour;
        }

        /** Echoes the binding name and the arguments at once. */
        static StubCalls echo() {
            return new StubCalls(r -> CompletableFuture.completedFuture(echoOf(r)));
        }

        static CallResult echoOf(CallRequest r) {
            return new CallResult("call-" + r.bindingName(), "{\"binding\":\"" + r.bindingName() + "\",\"args\":" + r.argumentsJson() + "}");
        }

        @Override
        public CompletableFuture<CallResult> call(CallRequest request) {
            requests.add(request);
            maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            CompletableFuture<CallResult> f = behaviour.apply(request);
            return f.whenComplete((r, e) -> inFlight.decrementAndGet());
        }
    }

    record Response(int status, Map<String, String> headers, String body) {
        JsonNode json() throws IOException {
            return JSON.readTree(body);
        }

        int errorCode() throws IOException {
            return json().path("error").path("code").asInt();
        }

        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    static Socket connect(HttpFront front) throws IOException {
        Socket s = new Socket("127.0.0.1", front.port());
        s.setSoTimeout(WAIT_MS);
        return s;
    }

    static void send(Socket s, String text) throws IOException {
        send(s, text.getBytes(StandardCharsets.ISO_8859_1));
    }

    static void send(Socket s, byte[] bytes) throws IOException {
        s.getOutputStream().write(bytes);
        s.getOutputStream().flush();
    }

    static String post(String path, String body) {
        return post(path, body.getBytes(StandardCharsets.UTF_8));
    }

    static String post(String path, byte[] body) {
        return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: " + body.length
                + "\r\n\r\n" + new String(body, StandardCharsets.ISO_8859_1);
    }

    static String get(String path) {
        return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n";
    }

    /** Reads one response with a Content-Length body; fails if none arrives within the socket's timeout. */
    static Response read(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        String head = readHead(in);
        if (head == null) {
            throw new IOException("connection closed before a response");
        }
        String[] lines = head.split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
        }
        int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
        byte[] body = in.readNBytes(length);
        if (body.length != length) {
            throw new IOException("connection closed inside a response body");
        }
        return new Response(status, headers, new String(body, StandardCharsets.UTF_8));
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (true) {
            int b = in.read();
            if (b < 0) {
                return head.size() == 0 ? null : head.toString(StandardCharsets.ISO_8859_1);
            }
            head.write(b);
            byte[] h = head.toByteArray();
            int n = h.length;
            if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
                return new String(h, 0, n - 4, StandardCharsets.ISO_8859_1);
            }
        }
    }

    /**
     * Whether the server closed the connection within the socket's timeout: end of stream or a reset.
     * Bytes that arrive first are skipped.
     */
    static boolean closedByServer(Socket s) throws IOException {
        try {
            InputStream in = s.getInputStream();
            byte[] buf = new byte[4096];
            while (in.read(buf) >= 0) {
                // skip
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (SocketException e) {
            return true; // reset
        }
    }
}
