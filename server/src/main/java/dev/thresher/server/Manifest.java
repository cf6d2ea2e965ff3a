package dev.thresher.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.Budgets;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A component package's manifest, version 1 ({@code thresher.json} beside the module; docs/components.md):
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
 * Every problem is reported at once, each with its field path and reason ({@code manifest.abiVersion: must be
 * 1 or 2, was 3}); unknown fields are refused, so a misspelt one is not silently ignored.
 */
record Manifest(String binding, String module, int abiVersion, String selector, String description, Budgets budgets) {
    static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
    private static final Pattern FILE = Pattern.compile("[A-Za-z0-9_.-]+\\.(wasm|wat)");
    private static final Set<String> FIELDS = Set.of("manifestVersion", "binding", "module", "abiVersion", "selector",
            "exports", "description", "budgets");
    private static final List<String> BUDGETS = List.of("runMs", "memoryBytes", "inputBytes", "outputBytes", "emits",
            "moduleBytes");
    private static final ObjectMapper JSON = new ObjectMapper();

    /** @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} naming every problem with its field path */
    static Manifest parse(byte[] bytes) {
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
        for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!FIELDS.contains(f)) {
                problems.add("manifest." + f + ": unknown field; the fields are " + new java.util.TreeSet<>(FIELDS));
            }
        }
        JsonNode v = root.get("manifestVersion");
        if (v == null) {
            problems.add("manifest.manifestVersion: missing; it is 1");
        } else if (!v.isInt() || v.asInt() != 1) {
            problems.add("manifest.manifestVersion: must be 1, was " + v);
        }
        String binding = text(root, "binding", problems);
        if (binding != null && !NAME.matcher(binding).matches()) {
            problems.add("manifest.binding: '" + binding + "' is not a name: a letter or '_', then letters, digits or '_',"
                    + " at most 63");
        }
        String module = text(root, "module", problems);
        if (module != null && !FILE.matcher(module).matches()) {
            problems.add("manifest.module: '" + module + "' is not a file name ending in .wasm or .wat beside the manifest");
        }
        JsonNode abi = root.get("abiVersion");
        int abiVersion = 0;
        if (abi == null) {
            problems.add("manifest.abiVersion: missing; it is 2 (paged input) or 1 (one batch)");
        } else if (!abi.isInt() || (abi.asInt() != 1 && abi.asInt() != 2)) {
            problems.add("manifest.abiVersion: must be 1 or 2, was " + abi);
        } else {
            abiVersion = abi.asInt();
        }
        String selector = text(root, "selector", problems);
        JsonNode exports = root.get("exports");
        if (exports != null) {
            if (!exports.isObject()) {
                problems.add("manifest.exports: must be an object {\"run\": \"run\", \"reduce\": \"reduce\"}");
            } else {
                for (Iterator<String> it = exports.fieldNames(); it.hasNext(); ) {
                    String f = it.next();
                    if (!f.equals("run") && !f.equals("reduce")) {
                        problems.add("manifest.exports." + f + ": unknown export role; the roles are run and reduce");
                    } else if (!exports.get(f).isTextual() || !exports.get(f).asText().equals(f)) {
                        problems.add("manifest.exports." + f + ": must be \"" + f + "\" in manifest version 1, was " + exports.get(f));
                    }
                }
            }
        }
        JsonNode d = root.get("description");
        String description = null;
        if (d != null && !d.isNull()) {
            if (!d.isTextual() || d.asText().length() > 1000) {
                problems.add("manifest.description: must be a string of at most 1,000 characters");
            } else {
                description = d.asText();
            }
        }
        Budgets budgets = budgets(root.get("budgets"), problems);
        if (!problems.isEmpty()) {
            throw problem(String.join("; ", problems));
        }
        return new Manifest(binding, module, abiVersion, selector, description, budgets);
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
                problems.add("manifest.budgets." + f + ": unknown budget; the budgets are " + BUDGETS);
            } else if (!n.canConvertToLong() || !n.isIntegralNumber() || n.asLong() <= 0) {
                problems.add("manifest.budgets." + f + ": must be a positive integer, was " + n);
            } else {
                v[i] = n.asLong();
            }
        }
        return new Budgets(v[0], v[1], v[2], v[3], v[4], v[5]);
    }

    private static String text(JsonNode root, String field, List<String> problems) {
        JsonNode n = root.get(field);
        if (n == null) {
            problems.add("manifest." + field + ": missing");
            return null;
        }
        if (!n.isTextual() || n.asText().isBlank()) {
            problems.add("manifest." + field + ": must be a non-empty string, was " + n);
            return null;
        }
        return n.asText();
    }

    private static ThresherException problem(String message) {
        return new ThresherException(ErrorCode.INVALID_CONFIGURATION, message);
    }
}
