package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.RowBatch;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import dev.thresher.server.dev.DevCluster;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The guest SDKs of {@code sdk/}, built from source with their toolchains ({@code .ci/run} installs them): each
 * sample builds to the same bytes twice and, deployed to the real cluster, answers exactly what the WebAssembly
 * text sample answers; each SDK reads the host's golden batch vectors as the host decodes them.
 */
class GuestSdksIT {
    private static final Path REPO = Path.of(System.getProperty("thresher.repo", "..")).toAbsolutePath().normalize();
    private static final Path GOLDEN = REPO.resolve("bindings/src/test/resources/golden/abi/v1");

    @TempDir
    Path tmp;

    /** Runs a build command in {@code dir}; fails with its output when it fails or the tool is missing. */
    private static void build(Path dir, String... command) throws Exception {
        Process p;
        try {
            p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new AssertionError(command[0] + " is not installed; .ci/run installs the SDK toolchains (clang, lld, make)", e);
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + "\n" + out).isZero();
    }

    /** Copies a project's sources, leaving out what a build made (modules, build and target directories). */
    private static void copy(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f : files.toList()) {
                Path rel = from.relativize(f);
                String first = rel.getNameCount() == 0 ? "" : rel.getName(0).toString();
                if (first.equals("build") || first.equals("target") || first.equals("node_modules")
                        || f.toString().endsWith(".wasm")) {
                    continue;
                }
                if (Files.isDirectory(f)) {
                    Files.createDirectories(to.resolve(rel.toString()));
                } else {
                    Files.copy(f, to.resolve(rel.toString()));
                }
            }
        }
    }

    private static String call(String binding) throws Exception {
        try (Connection c = Cluster.connect(1); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING " + binding + "('{}')")) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }

    /** Debian's rustc (with its wasm32 standard library) when installed, else the one on the PATH. */
    private static final String RUSTC = Files.isExecutable(Path.of("/usr/bin/rustc")) ? "/usr/bin/rustc" : "rustc";

    /** The make arguments that build SDK {@code sdk}'s projects against its sources in the repository. */
    private static String[] make(String sdk) {
        return switch (sdk) {
            case "c" -> new String[] {"make", "-s", "SDK=" + REPO.resolve("sdk/c")};
            case "rust" -> new String[] {"make", "-s", "RUSTC=" + RUSTC, "SDK=" + REPO.resolve("sdk/rust/thresher-guest")};
            case "assemblyscript" -> new String[] {"make", "-s", "SDK=" + REPO.resolve("sdk/assemblyscript")};
            default -> throw new IllegalArgumentException(sdk);
        };
    }

    /** Builds SDK {@code sdk}'s sample twice (the same bytes), deploys it, and calls it beside the WAT sample. */
    private void sampleAnswersAsTheWatSample(String sdk, String binding) throws Exception {
        List<byte[]> builds = new ArrayList<>();
        for (String name : List.of("a", "b")) {
            Path dir = tmp.resolve(sdk + "-" + name);
            copy(REPO.resolve("sdk/" + sdk + "/examples/revenue_by_region"), dir);
            build(dir, make(sdk));
            builds.add(Files.readAllBytes(dir.resolve("revenue_by_region.wasm")));
        }
        assertThat(builds.get(1)).as("reproducible: the same source gives the same bytes").isEqualTo(builds.get(0));

        DevCluster cluster = Cluster.get();
        Cluster.bindings().deployDir(DevCluster.TENANT, "test", tmp.resolve(sdk + "-a"));
        String called = call(binding);
        assertThat(called).isEqualTo(call("revenue_by_region"));
        // the harness over the same rows (the cluster's table) answers the same
        String out = ComponentHarnessIT.thresher("component", "test", tmp.resolve(sdk + "-a").toString(), "--table",
                "orders", "--dev", cluster.endpointsFile().getParent().toString());
        assertThat(out).startsWith("0:");
        assertThat(out.lines().filter(l -> l.startsWith("result: ")))
                .containsExactly("result: " + called);
    }

    @Test
    void theCSampleBuildsToTheSameBytesTwiceAndAnswersExactlyAsTheWatSample() throws Exception {
        sampleAnswersAsTheWatSample("c", "revenue_by_region_c");
    }

    @Test
    void theRustSampleBuildsToTheSameBytesTwiceAndAnswersExactlyAsTheWatSample() throws Exception {
        sampleAnswersAsTheWatSample("rust", "revenue_by_region_rust");
    }

    @Test
    void theAssemblyScriptSampleBuildsToTheSameBytesTwiceAndAnswersExactlyAsTheWatSample() throws Exception {
        sampleAnswersAsTheWatSample("assemblyscript", "revenue_by_region_as");
    }

    /**
     * Builds SDK {@code sdk}'s HTTP handler sample twice (the same bytes), deploys it, and requests its routes on every
     * node: each answer is made of one call of the WAT sample, as a direct call answers it.
     */
    private void handlerSampleAnswersFromTheSample(String sdk, String binding) throws Exception {
        List<byte[]> builds = new ArrayList<>();
        for (String name : List.of("a", "b")) {
            Path dir = tmp.resolve(sdk + "-api-" + name);
            copy(REPO.resolve("sdk/" + sdk + "/examples/revenue_api"), dir);
            build(dir, make(sdk));
            builds.add(Files.readAllBytes(dir.resolve("revenue_api.wasm")));
        }
        assertThat(builds.get(1)).as("reproducible: the same source gives the same bytes").isEqualTo(builds.get(0));
        Cluster.bindings().deployDir(DevCluster.TENANT, "test", tmp.resolve(sdk + "-api-a"));
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        com.fasterxml.jackson.databind.JsonNode direct = json.readTree(call("revenue_by_region"));
        String region = direct.fieldNames().next();
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            for (var node : Cluster.get().nodes()) {
                String base = node.httpAddress() + "/v1/http/" + binding;
                var all = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/revenue"))
                        .header("Authorization", "Bearer " + Cluster.get().adminToken()).build(),
                        java.net.http.HttpResponse.BodyHandlers.ofString());
                assertThat(all.statusCode()).as(all.body()).isEqualTo(200);
                assertThat(all.headers().firstValue("content-type")).hasValue("application/json");
                assertThat(json.readTree(all.body())).isEqualTo(direct);
                var one = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base + "/regions/" + region
                        + "/revenue")).header("Authorization", "Bearer " + Cluster.get().adminToken()).build(),
                        java.net.http.HttpResponse.BodyHandlers.ofString());
                assertThat(one.statusCode()).as(one.body()).isEqualTo(200);
                assertThat(json.readTree(one.body())).isEqualTo(direct.get(region));
                var none = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(base
                        + "/regions/at%22lantis/revenue")).header("Authorization", "Bearer " + Cluster.get().adminToken())
                        .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
                assertThat(none.statusCode()).as(none.body()).isEqualTo(404);
                assertThat(json.readTree(none.body()).at("/error/region").asText()).isEqualTo("at\"lantis");
            }
        }
    }

    @Test
    void theCHandlerSampleBuildsToTheSameBytesTwiceAndAnswersFromOneCallOfTheSample() throws Exception {
        handlerSampleAnswersFromTheSample("c", "revenue_api_c");
    }

    @Test
    void theRustHandlerSampleBuildsToTheSameBytesTwiceAndAnswersFromOneCallOfTheSample() throws Exception {
        handlerSampleAnswersFromTheSample("rust", "revenue_api_rust");
    }

    @Test
    void theAssemblyScriptHandlerSampleBuildsToTheSameBytesTwiceAndAnswersFromOneCallOfTheSample() throws Exception {
        handlerSampleAnswersFromTheSample("assemblyscript", "revenue_api_as");
    }

    private void templateRunsInTheHarness(String sdk) throws Exception {
        Path dir = tmp.resolve(sdk + "-mine");
        copy(REPO.resolve("sdk/" + sdk + "/template"), dir);
        build(dir, make(sdk));
        String out = ComponentHarnessIT.thresher("component", "test", dir.toString(), "--csv",
                dir.resolve("rows.csv").toString(), "--partitions", "2");
        assertThat(out).startsWith("0:").contains("p0/rows = 1.0", "p1/rows = 2.0", "result: {\"rows\":3}");
    }

    @Test
    void theTemplatesBuildAndRunInTheHarness() throws Exception {
        templateRunsInTheHarness("c");
        templateRunsInTheHarness("rust");
        templateRunsInTheHarness("assemblyscript");
    }

    // ---- golden batches ------------------------------------------------------------------------------

    private static byte[] vector(String name) throws IOException {
        return vector(GOLDEN, name);
    }

    private static byte[] vector(Path dir, String name) throws IOException {
        StringBuilder hex = new StringBuilder();
        for (String line : Files.readAllLines(dir.resolve(name))) {
            int hash = line.indexOf('#');
            hex.append((hash < 0 ? line : line.substring(0, hash)).replaceAll("\\s", ""));
        }
        return HexFormat.of().parseHex(hex);
    }

    private static long fnv(long h, byte[] bytes) {
        for (byte b : bytes) {
            h ^= b & 0xff;
            h = (h * 16777619L) & 0xffffffffL;
        }
        return h;
    }

    /** The low {@code n} bytes of {@code v}, little-endian. */
    private static byte[] le(long v, int n) {
        return java.util.Arrays.copyOf(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array(), n);
    }

    /** The probe's view, computed from the host's own decoding of the batch (see sdk/c/tests/batch_probe.c). */
    private static Map<String, Double> hostView(byte[] batch, int batches) {
        RowBatch b = RowBatch.decode(batch);
        Map<String, Double> v = new TreeMap<>();
        v.put("partition", (double) Integer.toUnsignedLong(b.partitionId()));
        v.put("rows", (double) b.rowCount());
        v.put("columns", (double) b.columns().size());
        for (int c = 0; c < b.columns().size(); c++) {
            Column col = b.columns().get(c);
            long h = 2166136261L;
            int nulls = 0;
            for (int r = 0; r < b.rowCount(); r++) {
                if (b.isNull(c, r)) {
                    nulls++;
                    h = fnv(h, new byte[] {(byte) 0xFF});
                    continue;
                }
                byte[] bytes = switch (col.type()) {
                    case INT64 -> le(b.getLong(c, r), 8);
                    case FLOAT64 -> le(Double.doubleToRawLongBits(b.getDouble(c, r)), 8);
                    case BOOL -> new byte[] {(byte) (b.getBool(c, r) ? 1 : 0)};
                    case TEXT, BYTES -> {
                        byte[] p = col.type() == ColumnType.TEXT ? b.getText(c, r).getBytes(StandardCharsets.UTF_8) : b.getBytes(c, r);
                        byte[] out = new byte[4 + p.length];
                        System.arraycopy(le(p.length, 4), 0, out, 0, 4);
                        System.arraycopy(p, 0, out, 4, p.length);
                        yield out;
                    }
                };
                h = fnv(h, bytes);
            }
            v.put("c" + c + "/type", (double) col.type().tag());
            v.put("c" + c + "/nullable", col.nullable() ? 1.0 : 0.0);
            v.put("c" + c + "/name", (double) fnv(2166136261L, col.name().getBytes(StandardCharsets.UTF_8)));
            v.put("c" + c + "/nulls", (double) nulls);
            v.put("c" + c + "/values", (double) h);
        }
        v.put("batches", (double) batches);
        return v;
    }

    private static Map<String, Double> view(CellHost host, Component probe, byte[]... batches) {
        Map<String, Double> v = new TreeMap<>();
        for (Partial p : host.run(probe, RowBatchStream.of(batches), "{}",
                Deadline.afterMillis(System.nanoTime(), 30_000), dev.thresher.bindings.Budgets.NONE).partials()) {
            v.put(p.key(), p.value());
        }
        return v;
    }

    /** Checks an SDK's probe against every golden batch vector, and against a partition of two batches. */
    static void probeReadsTheGoldenBatches(byte[] probeWasm) throws Exception {
        Component probe = Component.of(probeWasm);
        try (CellHost host = CellHost.create(Limits.DEFAULTS)) {
            Map<String, byte[]> vectors = new LinkedHashMap<>();
            for (String name : List.of("row_batch_revenue.hex", "row_batch_all_types_nullable.hex", "row_batch_empty.hex")) {
                vectors.put(name, vector(name));
            }
            for (var e : vectors.entrySet()) {
                assertThat(view(host, probe, e.getValue())).as(e.getKey()).isEqualTo(hostView(e.getValue(), 1));
            }
            byte[] revenue = vectors.get("row_batch_revenue.hex");
            assertThat(view(host, probe, revenue, revenue)).as("two batches").isEqualTo(hostView(revenue, 2));
        }
    }

    @Test
    void theCSdkReadsTheGoldenBatchesAsTheHostDecodesThem() throws Exception {
        Path out = tmp.resolve("probe.wasm");
        build(REPO, "clang", "--target=wasm32", "-O2", "-nostdlib", "-fno-builtin", "-Isdk/c", "-Wl,--no-entry",
                "-Wl,--strip-all", "-o", out.toString(), "sdk/c/tests/batch_probe.c");
        probeReadsTheGoldenBatches(Files.readAllBytes(out));
    }

    @Test
    void theRustSdkReadsTheGoldenBatchesAsTheHostDecodesThem() throws Exception {
        Path rlib = tmp.resolve("libthresher_guest.rlib");
        Path out = tmp.resolve("probe.wasm");
        build(REPO, RUSTC, "--target", "wasm32-unknown-unknown", "--edition", "2021", "-C", "opt-level=2", "--crate-type",
                "rlib", "--crate-name", "thresher_guest", "-o", rlib.toString(), "sdk/rust/thresher-guest/src/lib.rs");
        build(REPO, RUSTC, "--target", "wasm32-unknown-unknown", "--edition", "2021", "-C", "opt-level=2", "--crate-type",
                "cdylib", "--crate-name", "batch_probe", "-L", tmp.toString(), "--extern", "thresher_guest=" + rlib,
                "-o", out.toString(), "sdk/rust/tests/batch_probe.rs");
        probeReadsTheGoldenBatches(Files.readAllBytes(out));
    }

    @Test
    void theAssemblyScriptSdkReadsTheGoldenBatchesAsTheHostDecodesThem() throws Exception {
        Path asc = tmp.resolve("asc");
        Files.createDirectories(asc);
        Files.writeString(asc.resolve("package.json"), "{\"private\": true}");
        build(asc, "npm", "install", "--no-audit", "--no-fund", "--silent", "assemblyscript@0.27.37");
        Path out = tmp.resolve("probe.wasm");
        build(REPO.resolve("sdk/assemblyscript/tests"), asc.resolve("node_modules/.bin/asc").toString(), "batch_probe.ts",
                "--path", "..", "--use", "abort=~lib/thresher-guest/index/abort", "-O3", "--runtime", "incremental",
                "-o", out.toString());
        probeReadsTheGoldenBatches(Files.readAllBytes(out));
    }

    // ---- golden HTTP requests --------------------------------------------------------------------------

    private static final Path GOLDEN_HTTP = REPO.resolve("bindings/src/test/resources/golden/abi/http/v1");

    private static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }

    /** The probe's view, from the host's own decoding of the request (see sdk/c/tests/request_probe.c). */
    private static String hostView(byte[] request) {
        dev.thresher.bindings.abi.HttpRequestCodec.Request r = dev.thresher.bindings.abi.HttpRequestCodec.decode(request);
        StringBuilder s = new StringBuilder("route " + r.routeIndex() + "\nmethod " + r.method() + "\npath " + r.path()
                + "\npattern " + r.route() + "\n");
        r.parameters().forEach(p -> s.append("param ").append(p.getKey()).append(' ')
                .append(hex(p.getValue().getBytes(StandardCharsets.UTF_8))).append('\n'));
        r.query().forEach(p -> s.append("query ").append(p.getKey()).append(' ')
                .append(hex(p.getValue().getBytes(StandardCharsets.UTF_8))).append('\n'));
        r.headers().forEach(p -> s.append("header ").append(p.getKey()).append(' ')
                .append(hex(p.getValue().getBytes(StandardCharsets.ISO_8859_1))).append('\n'));
        return s.append("body ").append(hex(r.body())).append('\n').toString();
    }

    /** Checks an SDK's request probe against every golden HTTP request vector. */
    static void probeReadsTheGoldenRequests(byte[] probeWasm) throws Exception {
        Component probe = Component.of(probeWasm);
        dev.thresher.cellhost.NestedCalls none = new dev.thresher.cellhost.NestedCalls() {
            @Override
            public Outcome call(String descriptor, String argumentsJson, Deadline deadline) {
                throw new AssertionError("the probe makes no call");
            }

            @Override
            public Outcome refused(dev.thresher.errors.ThresherException failure) {
                throw new AssertionError("the probe makes no call");
            }
        };
        try (CellHost host = CellHost.create(Limits.DEFAULTS)) {
            for (String name : List.of("request_regions.hex", "request_all_fields.hex", "request_empty.hex")) {
                byte[] request = vector(GOLDEN_HTTP, name);
                byte[] body = host.handle(probe, request, Deadline.afterMillis(System.nanoTime(), 30_000), none).body();
                assertThat(new String(body, StandardCharsets.UTF_8)).as(name).isEqualTo(hostView(request));
            }
        }
    }

    @Test
    void theCSdkReadsTheGoldenRequestsAsTheHostDecodesThem() throws Exception {
        Path out = tmp.resolve("request_probe.wasm");
        build(REPO, "clang", "--target=wasm32", "-O2", "-nostdlib", "-fno-builtin", "-Isdk/c", "-Wl,--no-entry",
                "-Wl,--strip-all", "-o", out.toString(), "sdk/c/tests/request_probe.c");
        probeReadsTheGoldenRequests(Files.readAllBytes(out));
    }

    @Test
    void theRustSdkReadsTheGoldenRequestsAsTheHostDecodesThem() throws Exception {
        Path rlib = tmp.resolve("libthresher_guest.rlib");
        Path out = tmp.resolve("request_probe.wasm");
        build(REPO, RUSTC, "--target", "wasm32-unknown-unknown", "--edition", "2021", "-C", "opt-level=2", "--crate-type",
                "rlib", "--crate-name", "thresher_guest", "-o", rlib.toString(), "sdk/rust/thresher-guest/src/lib.rs");
        build(REPO, RUSTC, "--target", "wasm32-unknown-unknown", "--edition", "2021", "-C", "opt-level=2", "--crate-type",
                "cdylib", "--crate-name", "request_probe", "-L", tmp.toString(), "--extern", "thresher_guest=" + rlib,
                "-o", out.toString(), "sdk/rust/tests/request_probe.rs");
        probeReadsTheGoldenRequests(Files.readAllBytes(out));
    }

    @Test
    void theAssemblyScriptSdkReadsTheGoldenRequestsAsTheHostDecodesThem() throws Exception {
        Path asc = tmp.resolve("asc");
        Files.createDirectories(asc);
        Files.writeString(asc.resolve("package.json"), "{\"private\": true}");
        build(asc, "npm", "install", "--no-audit", "--no-fund", "--silent", "assemblyscript@0.27.37");
        Path out = tmp.resolve("request_probe.wasm");
        build(REPO.resolve("sdk/assemblyscript/tests"), asc.resolve("node_modules/.bin/asc").toString(), "request_probe.ts",
                "--path", "..", "--use", "abort=~lib/thresher-guest/index/abort", "-O3", "--runtime", "incremental",
                "-o", out.toString());
        probeReadsTheGoldenRequests(Files.readAllBytes(out));
    }
}
