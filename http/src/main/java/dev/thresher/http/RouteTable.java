package dev.thresher.http;

import io.netty.handler.codec.http.HttpMethod;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Routes by method and path: each route is a method (or any method) and a path pattern, registered once; a request's
 * path (before its {@code ?}) either finds one route, or none of its patterns matches (404), or only routes of other
 * methods do (405; {@link Lookup.WrongMethod#allowed} are the methods that path has, for {@code Allow}).
 *
 * <p>A pattern is {@code /}-separated segments, each literal, or {@code {name}}: one segment, not empty, as it is on
 * the wire (not percent-decoded, so {@code %2F} is no slash), or, last, {@code {name...}}: the rest of the path,
 * slashes too, possibly empty. A pattern matches the whole path: no trailing slash or junk is forgiven. The first route
 * registered whose pattern and method match answers; a route may be registered active only while a condition holds.
 *
 * @param <R> what answers a route
 */
final class RouteTable<R> {
    private final List<Entry<R>> entries = new ArrayList<>();

    private record Entry<R>(HttpMethod method, String pattern, Pattern regex, List<String> names, BooleanSupplier active,
                            R route) {
    }

    /** What a request's method and path find. */
    sealed interface Lookup<R> {
        /** A route, with what its pattern's {@code {name}} segments captured. */
        record Found<R>(R route, Map<String, String> captures) implements Lookup<R> {
        }

        /** The path is some route's, not with this method: {@code allowed} are its methods, in registration order. */
        record WrongMethod<R>(List<HttpMethod> allowed) implements Lookup<R> {
        }

        /** No route's pattern matches the path. */
        record NotFound<R>() implements Lookup<R> {
        }
    }

    /** Registers {@code route} for {@code method} on {@code pattern}. */
    RouteTable<R> add(HttpMethod method, String pattern, R route) {
        return add(method, pattern, () -> true, route);
    }

    /** Registers {@code route} for {@code method} on {@code pattern}, a route only while {@code active} holds. */
    RouteTable<R> add(HttpMethod method, String pattern, BooleanSupplier active, R route) {
        java.util.Objects.requireNonNull(method, "method");
        return put(method, pattern, active, route);
    }

    /** Registers {@code route} for every method on {@code pattern}: it answers whatever the method is. */
    RouteTable<R> addAnyMethod(String pattern, R route) {
        return put(null, pattern, () -> true, route);
    }

    private RouteTable<R> put(HttpMethod method, String pattern, BooleanSupplier active, R route) {
        List<String> names = new ArrayList<>();
        entries.add(new Entry<>(method, pattern, compile(pattern, names), List.copyOf(names), active, route));
        return this;
    }

    /** The route of {@code method} on {@code path} (the request target's path, without its query). */
    Lookup<R> lookup(HttpMethod method, String path) {
        Set<HttpMethod> allowed = new LinkedHashSet<>();
        for (Entry<R> e : entries) {
            if (!e.active().getAsBoolean()) {
                continue;
            }
            Matcher m = e.regex().matcher(path);
            if (!m.matches()) {
                continue;
            }
            if (e.method() == null || e.method().equals(method)) {
                Map<String, String> captures = new LinkedHashMap<>();
                for (int i = 0; i < e.names().size(); i++) {
                    captures.put(e.names().get(i), m.group(i + 1));
                }
                return new Lookup.Found<>(e.route(), captures);
            }
            allowed.add(e.method());
        }
        return allowed.isEmpty() ? new Lookup.NotFound<>() : new Lookup.WrongMethod<>(List.copyOf(allowed));
    }

    /** The methods and patterns registered, in order, as {@code METHOD pattern} ({@code *} for any method). */
    List<String> describe() {
        return entries.stream().map(e -> (e.method() == null ? "*" : e.method().name()) + " " + e.pattern()).toList();
    }

    private static Pattern compile(String pattern, List<String> names) {
        if (!pattern.startsWith("/")) {
            throw new IllegalArgumentException("a route's pattern starts with '/': " + pattern);
        }
        StringBuilder regex = new StringBuilder();
        String[] segments = pattern.substring(1).split("/", -1);
        for (int i = 0; i < segments.length; i++) {
            String s = segments[i];
            regex.append('/');
            if (s.startsWith("{") && s.endsWith("...}")) {
                if (i != segments.length - 1) {
                    throw new IllegalArgumentException("{name...} is a pattern's last segment: " + pattern);
                }
                names.add(s.substring(1, s.length() - 4));
                regex.append("(.*)");
            } else if (s.startsWith("{") && s.endsWith("}")) {
                names.add(s.substring(1, s.length() - 1));
                regex.append("([^/]+)");
            } else if (s.contains("{") || s.contains("}")) {
                throw new IllegalArgumentException("a segment is literal, {name} or {name...}: " + pattern);
            } else {
                regex.append(Pattern.quote(s));
            }
        }
        // DOTALL: a path's every character is a character of the rest, line terminators too
        return Pattern.compile(regex.toString(), Pattern.DOTALL);
    }
}
