package dev.thresher.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalSelect.Filter;
import dev.thresher.bindings.JournalScope;
import dev.thresher.bindings.JournalService;
import dev.thresher.bindings.JournalView;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The journal over HTTP, answered by a {@link JournalService}:
 *
 * <pre>
 * GET /admin/invocations?tenant=&amp;binding=&amp;state=&amp;since=&amp;until=&amp;limit=&amp;after=
 *      200 {"tenant": "...", "invocations": [{call_id, binding, state, ...}, ...], "next": "&lt;cursor&gt;" | null}
 * GET /admin/invocations/{call id}?tenant=
 *      200 {"tenant": "...", "invocation": {..., "result": &lt;JSON&gt;}, "shard_runs": [{run_index, partition_id, ...}, ...]}
 * </pre>
 *
 * Keys are the columns of {@code thresher.invocations} and {@code thresher.shard_runs}, with the same names and
 * values (times as ISO-8601 text); the list leaves out {@code result}. The list is newest first
 * ({@code created_at}, then {@code call_id}, descending); {@code next}, when more calls exist, is an opaque cursor of
 * the last one's ({@code created_at}, {@code call_id}) to pass as {@code after=} for the next page, which is then
 * neither missing a call nor repeating one whatever is recorded meanwhile. {@code since} (inclusive) and
 * {@code until} (exclusive) bound {@code created_at}; {@code limit} is 1 to {@value JournalSelect#MAX_ROWS} (larger is
 * capped), {@value #DEFAULT_LIMIT} by default. A bad parameter is {@code INVALID_ARGUMENTS} (400), an id that names
 * none of the tenant's calls {@code UNKNOWN_CALL} (404). {@code tenant} names another tenant than the caller's only
 * for the cluster's operator (an admin of the node's tenant, the admin token's): for anyone else it is
 * {@code PERMISSION_DENIED} (403).
 */
final class JournalRoutes {
    static final String PREFIX = "/admin/invocations";
    static final int DEFAULT_LIMIT = 100;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> LIST_PARAMETERS = Set.of("tenant", "binding", "state", "since", "until", "limit",
            "after");
    private static final Set<String> STATES = Set.of("running", "succeeded", "failed");
    private static final Pattern CURSOR = Pattern.compile("(-?\\d{1,19}):([0-9a-f-]{36})");

    private JournalRoutes() {
    }

    /**
     * Registers {@code GET} of the list ({@value #PREFIX}, with or without a last {@code /}) and of one call
     * ({@value #PREFIX}{@code /{id}}), run on the admin threads; none when {@code journal} or {@code admin} is null
     * (the paths are then no route).
     */
    static void register(RouteTable<Exchange.Route> routes, JournalService journal, AdminWork admin,
                         String nodeTenant) {
        if (journal == null || admin == null) {
            return;
        }
        Exchange.Route route = x -> admin.run(x, io.netty.handler.codec.http.HttpResponseStatus.OK,
                route(journal, x.tenant(), nodeTenant, x.uri()));
        routes.add(io.netty.handler.codec.http.HttpMethod.GET, PREFIX, route)
                .add(io.netty.handler.codec.http.HttpMethod.GET, PREFIX + "/", route)
                .add(io.netty.handler.codec.http.HttpMethod.GET, PREFIX + "/{id}", route);
    }

    /**
     * The work answering {@code GET uri}, run on the admin threads: everything, parsing its parameters included,
     * fails there with a typed error.
     */
    static Supplier<Object> route(JournalService journal, String defaultTenant, String nodeTenant, String uri) {
        return () -> {
            String path;
            Map<String, List<String>> parameters;
            try {
                // The decoder decodes lazily: the path's escapes are checked here too, not later outside this guard.
                QueryStringDecoder decoded = new QueryStringDecoder(uri, StandardCharsets.UTF_8);
                path = decoded.path();
                parameters = decoded.parameters();
            } catch (IllegalArgumentException e) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the request's path or query string is malformed: "
                        + e.getMessage());
            }
            // an admin route: its caller sees every call of the tenant it reaches
            JournalScope scope = JournalScope.wholeTenant(tenant(defaultTenant, nodeTenant, parameters));
            if (path.equals(PREFIX) || path.equals(PREFIX + "/")) {
                return list(journal, scope, parameters);
            }
            return show(journal, scope, path.substring(PREFIX.length() + 1), parameters);
        };
    }

    /**
     * The tenant a request reads: the one its {@code tenant} parameter names when the caller is the cluster's operator
     * (an admin of the node's tenant, the admin token's), else only the caller's own.
     */
    private static String tenant(String callerTenant, String nodeTenant, Map<String, List<String>> parameters) {
        String named = single(parameters, "tenant").orElse(callerTenant);
        if (!named.equals(callerTenant) && !callerTenant.equals(nodeTenant)) {
            throw new ThresherException(ErrorCode.PERMISSION_DENIED, "permission denied: an admin of tenant '"
                    + Quoted.of(callerTenant) + "' reads only its own tenant's journal");
        }
        return named;
    }

    // ---- the list

    static ObjectNode list(JournalService journal, JournalScope scope, Map<String, List<String>> parameters) {
        known(parameters, LIST_PARAMETERS);
        String tenant = scope.tenant();
        List<Filter> filters = new ArrayList<>();
        single(parameters, "binding").ifPresent(b -> filters.add(new JournalSelect.Compare("binding", JournalSelect.Op.EQ,
                new JournalSelect.Text(b))));
        single(parameters, "state").ifPresent(s -> {
            if (!STATES.contains(s)) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "state is running, succeeded or failed, not '"
                        + Quoted.of(s) + "'");
            }
            filters.add(new JournalSelect.Compare("state", JournalSelect.Op.EQ, new JournalSelect.Text(s)));
        });
        single(parameters, "since").ifPresent(s -> filters.add(new JournalSelect.Compare("created_at", JournalSelect.Op.GE,
                new JournalSelect.Timestamp(instant("since", s)))));
        single(parameters, "until").ifPresent(s -> filters.add(new JournalSelect.Compare("created_at", JournalSelect.Op.LT,
                new JournalSelect.Timestamp(instant("until", s)))));
        single(parameters, "after").ifPresent(c -> filters.add(after(c)));
        int limit = single(parameters, "limit").map(JournalRoutes::limit).orElse(DEFAULT_LIMIT);

        Optional<Filter> where = filters.stream().reduce(JournalSelect.And::new);
        List<String> columns = JournalView.INVOCATIONS.columns().stream().map(JournalColumn::name)
                .filter(c -> !c.equals("result")).toList();
        JournalSelect select = new JournalSelect(JournalView.INVOCATIONS, columns, where,
                List.of(new JournalSelect.Order("created_at", true), new JournalSelect.Order("call_id", true)),
                OptionalLong.of(limit), 0);
        JournalRows rows = journal.select(scope, select);

        ObjectNode out = JSON.createObjectNode();
        out.put("tenant", tenant);
        ArrayNode invocations = out.putArray("invocations");
        for (int i = 0; i < rows.rows().size(); i++) {
            invocations.add(object(rows, i));
        }
        if (rows.more() && !rows.rows().isEmpty()) {
            List<Object> last = rows.rows().get(rows.rows().size() - 1);
            out.put("next", cursor((Instant) last.get(columns.indexOf("created_at")),
                    (UUID) last.get(columns.indexOf("call_id"))));
        } else {
            out.putNull("next");
        }
        return out;
    }

    /** The cursor of a row: its {@code created_at} in microseconds and its {@code call_id}, base64url. */
    static String cursor(Instant createdAt, UUID callId) {
        long micros = Math.addExact(Math.multiplyExact(createdAt.getEpochSecond(), 1_000_000L), createdAt.getNano() / 1_000);
        return Base64.getUrlEncoder().withoutPadding().encodeToString((micros + ":" + callId)
                .getBytes(StandardCharsets.US_ASCII));
    }

    /** The calls after (older than) the cursor's, in the list's order. */
    private static Filter after(String cursor) {
        Matcher m;
        try {
            m = CURSOR.matcher(new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.US_ASCII));
        } catch (IllegalArgumentException e) {
            m = null;
        }
        if (m == null || !m.matches() || JournalSelect.parseUuid(m.group(2)).isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "after is a cursor from a \"next\" of this list, not '"
                    + Quoted.of(cursor) + "'");
        }
        long micros;
        try {
            micros = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "after is a cursor from a \"next\" of this list");
        }
        Instant at = Instant.EPOCH.plusSeconds(Math.floorDiv(micros, 1_000_000L))
                .plusNanos(Math.floorMod(micros, 1_000_000L) * 1_000);
        JournalSelect.Literal t = new JournalSelect.Timestamp(at);
        JournalSelect.Literal id = new JournalSelect.Text(m.group(2));
        return new JournalSelect.Or(new JournalSelect.Compare("created_at", JournalSelect.Op.LT, t),
                new JournalSelect.And(new JournalSelect.Compare("created_at", JournalSelect.Op.EQ, t),
                        new JournalSelect.Compare("call_id", JournalSelect.Op.LT, id)));
    }

    private static int limit(String s) {
        long n;
        try {
            n = Long.parseLong(s.strip());
        } catch (NumberFormatException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "limit is a number of calls, not '" + Quoted.of(s) + "'");
        }
        if (n < 1) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "limit is at least 1, was " + n);
        }
        return (int) Math.min(n, JournalSelect.MAX_ROWS);
    }

    private static Instant instant(String parameter, String value) {
        return JournalSelect.parseTimestamp(value).orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                parameter + " is an ISO-8601 time such as 2025-01-31T09:15:00Z, not '" + Quoted.of(value) + "'"));
    }

    // ---- one call

    static ObjectNode show(JournalService journal, JournalScope scope, String id, Map<String, List<String>> parameters) {
        known(parameters, Set.of("tenant"));
        String tenant = scope.tenant();
        UUID callId = JournalSelect.parseUuid(id).orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                "'" + Quoted.of(id) + "' is not a call id (a UUID)"));
        Optional<Filter> thisCall = Optional.of(new JournalSelect.Compare("call_id", JournalSelect.Op.EQ,
                new JournalSelect.Text(callId.toString())));
        JournalRows invocation = journal.select(scope, JournalSelect.recent(JournalView.INVOCATIONS, thisCall, 1));
        if (invocation.rows().isEmpty()) {
            throw new ThresherException(ErrorCode.UNKNOWN_CALL, "call " + callId + " does not exist for tenant '" + tenant
                    + "' (finished calls are kept limits.coordinationRetentionMs)");
        }
        JournalRows runs = journal.select(scope, new JournalSelect(JournalView.SHARD_RUNS,
                JournalView.SHARD_RUNS.columns().stream().map(JournalColumn::name).toList(), thisCall,
                List.of(new JournalSelect.Order("run_index", false)), OptionalLong.empty(), 0));
        ObjectNode out = JSON.createObjectNode();
        out.put("tenant", tenant);
        out.set("invocation", object(invocation, 0));
        ArrayNode array = out.putArray("shard_runs");
        for (int i = 0; i < runs.rows().size(); i++) {
            array.add(object(runs, i));
        }
        return out;
    }

    // ---- JSON

    /** One row as an object keyed by column name: numbers as numbers, json as JSON, the rest as text. */
    private static ObjectNode object(JournalRows rows, int index) {
        ObjectNode o = JSON.createObjectNode();
        List<Object> row = rows.rows().get(index);
        for (int i = 0; i < row.size(); i++) {
            JournalColumn c = rows.columns().get(i);
            Object v = row.get(i);
            if (v == null) {
                o.putNull(c.name());
                continue;
            }
            switch (c.type()) {
                case INT4 -> o.put(c.name(), (Integer) v);
                case INT8 -> o.put(c.name(), (Long) v);
                case JSON -> o.set(c.name(), json((String) v));
                default -> o.put(c.name(), v.toString());
            }
        }
        return o;
    }

    private static JsonNode json(String text) {
        try {
            return JSON.readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            return JSON.getNodeFactory().textNode(text);
        }
    }

    // ---- parameters

    private static void known(Map<String, List<String>> parameters, Set<String> known) {
        for (String name : parameters.keySet()) {
            if (!known.contains(name)) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "unknown parameter '" + Quoted.of(name) + "'; this route takes "
                        + String.join(", ", known.stream().sorted().toList()));
            }
        }
    }

    private static Optional<String> single(Map<String, List<String>> parameters, String name) {
        List<String> values = parameters.get(name);
        if (values == null || values.isEmpty()) {
            return Optional.empty();
        }
        if (values.size() > 1) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter '" + name + "' is given "
                    + values.size() + " times");
        }
        String v = values.get(0);
        if (v.isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter '" + name + "' is empty");
        }
        return Optional.of(v);
    }
}
