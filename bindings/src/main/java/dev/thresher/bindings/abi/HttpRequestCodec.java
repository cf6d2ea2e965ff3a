package dev.thresher.bindings.abi;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The HTTP request encoding v1, what an HTTP handler's {@code handle(req_len)} reads from fd 0
 * (docs/guest-abi.md, "HTTP handlers"). A <em>str</em> is a u32 byte length, then that many bytes.
 *
 * <pre>
 * offset  size  field (all integers little-endian, no padding anywhere)
 * 0       4     magic "THQ1" (54 48 51 31)
 * 4       4     u32 route index: the matched route's place in the manifest's http.routes, from 0
 * 8       ...   str method ("GET")
 *               str path: the request path below /v1/http/&lt;binding&gt;, as received (percent-encoded), at least "/"
 *               str route: the matched route's path pattern, as declared
 *               u32 P, then P pairs (str name, str value): the path parameters in pattern order, decoded
 *               u32 Q, then Q pairs (str name, str value): the query parameters in request order, decoded
 *               u32 H, then H pairs (str name, str value): the headers given, names lower-case, values as received
 *               u32 B, then B bytes: the body
 * </pre>
 *
 * Names, the method, the path, the route and decoded values are UTF-8; header values are the bytes the request
 * carried (ISO-8859-1 as HTTP/1.1 reads them); the body is bytes.
 */
public final class HttpRequestCodec {
    /** "THQ1" read as a little-endian u32. */
    static final int MAGIC = 'T' | 'H' << 8 | 'Q' << 16 | '1' << 24;

    private HttpRequestCodec() {
    }

    /**
     * One request as a handler reads it.
     *
     * @param headers lower-case names; each value's characters are its bytes (ISO-8859-1)
     */
    public record Request(int routeIndex, String method, String path, String route, List<Map.Entry<String, String>> parameters,
                          List<Map.Entry<String, String>> query, List<Map.Entry<String, String>> headers, byte[] body) {
        public Request {
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(path, "path");
            Objects.requireNonNull(route, "route");
            parameters = List.copyOf(parameters);
            query = List.copyOf(query);
            headers = List.copyOf(headers);
            body = body.clone();
        }

        @Override
        public byte[] body() {
            return body.clone();
        }

        /** A name and a value, as the lists hold them. */
        public static Map.Entry<String, String> pair(String name, String value) {
            return new AbstractMap.SimpleImmutableEntry<>(name, value);
        }
    }

    /** @throws IllegalArgumentException for text that is not valid Unicode, or a header value beyond ISO-8859-1 */
    public static byte[] encode(Request r) {
        Out out = new Out();
        out.u32(MAGIC);
        out.u32(r.routeIndex());
        out.str(Utf8.encode(r.method(), "method"));
        out.str(Utf8.encode(r.path(), "path"));
        out.str(Utf8.encode(r.route(), "route"));
        pairs(out, r.parameters(), false);
        pairs(out, r.query(), false);
        pairs(out, r.headers(), true);
        out.str(r.body);
        return out.bytes();
    }

    private static void pairs(Out out, List<Map.Entry<String, String>> pairs, boolean latin1Values) {
        out.u32(pairs.size());
        for (Map.Entry<String, String> e : pairs) {
            out.str(Utf8.encode(e.getKey(), "name"));
            String v = e.getValue();
            if (latin1Values) {
                for (int i = 0; i < v.length(); i++) {
                    if (v.charAt(i) > 0xff) {
                        throw new IllegalArgumentException("header " + e.getKey() + " holds a character beyond ISO-8859-1");
                    }
                }
                out.str(v.getBytes(StandardCharsets.ISO_8859_1));
            } else {
                out.str(Utf8.encode(v, "value"));
            }
        }
    }

    /** @throws IllegalArgumentException when the bytes are not one request of this encoding, exactly */
    public static Request decode(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        try {
            if (b.getInt() != MAGIC) {
                throw new IllegalArgumentException("not an HTTP request v1: the magic is not THQ1");
            }
            int route = b.getInt();
            String method = text(b);
            String path = text(b);
            String pattern = text(b);
            List<Map.Entry<String, String>> params = pairs(b, false);
            List<Map.Entry<String, String>> query = pairs(b, false);
            List<Map.Entry<String, String>> headers = pairs(b, true);
            byte[] body = raw(b);
            if (b.hasRemaining()) {
                throw new IllegalArgumentException(b.remaining() + " bytes after the body");
            }
            return new Request(route, method, path, pattern, params, query, headers, body);
        } catch (java.nio.BufferUnderflowException e) {
            throw new IllegalArgumentException("the request ends early", e);
        }
    }

    private static List<Map.Entry<String, String>> pairs(ByteBuffer b, boolean latin1Values) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining() / 8) {
            throw new IllegalArgumentException("a count of " + Integer.toUnsignedString(n) + " pairs does not fit");
        }
        List<Map.Entry<String, String>> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String name = text(b);
            out.add(Request.pair(name, latin1Values ? new String(raw(b), StandardCharsets.ISO_8859_1) : text(b)));
        }
        return out;
    }

    private static byte[] raw(ByteBuffer b) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new IllegalArgumentException("a length of " + Integer.toUnsignedString(n) + " runs past the end");
        }
        byte[] out = new byte[n];
        b.get(out);
        return out;
    }

    private static String text(ByteBuffer b) {
        byte[] raw = raw(b);
        return Utf8.decode(raw, 0, raw.length, "text");
    }

    private static final class Out {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final ByteBuffer four = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);

        void u32(int v) {
            four.clear();
            four.putInt(v);
            bytes.write(four.array(), 0, 4);
        }

        void str(byte[] b) {
            u32(b.length);
            bytes.write(b, 0, b.length);
        }

        byte[] bytes() {
            return bytes.toByteArray();
        }
    }
}
