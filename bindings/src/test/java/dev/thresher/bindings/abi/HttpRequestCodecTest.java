package dev.thresher.bindings.abi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The HTTP request encoding v1 an HTTP handler reads, pinned by the golden vectors of {@code golden/abi/http/v1/}. */
class HttpRequestCodecTest {
    private static byte[] golden(String name) {
        return GoldenVectors.load("http/v1", name);
    }

    private static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }

    /** The worked example of docs/guest-abi.md section 8. */
    static HttpRequestCodec.Request regions() {
        return new HttpRequestCodec.Request(0, "GET", "/regions/eu/revenue", "/regions/{region}/revenue",
                List.of(Map.entry("region", "eu")), List.of(Map.entry("currency", "EUR")),
                List.of(Map.entry("accept", "application/json")), new byte[0]);
    }

    static HttpRequestCodec.Request allFields() {
        return new HttpRequestCodec.Request(3, "POST", "/echo/caf%C3%A9/x%2Fy", "/echo/{a}/{b}",
                List.of(Map.entry("a", "café"), Map.entry("b", "x/y")),
                List.of(Map.entry("a", "1"), Map.entry("b", "two words"), Map.entry("a", ""), Map.entry("flag", "")),
                List.of(Map.entry("content-type", "text/plain"), Map.entry("x-trace", "t\u00e9")),
                new byte[] {0, (byte) 0xff, '{', '}'});
    }

    static HttpRequestCodec.Request empty() {
        return new HttpRequestCodec.Request(0, "GET", "/", "/", List.of(), List.of(), List.of(), new byte[0]);
    }

    @Test
    void goldenVectors() {
        assertThat(hex(HttpRequestCodec.encode(regions()))).isEqualTo(hex(golden("request_regions")));
        assertThat(hex(HttpRequestCodec.encode(allFields()))).isEqualTo(hex(golden("request_all_fields")));
        assertThat(hex(HttpRequestCodec.encode(empty()))).isEqualTo(hex(golden("request_empty")));
        assertThat(golden("request_regions")).hasSize(148);
        assertThat(golden("request_all_fields")).hasSize(200);
        assertThat(golden("request_empty")).hasSize(41);
    }

    @Test
    void decodeReadsBackWhatWasEncoded() {
        for (HttpRequestCodec.Request r : List.of(regions(), allFields(), empty())) {
            HttpRequestCodec.Request back = HttpRequestCodec.decode(HttpRequestCodec.encode(r));
            assertThat(back.routeIndex()).isEqualTo(r.routeIndex());
            assertThat(back.method()).isEqualTo(r.method());
            assertThat(back.path()).isEqualTo(r.path());
            assertThat(back.route()).isEqualTo(r.route());
            assertThat(back.parameters()).isEqualTo(r.parameters());
            assertThat(back.query()).isEqualTo(r.query());
            assertThat(back.headers()).isEqualTo(r.headers());
            assertThat(back.body()).isEqualTo(r.body());
        }
        // a header value is its bytes: E9 stays one byte
        byte[] all = golden("request_all_fields");
        assertThat(new String(all, StandardCharsets.ISO_8859_1)).contains("x-trace\u0002\u0000\u0000\u0000t\u00e9");
    }

    @Test
    void decodeRefusesDamage() {
        byte[] good = HttpRequestCodec.encode(allFields());
        for (int cut = 0; cut < good.length; cut++) {
            int n = cut;
            assertThatThrownBy(() -> HttpRequestCodec.decode(Arrays.copyOf(good, n))).isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> HttpRequestCodec.decode(Arrays.copyOf(good, good.length + 1)))
                .isInstanceOf(IllegalArgumentException.class);
        byte[] magic = good.clone();
        magic[3] = '2';
        assertThatThrownBy(() -> HttpRequestCodec.decode(magic)).hasMessageContaining("THQ1");
    }

    @Test
    void encodeRefusesTextItCannotCarry() {
        assertThatThrownBy(() -> HttpRequestCodec.encode(new HttpRequestCodec.Request(0, "GET", "/\udc00", "/", List.of(),
                List.of(), List.of(), new byte[0]))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> HttpRequestCodec.encode(new HttpRequestCodec.Request(0, "GET", "/", "/", List.of(),
                List.of(), List.of(Map.entry("x", "\u20ac")), new byte[0]))).hasMessageContaining("ISO-8859-1");
    }
}
