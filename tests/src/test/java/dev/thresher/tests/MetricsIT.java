package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /metrics} on every node of the real cluster, read as a Prometheus server reads it: the exposition text
 * parsed, the series of docs/operations.md ("Metrics") present, and those of calls moved by the calls made.
 */
class MetricsIT {
    private static final String BINDING = "revenue_by_region";
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();

    /** One sample: a series (its name and labels) and its value. */
    record Sample(String name, Map<String, String> labels, double value) {}

    /** The samples of one scrape. */
    record Scrape(List<Sample> samples) {
        /** The samples of {@code name} whose labels include {@code labels}. */
        List<Sample> all(String name, Map<String, String> labels) {
            return samples.stream().filter(s -> s.name().equals(name)
                    && s.labels().entrySet().containsAll(labels.entrySet())).toList();
        }

        /** The one sample of {@code name} whose labels include {@code labels}. */
        double value(String name, Map<String, String> labels) {
            List<Sample> found = all(name, labels);
            assertThat(found).as("%s%s", name, labels).hasSize(1);
            return found.get(0).value();
        }

        double value(String name) {
            return value(name, Map.of());
        }

        /** The sample's value, 0 when the series is not there yet (a meter registered by the first call). */
        double valueOrZero(String name, Map<String, String> labels) {
            List<Sample> found = all(name, labels);
            assertThat(found).as("%s%s", name, labels).hasSizeLessThanOrEqualTo(1);
            return found.isEmpty() ? 0 : found.get(0).value();
        }
    }

