package dev.thresher.http;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /metrics}: the node's metrics for a Prometheus scraper, in the Prometheus text exposition format
 * (version 0.0.4), or in OpenMetrics text when the request's {@code Accept} prefers it. Open, like the health
 * probes. What is measured and how it is written is the node's ({@link Scrape}); this class only serves it, on the
 * event loop: a scrape reads counters and gauges, it never blocks. docs/operations.md, "Metrics", lists the series.
 */
public final class MetricsRoute {
    private static final Logger log = LoggerFactory.getLogger(MetricsRoute.class);

    public static final String PATH = "/metrics";
    /** The Prometheus text exposition format. */
    public static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
    /** OpenMetrics text. */
    public static final String OPENMETRICS_TEXT = "application/openmetrics-text; version=1.0.0; charset=utf-8";

    /** Writes the node's metrics in the format of a content type: {@link #PROMETHEUS_TEXT} or {@link #OPENMETRICS_TEXT}. */
    @FunctionalInterface
    public interface Scrape {
        String scrape(String contentType);
    }

    private volatile Scrape scrape;

    /** Serves {@code scrape} from now on. */
    void serve(Scrape scrape) {
        this.scrape = scrape;
    }

    /** Whether a scrape is served: until then the path is no route. */
    boolean served() {
        return scrape != null;
    }

    /** Registers {@code GET /metrics}, a route once a scrape is served (until then the path is no route). */
    void register(RouteTable<Exchange.Route> routes) {
        routes.add(io.netty.handler.codec.http.HttpMethod.GET, PATH, this::served,
                x -> x.write(answer(x.request().headers().get(HttpHeaderNames.ACCEPT))));
    }

    /** The answer to {@code GET /metrics} with this {@code Accept} header (null when absent). */
    FullHttpResponse answer(String accept) {
        String type = contentType(accept);
        HttpResponseStatus status = HttpResponseStatus.OK;
        String body;
        try {
            body = scrape.scrape(type);
        } catch (RuntimeException e) {
            log.warn("the metrics scrape failed: {}", e.toString());
            status = HttpResponseStatus.INTERNAL_SERVER_ERROR;
            type = "text/plain; charset=utf-8";
            body = "the metrics scrape failed: " + e + "\n";
        }
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, type);
        HttpUtil.setContentLength(res, res.content().readableBytes());
        return res;
    }

    /**
     * The format to answer in: OpenMetrics when the {@code Accept} header offers it (any version) with a quality
     * above zero and at least that of {@code text/plain}; otherwise the Prometheus text format, which every scraper
     * reads.
     */
    static String contentType(String accept) {
        if (accept == null) {
            return PROMETHEUS_TEXT;
        }
        double openMetrics = 0;
        double text = 0;
        for (String range : accept.split(",")) {
            String[] parts = range.split(";");
            String media = parts[0].trim().toLowerCase(Locale.ROOT);
            double q = 1;
            for (int i = 1; i < parts.length; i++) {
                String p = parts[i].trim();
                if (p.regionMatches(true, 0, "q=", 0, 2)) {
                    try {
                        q = Double.parseDouble(p.substring(2).trim());
                    } catch (NumberFormatException e) {
                        q = 0;
                    }
                }
            }
            if (media.equals("application/openmetrics-text")) {
                openMetrics = Math.max(openMetrics, q);
            } else if (media.equals("text/plain")) {
                text = Math.max(text, q);
            }
        }
        return openMetrics > 0 && openMetrics >= text ? OPENMETRICS_TEXT : PROMETHEUS_TEXT;
    }
}
