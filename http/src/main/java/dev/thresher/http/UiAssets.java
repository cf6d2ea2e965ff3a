package dev.thresher.http;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Optional;

/**
 * The node's page for people, {@code /ui/}: static files (no data in them) read once from the classpath. The page
 * reads the journal through {@code /admin/invocations} with the admin token the person gives it (or the URL's
 * {@code #token=} fragment, which browsers never send), so the files themselves need no token.
 */
final class UiAssets {
    private static final Map<String, String> FILES = Map.of(
            "/ui/", "index.html",
            "/ui/app.js", "app.js",
            "/ui/app.css", "app.css");
    private static final Map<String, String> TYPES = Map.of(
            "index.html", "text/html; charset=utf-8",
            "app.js", "text/javascript; charset=utf-8",
            "app.css", "text/css; charset=utf-8");
    private static final Map<String, byte[]> CONTENT = load();
    /** Only this node's own files and requests; no inline script; never framed. */
    static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
            + " img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    private UiAssets() {}

    /** Registers {@code GET} of {@code /}, {@code /ui} (both redirected to {@code /ui/}) and every path under {@code /ui/}. */
    static void register(RouteTable<Exchange.Route> routes) {
        Exchange.Route route = x -> get(x.path()).ifPresentOrElse(x::write, x::noRoute);
        routes.add(io.netty.handler.codec.http.HttpMethod.GET, "/", route)
                .add(io.netty.handler.codec.http.HttpMethod.GET, "/ui", route)
                .add(io.netty.handler.codec.http.HttpMethod.GET, "/ui/{file...}", route);
    }

    /** The answer to a GET of {@code path}, or empty when no such file exists (a 404). */
    static Optional<FullHttpResponse> get(String path) {
        if (path.equals("/") || path.equals("/ui")) {
            FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.FOUND);
            res.headers().set(HttpHeaderNames.LOCATION, "/ui/");
            HttpUtil.setContentLength(res, 0);
            return Optional.of(res);
        }
        String file = FILES.get(path);
        if (file == null) {
            return Optional.empty();
        }
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                Unpooled.wrappedBuffer(CONTENT.get(file)));
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, TYPES.get(file));
        res.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
        res.headers().set("Content-Security-Policy", CSP);
        res.headers().set("X-Content-Type-Options", "nosniff");
        res.headers().set("Referrer-Policy", "no-referrer");
        HttpUtil.setContentLength(res, res.content().readableBytes());
        return Optional.of(res);
    }

    private static Map<String, byte[]> load() {
        java.util.HashMap<String, byte[]> m = new java.util.HashMap<>();
        for (String file : FILES.values()) {
            try (InputStream in = UiAssets.class.getResourceAsStream("ui/" + file)) {
                if (in == null) {
                    throw new IllegalStateException("the page's file ui/" + file + " is missing from the build");
                }
                m.put(file, in.readAllBytes());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return Map.copyOf(m);
    }
}
