package dev.thresher.bindings.http;

import dev.thresher.errors.Quoted;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One HTTP route an HTTP handler component declares in its manifest ({@code http.routes}, docs/components.md):
 * a method and a path pattern of literal segments and whole-segment parameters ({@code /regions/{region}/revenue}),
 * served under {@code /v1/http/<binding>}, and the request headers the handler reads beyond the ones every
 * handler gets ({@link #ALWAYS_PASSED}).
 *
 * @param method the request method, one of {@link #METHODS}
 * @param path the pattern: {@code /}, or {@code /} then segments separated by {@code /}, each a literal or
 *     {@code {name}}
 * @param headers lower-case names of further request headers the handler is given
 */
public record Route(String method, String path, List<String> headers) {
    /** The methods a route may serve. */
    public static final List<String> METHODS = List.of("GET", "POST", "PUT", "PATCH", "DELETE");
    /** Headers every handler is given when the request carries them. */
    public static final List<String> ALWAYS_PASSED = List.of("content-type", "accept");
    /** Headers that carry credentials: never handed to a guest. */
    public static final Set<String> WITHHELD = Set.of("authorization", "proxy-authorization", "cookie");
    /** Bounds of one route. */
    public static final int PATH_MAX_CHARS = 256;
    public static final int SEGMENTS_MAX = 16;
    public static final int HEADERS_MAX = 16;

    private static final Pattern LITERAL = Pattern.compile("[A-Za-z0-9._~!$&'()*+,;=:@-]+");
    private static final Pattern PARAMETER = Pattern.compile("\\{([A-Za-z_][A-Za-z0-9_]{0,62})}");
    private static final Pattern HEADER = Pattern.compile("[a-z0-9!#$%&'*+.^_`|~-]{1,64}");

    public Route {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
        headers = List.copyOf(headers);
        List<String> problems = problems("route", method, path, headers);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("; ", problems));
        }
    }

    public Route(String method, String path) {
        this(method, path, List.of());
    }

    /** One segment of a pattern: a literal, or a parameter named {@code name}. */
    public record Segment(String literal, String parameter) {
        public boolean isParameter() {
            return parameter != null;
        }
    }

    /**
     * Every problem of a route declaration, each starting with {@code where} ({@code manifest.http.routes[0].path:
     * ...}); empty when there is none.
     */
    public static List<String> problems(String where, String method, String path, List<String> headers) {
        List<String> p = new ArrayList<>();
        if (method == null || !METHODS.contains(method)) {
            p.add(where + ".method: must be one of " + METHODS + ", was " + (method == null ? "missing" : "'" + Quoted.of(method) + "'"));
        }
        if (path == null) {
            p.add(where + ".path: missing; a path is / or /segment/{parameter}/...");
        } else {
            pathProblems(where + ".path", path, p);
        }
        if (headers != null) {
            if (headers.size() > HEADERS_MAX) {
                p.add(where + ".headers: at most " + HEADERS_MAX + " headers, was " + headers.size());
            }
            Set<String> seen = new HashSet<>();
            for (String h : headers) {
                if (h == null || !HEADER.matcher(h).matches()) {
                    p.add(where + ".headers: '" + Quoted.of(h) + "' is not a lower-case header name");
                } else if (WITHHELD.contains(h)) {
                    p.add(where + ".headers: '" + Quoted.of(h) + "' carries credentials and is never given to a handler");
                } else if (!seen.add(h)) {
                    p.add(where + ".headers: '" + Quoted.of(h) + "' is named twice");
                }
            }
        }
        return p;
    }

    private static void pathProblems(String where, String path, List<String> p) {
        if (path.length() > PATH_MAX_CHARS) {
            p.add(where + ": at most " + PATH_MAX_CHARS + " characters, was " + path.length());
            return;
        }
        if (!path.startsWith("/")) {
            p.add(where + ": '" + Quoted.of(path) + "' must start with /");
            return;
        }
        if (path.equals("/")) {
            return;
        }
        String[] parts = path.substring(1).split("/", -1);
        if (parts.length > SEGMENTS_MAX) {
            p.add(where + ": at most " + SEGMENTS_MAX + " segments, was " + parts.length);
        }
        Set<String> names = new HashSet<>();
        for (String s : parts) {
            var m = PARAMETER.matcher(s);
            if (s.isEmpty()) {
                p.add(where + ": '" + Quoted.of(path) + "' has an empty segment (a doubled or trailing /)");
            } else if (m.matches()) {
                if (!names.add(m.group(1))) {
                    p.add(where + ": parameter {" + m.group(1) + "} appears twice");
                }
            } else if (s.equals(".") || s.equals("..") || !LITERAL.matcher(s).matches()) {
                p.add(where + ": segment '" + Quoted.of(s) + "' is neither a literal (letters, digits and - . _ ~ ! $ & ' ( ) * + , ;"
                        + " = : @, not . or ..) nor a whole-segment parameter {name}");
            }
        }
    }

    /** The pattern's segments; none for {@code /}. */
    public List<Segment> segments() {
        if (path.equals("/")) {
            return List.of();
        }
        List<Segment> out = new ArrayList<>();
        for (String s : path.substring(1).split("/", -1)) {
            var m = PARAMETER.matcher(s);
            out.add(m.matches() ? new Segment(null, m.group(1)) : new Segment(s, null));
        }
        return out;
    }

    /** The headers this route's handler is given: {@link #ALWAYS_PASSED}, then the route's own. */
    public List<String> passedHeaders() {
        List<String> all = new ArrayList<>(ALWAYS_PASSED);
        for (String h : headers) {
            if (!all.contains(h)) {
                all.add(h);
            }
        }
        return all;
    }

    @Override
    public String toString() {
        return method + " " + path;
    }
}
