package dev.thresher.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class RevenueByRegionTest {
    private static final List<Column> COLUMNS =
            List.of(Column.of("region", ColumnType.TEXT), Column.of("amount", ColumnType.FLOAT64));
    private static final List<String> REGIONS =
            List.of("north", "south", "east", "west", "südwest", "z", "Zentral", "ap-northeast-1");
    private static final Comparator<String> UTF8_ORDER = (a, b) ->
            Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));

    private static CellHost host;
    private static Component component;

    @BeforeAll
    static void start() {
        host = CellHost.create(Limits.DEFAULTS);
        component = Component.of(ExampleComponents.revenueByRegionWasm());
    }

    @AfterAll
    static void stop() {
        host.close();
    }

    private static Deadline deadline() {
        return Deadline.afterMillis(System.nanoTime(), TimeUnit.SECONDS.toMillis(60));
    }

    private static byte[] batch(int partition, List<String> regions, List<Double> amounts) {
        RowBatchBuilder b = new RowBatchBuilder(partition, COLUMNS, Limits.DEFAULTS.rowsPerBatch(), Limits.DEFAULTS.batchMaxBytes());
        for (int i = 0; i < regions.size(); i++) {
            b.startRow();
            b.setText(0, regions.get(i)).setDouble(1, amounts.get(i));
        }
        return b.finish();
    }

    @Test
    void threePartitionsOfRandomRowsReduceToTheJavaSums() throws IOException {
        Random random = new Random(20240611);
        int[] partitions = {3, 11, 4_000_000};
        int[] rowCounts = {1_000, 2_500, 4_096};
        Map<String, double[]> expected = new TreeMap<>(UTF8_ORDER);
        List<Partial> all = new ArrayList<>();
        for (int p = 0; p < partitions.length; p++) {
            List<String> regions = new ArrayList<>();
            List<Double> amounts = new ArrayList<>();
            for (int r = 0; r < rowCounts[p]; r++) {
                String region = REGIONS.get(random.nextInt(REGIONS.size()));
                double amount = Math.round(random.nextDouble() * 100_000) / 100.0 - 50;
                regions.add(region);
                amounts.add(amount);
                double[] e = expected.computeIfAbsent(region, k -> new double[2]);
                e[0] += amount;
                e[1] += 1;
            }
            RunOutcome out = host.run(component, batch(partitions[p], regions, amounts), "{\"ignored\":true}", deadline());
            int partition = partitions[p];
            assertThat(out.partials()).allSatisfy(x -> assertThat(x.key()).startsWith("p" + partition + "/"));
            assertThat(out.partials()).hasSize(2 * (int) regions.stream().distinct().count());
            all.addAll(out.partials());
        }
        Collections.sort(all);
        String json = host.reduce(component, PartialsCodec.encode(all), "{}", deadline()).resultJson();

        Map<String, double[]> actual = parse(json);
        assertThat(actual.keySet()).containsExactlyElementsOf(expected.keySet());
        for (var e : expected.entrySet()) {
            double[] a = actual.get(e.getKey());
            assertThat(a[0]).as("sum of %s", e.getKey()).isCloseTo(e.getValue()[0], within(Math.abs(e.getValue()[0]) * 1e-9));
            assertThat(a[1]).as("count of %s", e.getKey()).isEqualTo(e.getValue()[1]);
        }
    }

    @Test
    void aPartitionOfManyBatchesIsFoldedInOneRunAsOneBatchWouldBe() throws IOException {
        // 25 batches of one partition; each batch brings regions at other offsets, and a region first seen
        // in one batch must keep its name after the next batch is read over it
        Random random = new Random(42);
        List<byte[]> batches = new ArrayList<>();
        Map<String, double[]> expected = new TreeMap<>(UTF8_ORDER);
        for (int k = 0; k < 25; k++) {
            List<String> regions = new ArrayList<>();
            List<Double> amounts = new ArrayList<>();
            int rows = k == 0 ? 1 : 1 + random.nextInt(Limits.DEFAULTS.rowsPerBatch());
            for (int r = 0; r < rows; r++) {
                String region = k == 0 ? "zz-first-only" : REGIONS.get(random.nextInt(REGIONS.size()));
                double amount = random.nextInt(1_000_000) / 100.0;
                regions.add(region);
                amounts.add(amount);
                double[] e = expected.computeIfAbsent(region, x -> new double[2]);
                e[0] += amount;
                e[1] += 1;
            }
            batches.add(batch(9, regions, amounts));
        }
        RunOutcome out = host.run(component, RowBatchStream.of(batches.toArray(byte[][]::new)), "{}", deadline());
        assertThat(out.partials()).allSatisfy(x -> assertThat(x.key()).startsWith("p9/"));
        List<Partial> sorted = new ArrayList<>(out.partials());
        Collections.sort(sorted);
        Map<String, double[]> actual = parse(host.reduce(component, PartialsCodec.encode(sorted), "{}", deadline()).resultJson());
        assertThat(actual.keySet()).containsExactlyElementsOf(expected.keySet());
        for (var e : expected.entrySet()) {
            assertThat(actual.get(e.getKey())[0]).as("sum of %s", e.getKey())
                    .isCloseTo(e.getValue()[0], within(Math.abs(e.getValue()[0]) * 1e-9));
            assertThat(actual.get(e.getKey())[1]).as("count of %s", e.getKey()).isEqualTo(e.getValue()[1]);
        }
    }

    @Test
    void runEmitsOneSumAndOneCountPerRegion() {
        RunOutcome out = host.run(component, batch(7, List.of("eu", "us", "eu"), List.of(1.5, 2.0, -0.25)), "{}", deadline());
        assertThat(out.partials()).containsExactly(
                new Partial("p7/eu/sum", 1.25), new Partial("p7/eu/count", 2),
                new Partial("p7/us/sum", 2.0), new Partial("p7/us/count", 1));
        String json = host.reduce(component, PartialsCodec.encode(out.partials()), "{}", deadline()).resultJson();
        assertThat(json).isEqualTo("{\"eu\":{\"sum\":1.25,\"count\":2},\"us\":{\"sum\":2.0,\"count\":1}}");
    }

    @Test
    void emptyInputsGiveAnEmptyObject() {
        assertThat(host.run(component, batch(1, List.of(), List.of()), "{}", deadline()).partials()).isEmpty();
        assertThat(host.reduce(component, PartialsCodec.encode(List.of()), "{}", deadline()).resultJson()).isEqualTo("{}");
    }

    @Test
    void aBatchOfOtherColumnsIsRefusedByTheGuest() {
        List<List<Column>> wrong = List.of(
                List.of(Column.of("amount", ColumnType.FLOAT64), Column.of("region", ColumnType.TEXT)),
                List.of(Column.nullable("region", ColumnType.TEXT), Column.of("amount", ColumnType.FLOAT64)),
                List.of(Column.of("regio", ColumnType.TEXT), Column.of("amount", ColumnType.FLOAT64)),
                List.of(Column.of("region", ColumnType.TEXT), Column.of("amount", ColumnType.INT64)),
                List.of(Column.of("region", ColumnType.TEXT)));
        for (List<Column> columns : wrong) {
            byte[] bytes = new RowBatchBuilder(1, columns, 10, 1 << 20).finish();
            assertThatThrownBy(() -> host.run(component, bytes, "{}", deadline()))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE);
                        assertThat(e.getMessage()).startsWith("batch is not TRB1");
                    });
        }
    }

    @Test
    void moreRegionsThanTheEmitLimitAllowsIsRefusedByTheGuest() {
        List<String> regions = new ArrayList<>();
        List<Double> amounts = new ArrayList<>();
        for (int i = 0; i < 33; i++) {
            regions.add("r" + i);
            amounts.add(1.0);
        }
        assertThatThrownBy(() -> host.run(component, batch(1, regions, amounts), "{}", deadline()))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE));
    }

    @Test
    void unknownKeyShapesAreRefusedByTheGuest() {
        for (String key : List.of("p1/eu/avg", "no-slash", "p1/sum", "p1/eu/")) {
            byte[] partials = PartialsCodec.encode(List.of(new Partial(key, 1)));
            assertThatThrownBy(() -> host.reduce(component, partials, "{}", deadline()))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE);
                        assertThat(e.getMessage()).startsWith("unknown partial key shape");
                    });
        }
        // The region is everything between the first and the last '/'.
        String json = host.reduce(component, PartialsCodec.encode(List.of(
                new Partial("p1/a/b/sum", 2), new Partial("p1/a/b/count", 1))), "{}", deadline()).resultJson();
        assertThat(json).isEqualTo("{\"a/b\":{\"sum\":2.0,\"count\":1}}");
    }

    @Test
    void theWatTextIsShippedAlongside() {
        assertThat(ExampleComponents.revenueByRegionWat()).contains("(module").contains("thresher_abi_version");
        assertThat(ExampleComponents.revenueByRegionWasm()).startsWith(0, 'a', 's', 'm');
    }

    /** {"region": {"sum": n, "count": n}, ...} into region -> {sum, count}, keeping the document's order. */
    private static Map<String, double[]> parse(String json) throws IOException {
        Map<String, double[]> out = new LinkedHashMap<>();
        try (JsonParser p = new JsonFactory().createParser(json)) {
            assertThat(p.nextToken()).isEqualTo(JsonToken.START_OBJECT);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String region = p.currentName();
                double[] v = new double[2];
                assertThat(p.nextToken()).isEqualTo(JsonToken.START_OBJECT);
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String field = p.currentName();
                    JsonToken t = p.nextToken();
                    switch (field) {
                        case "sum" -> v[0] = p.getDoubleValue();
                        case "count" -> {
                            assertThat(t).isEqualTo(JsonToken.VALUE_NUMBER_INT);
                            v[1] = p.getLongValue();
                        }
                        default -> throw new AssertionError("unexpected field " + field);
                    }
                }
                out.put(region, v);
            }
            assertThat(p.nextToken()).isNull();
        }
        return out;
    }
}
