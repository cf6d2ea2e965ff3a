package dev.thresher.server.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.http.Route;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Manifests of version 1 (distributed calls) and 2 (which adds the http section of an HTTP handler). */
class ManifestTest {
    private static Manifest parse(String json) {
        return Manifest.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    private static String problems(String json) {
        try {
            parse(json);
        } catch (ThresherException e) {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION);
            return e.getMessage();
        }
        throw new AssertionError("accepted: " + json);
    }

    @Test
    void aVersionOneManifestReadsAsBeforeAndSoDoesVersionTwoWithoutHttp() {
        for (int v : new int[] {1, 2}) {
            Manifest m = parse("{\"manifestVersion\": " + v + ", \"binding\": \"revenue_by_region\", \"module\": \"m.wat\","
                    + " \"abiVersion\": 2, \"selector\": \"SELECT region, amount FROM orders\","
                    + " \"exports\": {\"run\": \"run\", \"reduce\": \"reduce\"}, \"budgets\": {\"runMs\": 5000}}");
            assertThat(m.handler()).isFalse();
            assertThat(m.routes()).isNull();
            assertThat(m.abiVersion()).isEqualTo(2);
            assertThat(m.budgets()).isEqualTo(new Budgets(5000, 0, 0, 0, 0, 0));
        }
        assertThat(problems("{\"manifestVersion\": 3}")).contains("manifest.manifestVersion: must be 1 or 2, was 3");
    }

    @Test
    void aHandlerDeclaresItsRoutesAndNoSelector() {
        Manifest m = parse("""
                {"manifestVersion": 2, "binding": "revenue_api", "module": "api.wasm",
                 "http": {"routes": [{"method": "GET", "path": "/regions/{region}/revenue", "headers": ["x-request-id"]},
                                     {"method": "POST", "path": "/regions/{region}/revenue"}]},
                 "exports": {"handle": "handle"}, "budgets": {"runMs": 2000, "memoryBytes": 1048576}}""");
        assertThat(m.handler()).isTrue();
        assertThat(m.selector()).isNull();
        assertThat(m.routes()).containsExactly(new Route("GET", "/regions/{region}/revenue", List.of("x-request-id")),
                new Route("POST", "/regions/{region}/revenue"));
        assertThat(m.budgets()).isEqualTo(new Budgets(2000, 1048576, 0, 0, 0, 0));
    }

    @Test
    void aRefusalQuotesWhatTheManifestSaysAndNamesAtMostTwentyProblems() {
        StringBuilder json = new StringBuilder("{\"manifestVersion\": 1, \"binding\": \"b\\u001b[31m\", ");
        for (int i = 0; i < 100; i++) {
            json.append("\"f").append(i).append("\\u202e").append("x".repeat(500)).append("\": 1, ");
        }
        json.append("\"module\": \"m.wasm\", \"abiVersion\": 2, \"selector\": \"SELECT a FROM t\"}");
        assertThatThrownBy(() -> Manifest.parse(json.toString().getBytes(StandardCharsets.UTF_8)))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION);
                    // kills: Manifest.parse's bound on the problems named (101 problems of 500 characters each)
                    assertThat(e.getMessage()).contains("; and 81 more problems").hasSizeLessThan(12_000);
                    // kills: the quoting of a field's name (a raw U+202E and 500 characters per field reached the message)
                    assertThat(e.getMessage()).doesNotContain("\u202e").contains("\\u202e").doesNotContain("x".repeat(100));
                });
        // kills: the quoting of the binding's name (a raw ESC reached the message)
        assertThat(problems("{\"manifestVersion\": 1, \"binding\": \"b\\u001b[31m\", \"module\": \"m.wasm\","
                + " \"abiVersion\": 2, \"selector\": \"SELECT a FROM t\"}")).doesNotContain("\u001b")
                .contains("manifest.binding: 'b\\x1b[31m'");
    }

    @Test
    void everyProblemOfAHandlersManifestIsNamedAtOnce() {
        assertThat(problems("""
                {"manifestVersion": 1, "binding": "h", "module": "h.wasm", "http": {"routes": []}}"""))
                .contains("manifest.http: a field of manifest version 2");
        String all = problems("""
                {"manifestVersion": 2, "binding": "h", "module": "h.wasm", "abiVersion": 2, "selector": "SELECT 1",
                 "exports": {"run": "run"}, "budgets": {"emits": 3},
                 "http": {"routes": [{"method": "GET", "path": "/a/{x}", "colour": 1},
                                     {"method": "get", "path": "a"}], "cors": true}}""");
        assertThat(all).contains(
                "manifest.abiVersion: an HTTP handler (a manifest with an http section) has no abiVersion",
                "manifest.selector: an HTTP handler (a manifest with an http section) has no selector",
                "manifest.exports.run: unknown export role; the roles of an HTTP handler are handle",
                "manifest.budgets.emits: not a budget of an HTTP handler",
                "manifest.http.cors: unknown field",
                "manifest.http.routes[0].colour: unknown field",
                "manifest.http.routes[1].method: must be one of [GET, POST, PUT, PATCH, DELETE], was 'get'",
                "manifest.http.routes[1].path: 'a' must start with /");
        assertThat(problems("""
                {"manifestVersion": 2, "binding": "h", "module": "h.wasm",
                 "http": {"routes": [{"method": "GET", "path": "/a/{x}"}, {"method": "GET", "path": "/{y}/b"}]}}"""))
                .isEqualTo("manifest.http.routes[1]: GET /{y}/b conflicts with manifest.http.routes[0] GET /a/{x}: both"
                        + " match GET /a/b");
        assertThat(problems("{\"manifestVersion\": 2, \"binding\": \"h\", \"module\": \"h.wasm\", \"http\": {}}"))
                .contains("manifest.http.routes: must be an array of 1 to 32 routes, was missing");
        assertThatThrownBy(() -> parse("{\"manifestVersion\": 2, \"binding\": \"h\", \"module\": \"h.wasm\", \"http\": []}"))
                .hasMessageContaining("manifest.http: must be an object");
    }
}
