package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * {@code thresher journal ls} and {@code thresher journal show ID}: the coordination journal as a node serves it at
 * {@code GET /admin/invocations} and {@code GET /admin/invocations/{id}}, printed as tables or, with {@code --json},
 * as the node's JSON. The node is {@code --node URL}, else the nodes of a running dev cluster's
 * {@code endpoints.json} (under {@code --dev}), tried in turn until one answers.
 */
@Command(name = "journal", description = "The coordination journal: recent calls, and one call's shard runs, from a node's"
        + " GET /admin/invocations routes (the same facts as SELECT ... FROM thresher.invocations over pgwire).",
        subcommands = {JournalCommand.Ls.class, JournalCommand.Show.class})
final class JournalCommand implements Runnable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern AGO = Pattern.compile("(\\d+)([smhd])");

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** Which node to ask, as whom (the admin client's {@code --node} and {@code --dev}), and how to print. */
    static final class NodeOptions extends AdminClient {
        @Option(names = "--tenant", description = "The tenant whose calls to read (default: the node's).")
        String tenant;

        @Option(names = "--json", description = "Print the node's JSON answer instead of a table.")
        boolean json;

        @Override
        JsonNode get(String path, Map<String, String> query) throws IOException, InterruptedException {
            Map<String, String> q = new LinkedHashMap<>(query);
            if (tenant != null) {
                q.put("tenant", tenant);
            }
            return super.get(path, q);
        }

        void print(PrintWriter out, JsonNode body) throws IOException {
            out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(body));
        }
    }

    @Command(name = "ls", description = "Recent calls, newest first: id, binding, state, error, slots, attempts, when,"
            + " how long. Pages with --after (the cursor printed after a full page).")
    static final class Ls implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @CommandLine.Mixin
        NodeOptions node;

        @Option(names = "--binding", description = "Only calls of this binding.")
        String binding;

        @Option(names = "--state", description = "Only calls in this state: running, succeeded or failed.")
        String state;

        @Option(names = "--since", description = "Only calls recorded at or after this time: ISO-8601"
                + " (2025-01-31T09:00:00Z), or an age such as 90s, 15m, 2h, 1d.")
        String since;

        @Option(names = "--until", description = "Only calls recorded before this time (as --since).")
        String until;

        @Option(names = "--limit", defaultValue = "20", description = "Calls at most (default ${DEFAULT-VALUE}; at most 1000).")
        int limit;

        @Option(names = "--after", description = "The cursor a previous page printed: the calls after it.")
        String after;

        @Override
        public Integer call() throws Exception {
            Map<String, String> q = new LinkedHashMap<>();
            q.put("binding", binding);
            q.put("state", state);
            q.put("since", time(since));
            q.put("until", time(until));
            q.put("limit", Integer.toString(limit));
            q.put("after", after);
            JsonNode body = node.get("/admin/invocations", q);
            PrintWriter out = spec.commandLine().getOut();
            if (node.json) {
                node.print(out, body);
            } else {
                List<JsonNode> rows = new ArrayList<>();
                body.path("invocations").forEach(rows::add);
                Map<String, Function<JsonNode, String>> columns = new LinkedHashMap<>();
                columns.put("CALL_ID", r -> text(r, "call_id"));
                columns.put("BINDING", r -> text(r, "binding") + " v" + text(r, "binding_version"));
                columns.put("STATE", r -> text(r, "state"));
                columns.put("ERROR", r -> text(r, "error_name"));
                columns.put("SLOTS", r -> text(r, "slots_published") + "/" + text(r, "slot_count"));
                columns.put("ATTEMPTS", r -> text(r, "attempts"));
                columns.put("CREATED_AT", r -> text(r, "created_at"));
                columns.put("DURATION_MS", r -> text(r, "duration_ms"));
                columns.put("COORDINATOR", r -> text(r, "coordinator_host"));
                table(out, columns, rows);
                if (!body.path("next").isNull() && !body.path("next").isMissingNode()) {
                    out.println("more: --after " + body.path("next").asText());
                }
            }
            out.flush();
            return 0;
        }
    }

    @Command(name = "show", description = "One call: its invocation, then a table of its shard runs (partition, epoch, host,"
            + " attempts, state, rows read, emits, read and guest time, publication, failure and its class).")
    static final class Show implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @CommandLine.Mixin
        NodeOptions node;

        @Parameters(index = "0", description = "The call's id.")
        String id;

        @Override
        public Integer call() throws Exception {
            JsonNode body = node.get("/admin/invocations/" + URLEncoder.encode(id, StandardCharsets.UTF_8), Map.of());
            PrintWriter out = spec.commandLine().getOut();
            if (node.json) {
                node.print(out, body);
                out.flush();
                return 0;
            }
            JsonNode i = body.path("invocation");
            out.printf("call      %s%n", text(i, "call_id"));
            out.printf("binding   %s version %s (%s)%n", text(i, "binding"), text(i, "binding_version"),
                    text(i, "component_digest"));
            out.printf("state     %s%s%n", text(i, "state"), i.path("error_code").isNull() ? "" : ": "
                    + text(i, "error_name") + " (" + text(i, "error_code") + ", " + text(i, "error_category") + ", "
                    + text(i, "retry_class") + ") " + text(i, "error_message"));
            out.printf("recorded  %s by %s, deadline %s%n", text(i, "created_at"), text(i, "coordinator_host"),
                    text(i, "deadline_at"));
            out.printf("finished  %s (%s ms)%s%n", text(i, "finished_at"), text(i, "duration_ms"),
                    i.path("published_by").isNull() ? "" : ", published by " + text(i, "published_by"));
            out.printf("slots     %s of %s published, %s slot runs sent%s%n", text(i, "slots_published"),
                    text(i, "slot_count"), text(i, "attempts"), i.path("reduce_host").isNull() ? ""
                            : "; reduce on " + text(i, "reduce_host") + " (" + millis(i, "reduce_micros") + " ms)");
            out.println();
            List<JsonNode> runs = new ArrayList<>();
            // a node before the rename answers its shard runs as "slots", each with its slot_index
            body.path(body.has("shard_runs") ? "shard_runs" : "slots").forEach(runs::add);
            Map<String, Function<JsonNode, String>> columns = new LinkedHashMap<>();
            columns.put("RUN", r -> text(r, r.has("run_index") ? "run_index" : "slot_index"));
            columns.put("PARTITION", r -> text(r, "partition_id"));
            columns.put("EPOCH", r -> text(r, "epoch"));
            columns.put("HOST", r -> text(r, "host_id"));
            columns.put("ATTEMPTS", r -> text(r, "attempts"));
            columns.put("STATE", r -> text(r, "state"));
            columns.put("ROWS", r -> text(r, "rows_read"));
            columns.put("EMITS", r -> text(r, "emits"));
            columns.put("READ_MS", r -> millis(r, "read_micros"));
            columns.put("GUEST_MS", r -> millis(r, "guest_micros"));
            columns.put("PUBLISHED_AT", r -> text(r, "published_at"));
            columns.put("LEASE_UNTIL", r -> text(r, "lease_until"));
            columns.put("ERROR", r -> r.path("error_code").isNull() ? "" : text(r, "error_name") + " ("
                    + text(r, "retry_class") + "): " + text(r, "error_message"));
            table(out, columns, runs);
            out.flush();
            return 0;
        }
    }

    /** An ISO-8601 time as given, or an age ({@code 15m}) as the time that long ago. */
    static String time(String value) {
        if (value == null) {
            return null;
        }
        Matcher m = AGO.matcher(value.strip());
        if (!m.matches()) {
            return value;
        }
        long n = Long.parseLong(m.group(1));
        Duration d = switch (m.group(2)) {
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
        };
        return Instant.now().minus(d).toString();
    }

    private static String text(JsonNode row, String field) {
        JsonNode v = row.path(field);
        return v.isNull() || v.isMissingNode() ? "" : v.asText();
    }

    private static String millis(JsonNode row, String field) {
        JsonNode v = row.path(field);
        return v.isNull() || v.isMissingNode() ? "" : String.format(java.util.Locale.ROOT, "%.1f", v.asLong() / 1000.0);
    }

    /** Rows as a table: a header, then one line per row, columns as wide as their widest value, the last unpadded. */
    static void table(PrintWriter out, Map<String, Function<JsonNode, String>> columns, List<JsonNode> rows) {
        List<String> names = new ArrayList<>(columns.keySet());
        List<List<String>> cells = new ArrayList<>();
        for (JsonNode r : rows) {
            List<String> line = new ArrayList<>();
            for (String n : names) {
                line.add(columns.get(n).apply(r).replace('\n', ' '));
            }
            cells.add(line);
        }
        int[] width = new int[names.size()];
        for (int c = 0; c < names.size(); c++) {
            width[c] = names.get(c).length();
            for (List<String> line : cells) {
                width[c] = Math.max(width[c], line.get(c).length());
            }
        }
        out.println(line(names, width));
        for (List<String> line : cells) {
            out.println(line(line, width));
        }
    }

    private static String line(List<String> values, int[] width) {
        StringBuilder b = new StringBuilder();
        for (int c = 0; c < values.size(); c++) {
            b.append(c == values.size() - 1 ? values.get(c) : String.format("%-" + width[c] + "s  ", values.get(c)));
        }
        return b.toString().stripTrailing();
    }
}