    /**
     * Parses the Prometheus text exposition format (version 0.0.4): {@code # HELP} and {@code # TYPE} lines and
     * samples {@code name{label="value",...} value [timestamp]}, label values with {@code \\}, {@code \"} and
     * {@code \n} escaped.
     */
    static Scrape parse(String text) {
        List<Sample> samples = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int i = 0;
            while (i < line.length() && line.charAt(i) != '{' && line.charAt(i) != ' ') {
                i++;
            }
            String name = line.substring(0, i);
            Map<String, String> labels = new TreeMap<>();
            if (i < line.length() && line.charAt(i) == '{') {
                i++;
                while (line.charAt(i) != '}') {
                    int eq = line.indexOf('=', i);
                    String label = line.substring(i, eq).trim();
                    assertThat(line.charAt(eq + 1)).as(line).isEqualTo('"');
                    StringBuilder value = new StringBuilder();
                    int j = eq + 2;
                    for (; line.charAt(j) != '"'; j++) {
                        char c = line.charAt(j);
                        if (c == '\\') {
                            char e = line.charAt(++j);
                            value.append(e == 'n' ? '\n' : e);
                        } else {
                            value.append(c);
                        }
                    }
                    labels.put(label, value.toString());
                    i = j + 1;
                    if (line.charAt(i) == ',') {
                        i++;
                    }
                }
                i++;
            }
            String[] rest = line.substring(i).trim().split(" ");
            double value = switch (rest[0]) {
                case "+Inf" -> Double.POSITIVE_INFINITY;
                case "-Inf" -> Double.NEGATIVE_INFINITY;
                default -> Double.parseDouble(rest[0]);
            };
            assertThat(name).as(line).matches("[a-zA-Z_:][a-zA-Z0-9_:]*");
            samples.add(new Sample(name, labels, value));
        }
        return new Scrape(samples);
    }

    private HttpResponse<String> get(Node node, String accept) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(node.httpAddress() + "/metrics")).timeout(TIMEOUT).GET();
        if (accept != null) {
            b.header("Accept", accept);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private Scrape scrape(Node node) throws Exception {
        HttpResponse<String> res = get(node, null);
        assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
        assertThat(res.headers().firstValue("content-type")).hasValueSatisfying(
                t -> assertThat(t).startsWith("text/plain; version=0.0.4"));
        return parse(res.body());
    }

    private int call(Node node, String binding) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(node.httpAddress() + "/v1/bindings/" + binding + "/call"))
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).timeout(TIMEOUT).POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    private static Map<String, String> labels(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    @Test
    void everyNodeServesItsOwnSeriesAndTheCallsMoveThem() throws Exception {
        DevCluster cluster = Cluster.get();
        Node node = cluster.nodes().get(0);
        String id = node.hostId();
        Map<String, String> success = labels("binding", BINDING, "outcome", "success", "node", id);
        Map<String, String> unknown = labels("binding", "(unresolved)", "outcome", "UNKNOWN_BINDING", "node", id);
        List<String> phases = List.of("plan", "dispatch", "read", "guest", "publish", "validate", "reduce", "result");

        Scrape before = scrape(node);
        int calls = 2;
        for (int i = 0; i < calls; i++) {
            assertThat(call(node, BINDING)).isEqualTo(200);
        }
        assertThat(call(node, "no_such_binding")).isEqualTo(404);
        Scrape after = scrape(node);

        // calls: one histogram by binding and outcome, the caller's name of no binding never a tag value
        assertThat(after.value("thresher_call_seconds_count", success)
                - before.valueOrZero("thresher_call_seconds_count", success)).isEqualTo(calls);
        assertThat(after.value("thresher_call_seconds_count", unknown)
                - before.valueOrZero("thresher_call_seconds_count", unknown)).isEqualTo(1);
        assertThat(after.all("thresher_call_seconds_count", labels("binding", "no_such_binding"))).isEmpty();
        Map<String, String> inf = new LinkedHashMap<>(success);
        inf.put("le", "+Inf");
        assertThat(after.value("thresher_call_seconds_bucket", inf)).isEqualTo(after.value("thresher_call_seconds_count",
                success));
        assertThat(after.all("thresher_call_seconds_bucket", success)).as("ms to minutes buckets").hasSizeGreaterThan(10);
        assertThat(after.value("thresher_call_seconds_sum", success)).isPositive();
        // phases, one count per published call
        for (String phase : phases) {
            Map<String, String> p = labels("phase", phase);
            assertThat(after.value("thresher_call_phase_seconds_count", p) - before.value("thresher_call_phase_seconds_count", p))
                    .as(phase).isEqualTo(calls);
        }
        for (String phase : List.of("plan", "dispatch", "read", "guest", "reduce")) {
            Map<String, String> p = labels("phase", phase);
            assertThat(after.value("thresher_call_phase_seconds_sum", p)).as(phase)
                    .isGreaterThan(before.value("thresher_call_phase_seconds_sum", p));
        }
        // coordinator counters and gauges
        // a quiet cluster's calls are answered at the first try: no retry of any kind, no slot failed
        for (String reason : List.of("shard_retry", "replan", "superseded_request", "leader_wait")) {
            Map<String, String> r = labels("reason", reason);
            assertThat(after.value("thresher_retries_total", r) - before.value("thresher_retries_total", r)).as(reason)
                    .isZero();
        }
        assertThat(after.all("thresher_shard_runs_invalid_total", Map.of())).extracting(s -> s.labels().get("reason"))
                .contains("SLOT_MISSING", "SLOT_EXPIRED", "SLOT_STALE", "TARGET_STALE", "PARTIAL_KEY_DUPLICATED");
        assertThat(after.value("thresher_shard_runs_failed_total") - before.value("thresher_shard_runs_failed_total"))
                .isZero();
        // each renamed series is served under its former name too, for one release, with the same value
        for (String[] renamed : new String[][] {{"thresher_shard_runs_failed_total", "thresher_slots_failed_total"},
                {"thresher_shard_pool_places", "thresher_shard_run_places"},
                {"thresher_shard_runs_rejected_total", "thresher_slots_refused_total"}}) {
            assertThat(after.value(renamed[1])).as(renamed[1]).isEqualTo(after.value(renamed[0]));
        }
        assertThat(after.value("thresher_calls_in_flight")).isZero();
        assertThat(after.value("thresher_host_requests_out")).isZero();
        assertThat(after.value("thresher_host_requests_waiting")).isZero();
        assertThat(after.value("thresher_control_statements_total")).isGreaterThan(before.value("thresher_control_statements_total"));
        assertThat(after.value("thresher_control_transactions_total"))
                .isGreaterThanOrEqualTo(before.value("thresher_control_transactions_total") + 3 * calls);
        // leader side
        // the calls have ended, and no one else calls: no host request holds or waits for a place of the shard pool
        assertThat(after.value("thresher_host_requests_running")).isZero();
        assertThat(after.value("thresher_host_requests_queued")).isZero();
        assertThat(after.value("thresher_shard_pool_places")).isEqualTo(cluster.options().limits().shardConcurrency());
        // nothing refused, replayed or stopped, and leadership did not move, while the calls ran
        for (String counter : List.of("thresher_host_requests_refused_total", "thresher_shard_runs_rejected_total",
                "thresher_shard_runs_replayed_total", "thresher_call_stops_received_total", "thresher_lease_drops_total",
                "thresher_lease_takeovers_total")) {
            assertThat(after.value(counter) - before.value(counter)).as(counter).isZero();
        }
        double led = after.value("thresher_lease_partitions_led");
        assertThat(led).isPositive().isEqualTo(before.value("thresher_lease_partitions_led"));
        assertThat(after.value("thresher_lease_takeovers_total"))
                .isGreaterThanOrEqualTo(led + after.value("thresher_lease_drops_total"));
        // cells: this node reduced each call and ran the slots it leads
        assertThat(after.value("thresher_guest_starts_total") - before.value("thresher_guest_starts_total"))
                .isGreaterThanOrEqualTo(calls);
        assertThat(after.value("thresher_cell_activations_total")).isPositive();
        // a live cell was instantiated and not evicted since
        assertThat(after.value("thresher_cells_live")).isPositive().isLessThanOrEqualTo(
                after.value("thresher_cell_activations_total") - after.value("thresher_cell_evictions_total"));
        assertThat(after.value("thresher_guest_memory_reserved_bytes")).isPositive()
                .isLessThanOrEqualTo(after.value("thresher_guest_memory_budget_bytes"));
        assertThat(after.value("thresher_guest_memory_budget_bytes"))
                .isEqualTo(cluster.options().limits().guestMemoryBudgetBytes());
        // database pools
        List<String> pools = new ArrayList<>(List.of("control", "control-upkeep", "shard-1"));
        for (String pool : pools) {
            Map<String, String> p = labels("pool", pool);
            double max = after.value("thresher_db_pool_max_connections", p);
            assertThat(max).as(pool).isPositive();
            // the pool's connections, busy or idle, are within its maximum, and with one idle nobody waits for one
            double active = after.value("thresher_db_pool_active_connections", p);
            double idle = after.value("thresher_db_pool_idle_connections", p);
            assertThat(active + idle).as(pool).isLessThanOrEqualTo(max);
            if (idle > 0) {
                assertThat(after.value("thresher_db_pool_pending_threads", p)).as(pool).isZero();
            }
        }
        assertThat(after.value("thresher_db_pool_max_connections", labels("pool", "control"))).isEqualTo(8);
        // pgwire: the connections counted against the node's cap, and those refused by either cap
        // the calls went over HTTP: no pgwire connection was refused meanwhile
        for (String reason : List.of("node_limit", "user_limit")) {
            Map<String, String> r = labels("reason", reason);
            assertThat(after.value("thresher_pgwire_connections_refused_total", r)
                    - before.value("thresher_pgwire_connections_refused_total", r)).as(reason).isZero();
        }
        // a pgwire session opened on the node is one more connection while it is open
        double open = after.value("thresher_pgwire_connections");
        try (java.sql.Connection session = Cluster.connect(0)) {
            assertThat(session.isValid(5)).isTrue();
            assertThat(scrape(node).value("thresher_pgwire_connections")).isEqualTo(open + 1);
        }
        // the JVM and the process
        for (String jvm : List.of("jvm_memory_used_bytes", "jvm_memory_max_bytes", "jvm_threads_live_threads",
                "jvm_classes_loaded_classes", "jvm_gc_memory_allocated_bytes_total", "process_cpu_usage",
                "system_cpu_count", "process_uptime_seconds")) {
            assertThat(after.all(jvm, Map.of())).as(jvm).isNotEmpty();
        }
        // every series of Thresher's own is documented
        String docs = java.nio.file.Files.readString(java.nio.file.Path.of(System.getProperty("thresher.repo", ".."),
                "docs", "operations.md"));
        String section = docs.substring(docs.indexOf("## Metrics"), docs.indexOf("\n## ", docs.indexOf("## Metrics")));
        assertThat(after.samples().stream().map(Sample::name).filter(n -> n.startsWith("thresher_")).distinct())
                .isNotEmpty().allSatisfy(n -> assertThat(documented(section, n))
                        .as("docs/operations.md, \"Metrics\", lists %s", n).isTrue());
        // one registry per node: every sample names its node, and only it
        assertThat(after.samples()).allSatisfy(s -> assertThat(s.labels()).containsEntry("node", id));
        double ledByAll = 0;
        for (Node other : cluster.nodes()) {
            Scrape theirs = scrape(other);
            assertThat(theirs.samples()).allSatisfy(s -> assertThat(s.labels()).containsEntry("node", other.hostId()));
            assertThat(theirs.value("thresher_lease_partitions_led")).isPositive();
            ledByAll += theirs.value("thresher_lease_partitions_led");
        }
        // each partition of the control database is led by one node: the nodes' gauges add up to their number
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(cluster.controlUrl(), DevCluster.USER,
                DevCluster.PASSWORD); java.sql.ResultSet rs = c.createStatement().executeQuery(
                        "SELECT count(*) FROM partitions")) {
            assertThat(rs.next()).isTrue();
            assertThat(ledByAll).isEqualTo(rs.getLong(1));
        }
    }

    /** Whether {@code name}, or the histogram or summary it is a sample of, is named in {@code section}. */
    private static boolean documented(String section, String name) {
        if (section.contains("`" + name + "`")) {
            return true;
        }
        for (String suffix : List.of("_bucket", "_count", "_sum", "_max")) {
            if (name.endsWith(suffix) && section.contains("`" + name.substring(0, name.length() - suffix.length()) + "`")) {
                return true;
            }
        }
        return false;
    }

    @Test
    void openMetricsIsAnsweredWhenTheScraperAsksForIt() throws Exception {
        Node node = Cluster.get().nodes().get(1);
        HttpResponse<String> res = get(node, "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3");
        assertThat(res.statusCode()).isEqualTo(200);
        assertThat(res.headers().firstValue("content-type")).hasValueSatisfying(
                t -> assertThat(t).startsWith("application/openmetrics-text; version=1.0.0"));
        assertThat(res.body()).contains("# TYPE thresher_retries counter").endsWith("# EOF\n");

        HttpResponse<String> post = http.send(HttpRequest.newBuilder(URI.create(node.httpAddress() + "/metrics"))
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).timeout(TIMEOUT).POST(HttpRequest.BodyPublishers.ofString("")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(post.statusCode()).isEqualTo(405);
    }
}
