package dev.thresher.server.admin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.http.Route;
import dev.thresher.bindings.http.RouteTable;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A component package's manifest, version 1 or 2 ({@code thresher.json} beside the module; docs/components.md):
 *
 * <pre>
 * {
 *   "manifestVersion": 1,                        required, 1
 *   "binding": "revenue_by_region",              required, the binding's name: [A-Za-z_][A-Za-z0-9_]*, at most 63
 *   "module": "revenue_by_region.wasm",          required, a file beside the manifest: .wasm, or .wat (compiled at deploy)
 *   "abiVersion": 2,                             required, the guest ABI version: 1 or 2
 *   "selector": "SELECT region, amount FROM orders",   required, the fixed selector
 *   "exports": {"run": "run", "reduce": "reduce"},     optional; in version 1 they are these names
 *   "description": "...",                        optional, at most 1,000 characters
 *   "budgets": {                                 optional, each optional (not declared: the node's limit), each a
 *     "runMs": 5000, "memoryBytes": 16777216,    positive integer no larger than the node's limit
 *     "inputBytes": 67108864, "outputBytes": 65536, "emits": 64, "moduleBytes": 1048576
 *   }
 * }
 * </pre>
 *
 * Version 2 adds one optional section, {@code http}: with it the package is an HTTP handler, not a distributed call.
 * A handler has no {@code abiVersion} and no {@code selector}; its {@code exports} role is {@code handle}; of the
 * budgets it declares only {@code runMs}, {@code memoryBytes} and {@code moduleBytes}:
 *
 * <pre>
 * {
 *   "manifestVersion": 2,
 *   "binding": "revenue_api",
 *   "module": "revenue_api.wasm",
 *   "http": {"routes": [                          1 to 32 routes, no two of one method matching one path
 *     {"method": "GET", "path": "/regions/{region}/revenue", "headers": ["x-request-id"]}
 *   ]},
 *   "exports": {"handle": "handle"},              optional
 *   "budgets": {"runMs": 5000, "memoryBytes": 16777216}
 * }
 * </pre>
 *
 * Every problem is reported at once, each with its field path and reason ({@code manifest.abiVersion: must be
 * 1 or 2, was 3}); unknown fields are refused, so a misspelt one is not silently ignored.
 *
 * @param routes an HTTP handler's routes, in declaration order; null for a distributed call
 */
public record Manifest(String binding, String module, int abiVersion, String selector, String description, Budgets budgets,
                List<Route> routes) {
    static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
    private static final Pattern FILE = Pattern.compile("[A-Za-z0-9_.-]+\\.(wasm|wat)");
    private static final Set<String> FIELDS = Set.of("manifestVersion", "binding", "module", "abiVersion", "selector",
            "exports", "description", "budgets");
    /** Fields of version 2 beyond version 1's. */
    private static final Set<String> FIELDS_V2 = Set.of("http");
    /** The budgets an HTTP handler may declare. */
    private static final List<String> HANDLER_BUDGETS = List.of("runMs", "memoryBytes", "moduleBytes");
    private static final List<String> BUDGETS = List.of("runMs", "memoryBytes", "inputBytes", "outputBytes", "emits",
            "moduleBytes");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The problems a refusal names, at most: past them it says how many more. */
    static final int MAX_PROBLEMS = 20;

    /**
     * Reads a manifest, each part checked in turn (the version and the fields it allows, the names, what the package
     * is, its exports, description and budgets) and every problem kept, in that order.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} naming every problem with its field path
     */
    public static Manifest parse(byte[] bytes) {
        JsonNode root;
        try {
            root = JSON.readTree(bytes);
        } catch (java.io.IOException e) {
            throw problem("manifest: not JSON: " + (e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage()));
        }
        if (root == null || !root.isObject()) {
            throw problem("manifest: must be a JSON object");
        }
        List<String> problems = new ArrayList<>();
        checkVersionAndFields(root, problems);
        boolean handler = root.has("http");
        String binding = text(root, "binding", problems);
        if (binding != null && !NAME.matcher(binding).matches()) {
            problems.add("manifest.binding: '" + Quoted.of(binding) + "' is not a name: a letter or '_', then letters, digits or '_',"
                    + " at most 63");
        }
        String module = text(root, "module", problems);
        if (module != null && !FILE.matcher(module).matches()) {
            problems.add("manifest.module: '" + Quoted.of(module) + "' is not a file name ending in .wasm or .wat beside the manifest");
        }
        int abiVersion = 0;
        String selector = null;
        List<Route> routes = null;
        if (handler) {
            for (String f : List.of("abiVersion", "selector")) {
                if (root.has(f)) {
                    problems.add("manifest." + f + ": an HTTP handler (a manifest with an http section) has no " + f);
                }
            }
            routes = routes(root.get("http"), problems);
        } else {
            abiVersion = abiVersion(root.get("abiVersion"), problems);
            selector = text(root, "selector", problems);
        }
        checkExports(root.get("exports"), handler, problems);
        String description = description(root.get("description"), problems);
        Budgets budgets = budgets(root.get("budgets"), problems);
        if (handler) {
            checkHandlerBudgets(root.get("budgets"), problems);
        }
        if (!problems.isEmpty()) {
            throw problem(problems.size() <= MAX_PROBLEMS ? String.join("; ", problems)
                    : String.join("; ", problems.subList(0, MAX_PROBLEMS)) + "; and " + (problems.size() - MAX_PROBLEMS)
                    + " more problems");
        }
        return new Manifest(binding, module, abiVersion, selector, description, budgets, routes);
    }

    /** {@code manifestVersion}, 1 or 2, and the fields it allows: version 2's only in a manifest of version 2. */
    private static void checkVersionAndFields(JsonNode root, List<String> problems) {
        JsonNode v = root.get("manifestVersion");
        int version = v != null && v.isInt() && (v.asInt() == 1 || v.asInt() == 2) ? v.asInt() : 0;
        for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (FIELDS_V2.contains(f) && version == 1) {
                problems.add("manifest." + Quoted.of(f) + ": a field of manifest version 2; declare \"manifestVersion\": 2");
            } else if (!FIELDS.contains(f) && !FIELDS_V2.contains(f)) {
                java.util.TreeSet<String> all = new java.util.TreeSet<>(FIELDS);
                all.addAll(FIELDS_V2);
                problems.add("manifest." + Quoted.of(f) + ": unknown field; the fields are " + all);
            }
        }
        if (v == null) {
            problems.add("manifest.manifestVersion: missing; it is 1, or 2 for a manifest with an http section");
        } else if (version == 0) {
            problems.add("manifest.manifestVersion: must be 1 or 2, was " + shown(v));
        }
    }

    /** A distributed call's guest ABI version, 1 or 2; 0 after a problem. */
    private static int abiVersion(JsonNode abi, List<String> problems) {
        if (abi == null) {
            problems.add("manifest.abiVersion: missing; it is 2 (paged input) or 1 (one batch)");
        } else if (!abi.isInt() || (abi.asInt() != 1 && abi.asInt() != 2)) {
            problems.add("manifest.abiVersion: must be 1 or 2, was " + shown(abi));
        } else {
            return abi.asInt();
        }
        return 0;
    }

    /** {@code exports}, optional: each role of the package's kind under its own name ({@code run}, {@code reduce}; {@code handle}). */
    private static void checkExports(JsonNode exports, boolean handler, List<String> problems) {
        List<String> roles = handler ? List.of("handle") : List.of("run", "reduce");
        if (exports == null) {
            return;
        }
        if (!exports.isObject()) {
            problems.add("manifest.exports: must be an object " + (handler ? "{\"handle\": \"handle\"}"
                    : "{\"run\": \"run\", \"reduce\": \"reduce\"}"));
            return;
        }
        for (Iterator<String> it = exports.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!roles.contains(f)) {
                problems.add("manifest.exports." + Quoted.of(f) + ": unknown export role; the roles " + (handler
                        ? "of an HTTP handler are " : "are ") + String.join(" and ", roles));
            } else if (!exports.get(f).isTextual() || !exports.get(f).asText().equals(f)) {
                problems.add("manifest.exports." + f + ": must be \"" + f + "\", was " + shown(exports.get(f)));
            }
        }
    }

    /** {@code description}, optional: a string of at most 1,000 characters; null when absent or after a problem. */
    private static String description(JsonNode d, List<String> problems) {
        if (d == null || d.isNull()) {
            return null;
        }
        if (!d.isTextual() || d.asText().length() > 1000) {
            problems.add("manifest.description: must be a string of at most 1,000 characters");
            return null;
        }
        return d.asText();
    }

    /** An HTTP handler declares only the budgets that bound a handler: {@link #HANDLER_BUDGETS}. */
    private static void checkHandlerBudgets(JsonNode budgets, List<String> problems) {
        if (budgets == null || !budgets.isObject()) {
            return;
        }
        for (Iterator<String> it = budgets.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (BUDGETS.contains(f) && !HANDLER_BUDGETS.contains(f)) {
                problems.add("manifest.budgets." + Quoted.of(f) + ": not a budget of an HTTP handler; its budgets are " + HANDLER_BUDGETS);
            }
        }
    }

    /** Whether the package is an HTTP handler (its manifest has an http section). */
    public boolean handler() {
        return routes != null;
    }

    private static final Set<String> HTTP_FIELDS = Set.of("routes");
    private static final Set<String> ROUTE_FIELDS = Set.of("method", "path", "headers");

    /** The routes of an http section, each checked, then checked against each other; null after a problem. */
    private static List<Route> routes(JsonNode http, List<String> problems) {
        if (http == null || !http.isObject()) {
            problems.add("manifest.http: must be an object {\"routes\": [{\"method\": \"GET\", \"path\": \"/...\"}, ...]}");
            return null;
        }
        for (Iterator<String> it = http.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!HTTP_FIELDS.contains(f)) {
                problems.add("manifest.http." + Quoted.of(f) + ": unknown field; the fields are " + HTTP_FIELDS);
            }
        }
        JsonNode list = http.get("routes");
        if (list == null || !list.isArray() || list.isEmpty() || list.size() > RouteTable.ROUTES_MAX) {
            problems.add("manifest.http.routes: must be an array of 1 to " + RouteTable.ROUTES_MAX + " routes, was "
                    + (list == null ? "missing" : list.isArray() ? list.size() + " routes" : shown(list)));
            return null;
        }
        int before = problems.size();
        List<Route> routes = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            String where = "manifest.http.routes[" + i + "]";
            JsonNode r = list.get(i);
            if (!r.isObject()) {
                problems.add(where + ": must be an object {\"method\": \"GET\", \"path\": \"/...\"}");
                continue;
            }
            for (Iterator<String> it = r.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!ROUTE_FIELDS.contains(f)) {
                    problems.add(where + "." + Quoted.of(f) + ": unknown field; the fields are " + new java.util.TreeSet<>(ROUTE_FIELDS));
                }
            }
            String method = r.path("method").isTextual() ? r.get("method").asText() : null;
            String path = r.path("path").isTextual() ? r.get("path").asText() : null;
            List<String> headers = new ArrayList<>();
            JsonNode h = r.get("headers");
            if (h != null && !h.isArray()) {
                problems.add(where + ".headers: must be an array of lower-case header names");
            } else if (h != null) {
                h.forEach(n -> headers.add(n.isTextual() ? n.asText() : null));
            }
            List<String> mine = Route.problems(where, method, path, headers);
            problems.addAll(mine);
            if (mine.isEmpty() && problems.size() == before) {
                routes.add(new Route(method, path, headers));
            }
        }
        if (problems.size() > before) {
            return null;
        }
        List<String> conflicts = RouteTable.conflicts("manifest.http.routes", routes);
        problems.addAll(conflicts);
        return conflicts.isEmpty() ? List.copyOf(routes) : null;
    }

    private static Budgets budgets(JsonNode b, List<String> problems) {
        if (b == null || b.isNull()) {
            return Budgets.NONE;
        }
        if (!b.isObject()) {
            problems.add("manifest.budgets: must be an object of " + BUDGETS);
            return Budgets.NONE;
        }
        long[] v = new long[BUDGETS.size()];
        for (Iterator<String> it = b.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            int i = BUDGETS.indexOf(f);
            JsonNode n = b.get(f);
            if (i < 0) {
                problems.add("manifest.budgets." + Quoted.of(f) + ": unknown budget; the budgets are " + BUDGETS);
            } else if (!n.canConvertToLong() || !n.isIntegralNumber() || n.asLong() <= 0) {
                problems.add("manifest.budgets." + f + ": must be a positive integer, was " + shown(n));
            } else {
                v[i] = n.asLong();
            }
        }
        return new Budgets(v[0], v[1], v[2], v[3], v[4], v[5]);
    }

    /** A value of the manifest as a problem shows it: its JSON, quoted as any stranger's input ({@link Quoted#of}). */
    private static String shown(JsonNode value) {
        return Quoted.of(String.valueOf(value));
    }

    private static String text(JsonNode root, String field, List<String> problems) {
        JsonNode n = root.get(field);
        if (n == null) {
            problems.add("manifest." + field + ": missing");
            return null;
        }
        if (!n.isTextual() || n.asText().isBlank()) {
            problems.add("manifest." + field + ": must be a non-empty string, was " + shown(n));
            return null;
        }
        return n.asText();
    }

    private static ThresherException problem(String message) {
        return new ThresherException(ErrorCode.INVALID_CONFIGURATION, message);
    }
}
