package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.handler.codec.http.HttpMethod;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class RouteTableTest {
    private final RouteTable<String> table = new RouteTable<String>()
            .add(HttpMethod.GET, "/livez", "livez")
            .add(HttpMethod.POST, "/v1/bindings/{name}/call", "call")
            .add(HttpMethod.GET, "/admin/tables", "list")
            .add(HttpMethod.POST, "/admin/tables", "create")
            .add(HttpMethod.GET, "/admin/tables/{name}", "show")
            .add(HttpMethod.DELETE, "/admin/tables/{name}", "drop")
            .add(HttpMethod.GET, "/ui/{file...}", "ui")
            .addAnyMethod("/v1/http/{rest...}", "handler");

    private Object found(HttpMethod method, String path) {
        return table.lookup(method, path) instanceof RouteTable.Lookup.Found<String> f ? f.route() : null;
    }

    @Test
    void aPathAndMethodFindTheirRouteWithWhatItsPatternCaptured() {
        assertThat(table.lookup(HttpMethod.POST, "/v1/bindings/sum/call"))
                .isEqualTo(new RouteTable.Lookup.Found<>("call", Map.of("name", "sum")));
        assertThat(table.lookup(HttpMethod.DELETE, "/admin/tables/t1"))
                .isEqualTo(new RouteTable.Lookup.Found<>("drop", Map.of("name", "t1")));
        assertThat(table.lookup(HttpMethod.GET, "/ui/app.js"))
                .isEqualTo(new RouteTable.Lookup.Found<>("ui", Map.of("file", "app.js")));
        assertThat(table.lookup(HttpMethod.GET, "/ui/")).as("the rest may be empty")
                .isEqualTo(new RouteTable.Lookup.Found<>("ui", Map.of("file", "")));
        assertThat(table.lookup(HttpMethod.PATCH, "/v1/http/h/a/b"))
                .isEqualTo(new RouteTable.Lookup.Found<>("handler", Map.of("rest", "h/a/b")));
    }

    @Test
    void aCaptureIsTheSegmentAsSentNotDecoded() {
        assertThat(table.lookup(HttpMethod.POST, "/v1/bindings/a%2Fb/call")).as("an encoded slash is no slash")
                .isEqualTo(new RouteTable.Lookup.Found<>("call", Map.of("name", "a%2Fb")));
        assertThat(table.lookup(HttpMethod.POST, "/v1/bindings/a\nb/call"))
                .isEqualTo(new RouteTable.Lookup.Found<>("call", Map.of("name", "a\nb")));
    }

    @Test
    void anUnknownPathIsNotFound() {
        assertThat(table.lookup(HttpMethod.GET, "/nowhere")).isInstanceOf(RouteTable.Lookup.NotFound.class);
        assertThat(table.lookup(HttpMethod.GET, "/")).isInstanceOf(RouteTable.Lookup.NotFound.class);
        assertThat(table.lookup(HttpMethod.GET, "")).isInstanceOf(RouteTable.Lookup.NotFound.class);
    }

    @Test
    void aPathIsMatchedWholeWithoutForgivingTrailingJunk() {
        for (String path : List.of("/v1/bindings/sum/call/", "/v1/bindings/sum/callx", "/v1/bindings/sum/call?x=1",
                "/v1/bindings//call", "/v1/bindings/a/b/call", "//v1/bindings/sum/call", "/livez/", "/livezz",
                "/LIVEZ", "/admin/tables/", "/admin/tables/t1/", "/admin/tables/t1/x", "/ui", "/v1/http",
                "http://host/livez")) {
            assertThat(table.lookup(HttpMethod.POST, path)).as(path).isInstanceOf(RouteTable.Lookup.NotFound.class);
            assertThat(table.lookup(HttpMethod.GET, path)).as(path).isInstanceOf(RouteTable.Lookup.NotFound.class);
        }
    }

    @Test
    void aPathOfOtherMethodsIsAWrongMethodNamingEveryMethodItHas() {
        assertThat(table.lookup(HttpMethod.POST, "/livez")).isEqualTo(new RouteTable.Lookup.WrongMethod<>(
                List.of(HttpMethod.GET)));
        assertThat(table.lookup(HttpMethod.GET, "/v1/bindings/sum/call")).isEqualTo(new RouteTable.Lookup.WrongMethod<>(
                List.of(HttpMethod.POST)));
        assertThat(table.lookup(HttpMethod.PUT, "/admin/tables")).isEqualTo(new RouteTable.Lookup.WrongMethod<>(
                List.of(HttpMethod.GET, HttpMethod.POST)));
        assertThat(table.lookup(HttpMethod.POST, "/admin/tables/t1")).isEqualTo(new RouteTable.Lookup.WrongMethod<>(
                List.of(HttpMethod.GET, HttpMethod.DELETE)));
        assertThat(table.lookup(HttpMethod.HEAD, "/ui/app.js")).as("HEAD is not GET")
                .isEqualTo(new RouteTable.Lookup.WrongMethod<>(List.of(HttpMethod.GET)));
    }

    @Test
    void theFirstRouteRegisteredAnswersAndAnInactiveRouteIsNone() {
        AtomicBoolean served = new AtomicBoolean();
        RouteTable<String> t = new RouteTable<String>()
                .add(HttpMethod.GET, "/metrics", served::get, "metrics")
                .add(HttpMethod.GET, "/a/{x}", "first")
                .add(HttpMethod.GET, "/a/b", "second");
        assertThat(t.lookup(HttpMethod.GET, "/metrics")).isInstanceOf(RouteTable.Lookup.NotFound.class);
        assertThat(t.lookup(HttpMethod.POST, "/metrics")).as("not even a wrong method")
                .isInstanceOf(RouteTable.Lookup.NotFound.class);
        served.set(true);
        assertThat(t.lookup(HttpMethod.GET, "/metrics")).isEqualTo(new RouteTable.Lookup.Found<>("metrics", Map.of()));
        assertThat(t.lookup(HttpMethod.GET, "/a/b")).isEqualTo(new RouteTable.Lookup.Found<>("first", Map.of("x", "b")));
        assertThat(t.describe()).containsExactly("GET /metrics", "GET /a/{x}", "GET /a/b");
    }

    @Test
    void aPatternIsCheckedWhenRegistered() {
        RouteTable<String> t = new RouteTable<>();
        assertThatThrownBy(() -> t.add(HttpMethod.GET, "livez", "x")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> t.add(HttpMethod.GET, "/a/{rest...}/b", "x")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> t.add(HttpMethod.GET, "/a/x{y}", "x")).isInstanceOf(IllegalArgumentException.class);
    }
}
