package dev.thresher.bindings.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RouteTableTest {
    private static final RouteTable TABLE = new RouteTable(List.of(
            new Route("GET", "/regions/{region}/revenue"),
            new Route("GET", "/regions"),
            new Route("POST", "/regions/{region}/revenue", List.of("x-request-id")),
            new Route("GET", "/"),
            new Route("DELETE", "/a/{x}/c")));

    @Test
    void aRequestMatchesItsOneRouteWithItsParametersDecoded() {
        assertThat(TABLE.match("GET", "/regions/eu%20west/revenue")).isEqualTo(new RouteTable.Matched(0,
                TABLE.routes().get(0), Map.of("region", "eu west")));
        assertThat(TABLE.match("POST", "/regions/caf%C3%A9/revenue")).isInstanceOfSatisfying(RouteTable.Matched.class,
                m -> assertThat(m.index()).isEqualTo(2));
        assertThat(TABLE.match("GET", "/regions/a%2Fb/revenue")).isInstanceOfSatisfying(RouteTable.Matched.class,
                m -> assertThat(m.parameters()).containsEntry("region", "a/b"));
        assertThat(TABLE.match("GET", "/regions")).isInstanceOfSatisfying(RouteTable.Matched.class,
                m -> assertThat(m.index()).isEqualTo(1));
        assertThat(TABLE.match("GET", "/")).isInstanceOfSatisfying(RouteTable.Matched.class,
                m -> assertThat(m.index()).isEqualTo(3));
        assertThat(TABLE.match("GET", "")).isInstanceOfSatisfying(RouteTable.Matched.class,
                m -> assertThat(m.index()).isEqualTo(3));
        // literals compare decoded
        assertThat(TABLE.match("GET", "/%72egions")).isInstanceOf(RouteTable.Matched.class);
    }

    @Test
    void aPathNoRouteMatchesIsNoRouteAndOneOnlyOtherMethodsServeIsMethodNotAllowed() {
        assertThat(TABLE.match("GET", "/regions/")).isInstanceOf(RouteTable.NoRoute.class);
        assertThat(TABLE.match("GET", "//regions")).isInstanceOf(RouteTable.NoRoute.class);
        assertThat(TABLE.match("GET", "/regions/eu")).isInstanceOf(RouteTable.NoRoute.class);
        assertThat(TABLE.match("GET", "/regions/eu/revenue/x")).isInstanceOf(RouteTable.NoRoute.class);
        assertThat(TABLE.match("PUT", "/regions/eu/revenue")).isEqualTo(new RouteTable.MethodNotAllowed(Set.of("GET", "POST")));
        assertThat(TABLE.match("GET", "/a/b/c")).isEqualTo(new RouteTable.MethodNotAllowed(Set.of("DELETE")));
    }

    @Test
    void badPercentEncodingIsTyped() {
        assertThatThrownBy(() -> TABLE.match("GET", "/regions/%zz/revenue")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        assertThatThrownBy(() -> TABLE.match("GET", "/regions/%ff/revenue")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_TEXT_ENCODING));
    }

    @Test
    void routesOfOneMethodThatMatchOnePathConflict() {
        List<Route> routes = List.of(new Route("GET", "/a/{x}"), new Route("GET", "/{y}/b"), new Route("POST", "/a/b"),
                new Route("GET", "/a/c/d"), new Route("GET", "/z/{p}"), new Route("GET", "/z/{q}"));
        assertThat(RouteTable.conflicts("routes", routes)).containsExactly(
                "routes[1]: GET /{y}/b conflicts with routes[0] GET /a/{x}: both match GET /a/b",
                "routes[4]: GET /z/{p} conflicts with routes[1] GET /{y}/b: both match GET /z/b",
                "routes[5]: GET /z/{q} conflicts with routes[1] GET /{y}/b: both match GET /z/b",
                "routes[5]: GET /z/{q} conflicts with routes[4] GET /z/{p}: both match GET /z/x");
        assertThatThrownBy(() -> new RouteTable(routes)).hasMessageContaining("conflicts");
        assertThat(RouteTable.conflicts("r", List.of(new Route("GET", "/"), new Route("GET", "/")))).hasSize(1);
        assertThat(RouteTable.conflicts("r", List.of(new Route("GET", "/a"), new Route("GET", "/a/b"),
                new Route("GET", "/b/{x}"), new Route("GET", "/a/{x}/c")))).isEmpty();
        assertThatThrownBy(() -> new RouteTable(List.of())).hasMessageContaining("1 to 32 routes");
    }

    @Test
    void aRouteDeclarationIsCheckedFieldByField() {
        assertThat(Route.problems("r", "GET", "/regions/{region}/revenue", List.of("x-request-id"))).isEmpty();
        assertThat(Route.problems("r", "FETCH", "regions", null)).containsExactly(
                "r.method: must be one of [GET, POST, PUT, PATCH, DELETE], was 'FETCH'",
                "r.path: 'regions' must start with /");
        assertThat(Route.problems("r", "GET", "/a//b", null)).singleElement().asString().contains("empty segment");
        assertThat(Route.problems("r", "GET", "/a/", null)).singleElement().asString().contains("empty segment");
        assertThat(Route.problems("r", "GET", "/a/{x}/{x}", null)).singleElement().asString().contains("{x} appears twice");
        assertThat(Route.problems("r", "GET", "/a/pre{x}", null)).singleElement().asString().contains("neither a literal");
        assertThat(Route.problems("r", "GET", "/a/..", null)).singleElement().asString().contains("neither a literal");
        assertThat(Route.problems("r", "GET", "/a b", null)).singleElement().asString().contains("neither a literal");
        assertThat(Route.problems("r", "GET", "/" + "a/".repeat(17) + "a", null)).singleElement().asString()
                .contains("at most 16 segments");
        assertThat(Route.problems("r", "GET", "/x", List.of("Authorization", "cookie", "x-a", "x-a"))).containsExactly(
                "r.headers: 'Authorization' is not a lower-case header name",
                "r.headers: 'cookie' carries credentials and is never given to a handler",
                "r.headers: 'x-a' is named twice");
        assertThat(new Route("GET", "/x", List.of("x-a", "accept")).passedHeaders())
                .containsExactly("content-type", "accept", "x-a");
    }

    @Test
    void queriesDecodeAsForms() {
        assertThat(UrlEncoding.queryParameters("a=1&b=two+words&&c&d=%C3%A9&e=x%3Dy")).containsExactly(
                Map.entry("a", "1"), Map.entry("b", "two words"), Map.entry("c", ""), Map.entry("d", "é"),
                Map.entry("e", "x=y"));
        assertThat(UrlEncoding.queryParameters("")).isEmpty();
        assertThat(UrlEncoding.decode("a+b", false, "path")).isEqualTo("a+b");
        assertThatThrownBy(() -> UrlEncoding.queryParameters("a=%4")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
    }
}
