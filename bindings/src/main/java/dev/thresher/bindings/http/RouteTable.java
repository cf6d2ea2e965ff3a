package dev.thresher.bindings.http;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The routes of one HTTP handler binding. No two routes of one method match the same path (a deploy refuses
 * such a table: {@link #conflicts}), so a request matches at most one route, whatever the order of the routes.
 */
public final class RouteTable {
    /** Routes one handler may declare. */
    public static final int ROUTES_MAX = 32;

    private final List<Route> routes;

    /** @throws IllegalArgumentException when two routes conflict or there are none or too many */
    public RouteTable(List<Route> routes) {
        this.routes = List.copyOf(routes);
        List<String> problems = conflicts("routes", this.routes);
        if (this.routes.isEmpty() || this.routes.size() > ROUTES_MAX) {
            problems.add("a handler declares 1 to " + ROUTES_MAX + " routes, was " + this.routes.size());
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("; ", problems));
        }
    }

    public List<Route> routes() {
        return routes;
    }

    /**
     * The pairs of routes that conflict: of one method, and both matching some path (the same number of segments,
     * and at each segment equal literals or a parameter on either side), each named by its place
     * ({@code where[1]}) with a path both match.
     */
    public static List<String> conflicts(String where, List<Route> routes) {
        List<String> p = new ArrayList<>();
        for (int j = 1; j < routes.size(); j++) {
            for (int i = 0; i < j; i++) {
                Route a = routes.get(i);
                Route b = routes.get(j);
                if (!a.method().equals(b.method())) {
                    continue;
                }
                String both = overlap(a.segments(), b.segments());
                if (both != null) {
                    p.add(where + "[" + j + "]: " + b + " conflicts with " + where + "[" + i + "] " + a + ": both match "
                            + a.method() + " " + both);
                }
            }
        }
        return p;
    }

    /** A path both patterns match, or null when there is none. */
    private static String overlap(List<Route.Segment> a, List<Route.Segment> b) {
        if (a.size() != b.size()) {
            return null;
        }
        if (a.isEmpty()) {
            return "/";
        }
        StringBuilder path = new StringBuilder();
        for (int k = 0; k < a.size(); k++) {
            Route.Segment x = a.get(k);
            Route.Segment y = b.get(k);
            if (!x.isParameter() && !y.isParameter() && !x.literal().equals(y.literal())) {
                return null;
            }
            path.append('/').append(!x.isParameter() ? x.literal() : !y.isParameter() ? y.literal() : "x");
        }
        return path.toString();
    }

    /** What a request's method and path matched. */
    public sealed interface Match {
    }

    /**
     * The route matched.
     *
     * @param index the route's place in the table, from 0
     * @param parameters the path parameters in pattern order, percent-decoded
     */
    public record Matched(int index, Route route, Map<String, String> parameters) implements Match {
    }

    /** Routes match the path, but none of the method: they serve {@code allowed}. */
    public record MethodNotAllowed(Set<String> allowed) implements Match {
    }

    /** No route matches the path. */
    public record NoRoute() implements Match {
    }

    /**
     * The route a request matches.
     *
     * @param rawPath the request's path below the handler's prefix, as received (percent-encoded); empty reads as /
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} for malformed percent-encoding in a segment,
     *     {@link ErrorCode#INVALID_TEXT_ENCODING} when a decoded segment is not UTF-8
     */
    public Match match(String method, String rawPath) {
        List<String> segments = split(rawPath);
        if (segments == null) {
            return new NoRoute();
        }
        Set<String> allowed = new LinkedHashSet<>();
        for (int i = 0; i < routes.size(); i++) {
            Route r = routes.get(i);
            Map<String, String> params = matchSegments(r.segments(), segments);
            if (params == null) {
                continue;
            }
            if (r.method().equals(method)) {
                return new Matched(i, r, params);
            }
            allowed.add(r.method());
        }
        return allowed.isEmpty() ? new NoRoute() : new MethodNotAllowed(allowed);
    }

    /** The decoded segments of a raw path, or null when it has an empty one (a doubled or trailing /). */
    private static List<String> split(String rawPath) {
        if (rawPath.isEmpty() || rawPath.equals("/")) {
            return List.of();
        }
        if (!rawPath.startsWith("/")) {
            return null;
        }
        List<String> out = new ArrayList<>();
        for (String s : rawPath.substring(1).split("/", -1)) {
            if (s.isEmpty()) {
                return null;
            }
            out.add(UrlEncoding.decode(s, false, "path segment"));
        }
        return out;
    }

    private static Map<String, String> matchSegments(List<Route.Segment> pattern, List<String> segments) {
        if (pattern.size() != segments.size()) {
            return null;
        }
        Map<String, String> params = new LinkedHashMap<>();
        for (int k = 0; k < pattern.size(); k++) {
            Route.Segment s = pattern.get(k);
            if (s.isParameter()) {
                params.put(s.parameter(), segments.get(k));
            } else if (!s.literal().equals(segments.get(k))) {
                return null;
            }
        }
        return params;
    }
}
