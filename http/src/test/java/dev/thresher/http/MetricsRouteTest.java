package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.limits.Limits;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code GET /metrics}: content negotiation, the route once a scrape is served, and a scrape that fails. */
class MetricsRouteTest {
    private HttpFront front;

    @AfterEach
    void stop() {
        if (front != null) {
            front.close();
        }
    }

    @Test
    void theFormatIsOpenMetricsOnlyWhenTheScraperPrefersIt() {
        assertThat(MetricsRoute.contentType(null)).isEqualTo(MetricsRoute.PROMETHEUS_TEXT);
        assertThat(MetricsRoute.contentType("*/*")).isEqualTo(MetricsRoute.PROMETHEUS_TEXT);
        assertThat(MetricsRoute.contentType("text/plain;version=0.0.4")).isEqualTo(MetricsRoute.PROMETHEUS_TEXT);
        assertThat(MetricsRoute.contentType("application/openmetrics-text")).isEqualTo(MetricsRoute.OPENMETRICS_TEXT);
        // what Prometheus sends by default
        assertThat(MetricsRoute.contentType("application/openmetrics-text;version=1.0.0;q=0.5,"
                + "application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"))
                .isEqualTo(MetricsRoute.OPENMETRICS_TEXT);
        assertThat(MetricsRoute.contentType("application/openmetrics-text;q=0.2, text/plain;q=0.9"))
                .isEqualTo(MetricsRoute.PROMETHEUS_TEXT);
        assertThat(MetricsRoute.contentType("application/openmetrics-text;q=0")).isEqualTo(MetricsRoute.PROMETHEUS_TEXT);
        assertThat(MetricsRoute.contentType("Application/OpenMetrics-Text; Q=bad")).isEqualTo(MetricsRoute.PROMETHEUS_TEXT);
    }

    private HttpResponse<String> get(String accept) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + front.port() + "/metrics"))
                .timeout(Duration.ofMillis(Wire.WAIT_MS)).GET();
        if (accept != null) {
            b.header("Accept", accept);
        }
        return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theRouteAnswersTheNodesScrapeInTheNegotiatedFormatOnceServed() throws Exception {
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(Limits.DEFAULTS)
                .calls(Wire.StubCalls.echo()).start();
        assertThat(get(null).statusCode()).as("no scrape served yet: no route").isEqualTo(404);

        front.serveMetrics(type -> "# format " + type + "\nup 1\n");

        HttpResponse<String> text = get(null);
        assertThat(text.statusCode()).isEqualTo(200);
        assertThat(text.headers().firstValue("content-type")).contains(MetricsRoute.PROMETHEUS_TEXT);
        assertThat(text.body()).isEqualTo("# format " + MetricsRoute.PROMETHEUS_TEXT + "\nup 1\n");
        HttpResponse<String> open = get("application/openmetrics-text; version=1.0.0");
        assertThat(open.headers().firstValue("content-type")).contains(MetricsRoute.OPENMETRICS_TEXT);
        assertThat(open.body()).startsWith("# format " + MetricsRoute.OPENMETRICS_TEXT);

        HttpResponse<String> post = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + front.port() + "/metrics"))
                .timeout(Duration.ofMillis(Wire.WAIT_MS)).POST(HttpRequest.BodyPublishers.ofString("")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("allow")).contains("GET");
    }

    @Test
    void aScrapeThatFailsIsAnswered500AndTheConnectionGoesOn() throws Exception {
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(Limits.DEFAULTS)
                .calls(Wire.StubCalls.echo()).start();
        front.serveMetrics(type -> {
            throw new IllegalStateException("broken gauge");
        });

        HttpResponse<String> res = get(null);

        assertThat(res.statusCode()).isEqualTo(500);
        assertThat(res.body()).contains("broken gauge");
        assertThat(get(null).statusCode()).isEqualTo(500);
    }
}
