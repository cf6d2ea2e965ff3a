package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Who may use which route: the admin token, the open endpoints, the direct call route. */
class HttpAccessTest {
    private static final String TOKEN = "s3cret-token-0123456789";
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 40000);
    private static final InetSocketAddress REMOTE = new InetSocketAddress("192.0.2.7", 40000);

    private final Wire.StubCalls calls = Wire.StubCalls.echo();
    private HttpFront front;

    @AfterEach
    void stop() {
        if (front != null) {
            front.close();
        }
    }

    private static void refused(HttpAccess access, String path, InetSocketAddress peer, String authorization) {
        assertThatThrownBy(() -> access.check(path, false, peer, authorization))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.AUTHENTICATION_FAILED));
    }

    @Test
    void theHealthAndMetricsRoutesAreOpenOnLoopbackOnlyByDefault() {
        HttpAccess access = HttpAccess.withToken(TOKEN);
        for (String path : new String[] {"/livez", "/readyz", "/metrics"}) {
            assertThatCode(() -> access.check(path, false, LOOPBACK, null)).doesNotThrowAnyException();
            refused(access, path, REMOTE, null);
            assertThatCode(() -> access.check(path, false, REMOTE, "Bearer " + TOKEN)).doesNotThrowAnyException();
        }
        HttpAccess anywhere = new HttpAccess(Optional.of(TOKEN), HttpAccess.OpenEndpoints.ANYWHERE);
        assertThatCode(() -> anywhere.check("/metrics", false, REMOTE, null)).doesNotThrowAnyException();
        HttpAccess nowhere = new HttpAccess(Optional.of(TOKEN), HttpAccess.OpenEndpoints.NOWHERE);
        refused(nowhere, "/livez", LOOPBACK, null);
    }

    @Test
    void adminRoutesNeedTheTokenFromAnyPeerAndAMissingMalformedOrWrongOneIsTheSameRefusal() {
        HttpAccess access = HttpAccess.withToken(TOKEN);
        for (String path : new String[] {"/admin", "/admin/topology", "/admin/invocations/abc", "/v1/http/shop/orders"}) {
            refused(access, path, LOOPBACK, null);
            refused(access, path, LOOPBACK, "Bearer");
            refused(access, path, LOOPBACK, "Basic " + TOKEN);
            refused(access, path, LOOPBACK, "Bearer " + TOKEN + "x");
            refused(access, path, LOOPBACK, "Bearer " + TOKEN.substring(1));
            assertThatCode(() -> access.check(path, false, REMOTE, "Bearer " + TOKEN)).doesNotThrowAnyException();
            assertThatCode(() -> access.check(path, false, REMOTE, "bearer  " + TOKEN + " ")).doesNotThrowAnyException();
        }
        // the direct call route needs a token too; an unknown path is a 404 for anyone
        assertThatThrownBy(() -> access.check("/v1/bindings/sum/call", true, LOOPBACK, null))
                .isInstanceOf(ThresherException.class);
        assertThatCode(() -> access.check("/v1/bindings/sum/call", true, REMOTE, "Bearer " + TOKEN))
                .doesNotThrowAnyException();
        assertThatCode(() -> access.check("/nowhere", false, REMOTE, null)).doesNotThrowAnyException();
    }

    @Test
    void aNodeWithoutATokenServesNoGuardedRouteToAnyone() {
        assertThatThrownBy(() -> HttpAccess.NO_TOKEN.check("/admin/topology", false, LOOPBACK, "Bearer anything-at-all-0000"))
                .hasMessageContaining("http.adminToken");
    }

    @Test
    void aShortOrUnprintableTokenIsRefusedAndTheTokenIsNeverPrinted() {
        assertThatThrownBy(() -> HttpAccess.withToken("short")).hasMessageContaining("at least 16");
        assertThatThrownBy(() -> HttpAccess.withToken("has space in the middle")).hasMessageContaining("printable");
        assertThat(HttpAccess.withToken(TOKEN).toString()).doesNotContain(TOKEN).contains("(set)");
        assertThatThrownBy(() -> HttpAccess.OpenEndpoints.parse("lan")).hasMessageContaining("loopback, anywhere or nowhere");
    }

    @Test
    void overHttpAGuardedRouteAnswers401WithABearerChallengeAndTheRightTokenPassesTheGuard() throws Exception {
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(Limits.DEFAULTS).calls(calls)
                .topology(() -> "{\"topology\":1}").access(HttpAccess.withToken(TOKEN)).start();
        HttpClient client = HttpClient.newHttpClient();
        URI topology = URI.create("http://127.0.0.1:" + front.port() + "/admin/topology");
        HttpResponse<String> refused = client.send(HttpRequest.newBuilder(topology).timeout(Duration.ofMillis(Wire.WAIT_MS))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(refused.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"thresher\"");
        assertThat(Wire.JSON.readTree(refused.body()).path("error").path("name").asText()).isEqualTo("AUTHENTICATION_FAILED");
        HttpResponse<String> wrong = client.send(HttpRequest.newBuilder(topology).header("Authorization", "Bearer wrong-token-0123456789")
                .timeout(Duration.ofMillis(Wire.WAIT_MS)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(wrong.body()).isEqualTo(refused.body());
        HttpResponse<String> ok = client.send(HttpRequest.newBuilder(topology).header("Authorization", "Bearer " + TOKEN)
                .timeout(Duration.ofMillis(Wire.WAIT_MS)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(ok.body()).isEqualTo("{\"topology\":1}");
        HttpResponse<String> live = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + front.port() + "/livez"))
                .timeout(Duration.ofMillis(Wire.WAIT_MS)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(live.statusCode()).isEqualTo(200);
        HttpResponse<String> call = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + front.port()
                        + "/v1/bindings/sum/call")).POST(HttpRequest.BodyPublishers.ofString("{}"))
                .timeout(Duration.ofMillis(Wire.WAIT_MS)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(call.statusCode()).isEqualTo(401);
        HttpResponse<String> admitted = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + front.port()
                        + "/v1/bindings/sum/call")).header("Authorization", "Bearer " + TOKEN)
                .POST(HttpRequest.BodyPublishers.ofString("{}")).timeout(Duration.ofMillis(Wire.WAIT_MS)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(admitted.statusCode()).isEqualTo(200);
    }
}
