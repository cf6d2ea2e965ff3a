package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.CsvLoader;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.cli.Main;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * A table of a user's own, end to end: {@code thresher table create}, {@code thresher load} from a CSV
 * file, a binding over it called through pgwire and compared with SQL over the shard databases, and the
 * refusals (bad rows name their line and column and load nothing; a table read by a binding is not
 * dropped).
 */
class TablesIT {
    private static final int ROWS = 1_000;
    /** The most bytes any request body but a load's may hold. */
    private static final long PAYLOAD_LIMIT = Limits.DEFAULTS.directCallPayloadBytes();
    private static final List<String> REGIONS = List.of("north", "south, east", "west \"far\"", "centre");
    private static DevCluster cluster;
    private static Path dev;

    @BeforeAll
    static void createAndLoad() throws Exception {
        cluster = Cluster.get();
        dev = cluster.endpointsFile().getParent();
        assertThat(main("table", "create", "sales", "--dev", dev.toString(), "--key", "sale_id",
                "--columns", "sale_id bigint, region text not null, amount double precision not null", "--partitions", "8")).isZero();
        StringBuilder csv = new StringBuilder("sale_id,region,amount\n");
        for (int i = 1; i <= ROWS; i++) {
            String region = REGIONS.get(i % REGIONS.size());
            csv.append(i).append(",\"").append(region.replace("\"", "\"\"")).append("\",").append(i % 97 + 0.25).append('\n');
        }
        Path file = Files.createTempFile("sales-", ".csv");
        Files.writeString(file, csv, StandardCharsets.UTF_8);
        assertThat(main("load", "sales", file.toString(), "--header", "--dev", dev.toString())).isZero();
    }

    private static int main(String... args) {
        return new CommandLine(new Main()).execute(args);
    }

    private static TableAdmin admin() {
        return new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD, new PrintStream(
                PrintStream.nullOutputStream()));
    }

    @Test
    void everyRowLandsOnTheShardItsSlotNames() throws Exception {
        Map<Integer, Integer> shardOfSlot = new HashMap<>();
        List<Partition> partitions;
        try (TableAdmin admin = admin()) {
            partitions = admin.control().readTopology().partitionsOf(DevCluster.TENANT, "sales");
        }
        assertThat(partitions).hasSize(8);
        partitions.forEach(p -> {
            for (int s = p.slotLo(); s <= p.slotHi(); s++) {
                shardOfSlot.put(s, p.shardId());
            }
        });
        int seen = 0;
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT sale_id, thresher_slot FROM sales")) {
                while (rs.next()) {
                    int slot = Slots.ofLong(rs.getLong(1));
                    assertThat(rs.getInt(2)).as("slot of %d", rs.getLong(1)).isEqualTo(slot);
                    assertThat(shardOfSlot.get(slot)).as("shard of sale %d", rs.getLong(1)).isEqualTo(shard);
                    seen++;
                }
            }
        }
        assertThat(seen).isEqualTo(ROWS);
    }

    @Test
    void aBindingOverTheTableEqualsSqlOverTheShardDatabases() throws Exception {
        String digest = cluster.nodes().get(0).catalog().currentBinding(DevCluster.TENANT, DevCluster.SAMPLE_BINDING)
                .orElseThrow().componentDigest();
        try (TableAdmin admin = admin()) {
            admin.control().putBinding(DevCluster.TENANT, "sales_by_region", digest, "SELECT region, amount FROM sales");
        }
        Map<String, double[]> reference = new TreeMap<>();
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT region, sum(amount), count(*) FROM sales GROUP BY region")) {
                while (rs.next()) {
                    double[] t = reference.computeIfAbsent(rs.getString(1), k -> new double[2]);
                    t[0] += rs.getDouble(2);
                    t[1] += rs.getLong(3);
                }
            }
        }
        assertThat(reference.keySet()).containsExactlyInAnyOrderElementsOf(REGIONS);
        JsonNode result;
        try (Connection c = Cluster.connect(1); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING sales_by_region('{}')")) {
            assertThat(rs.next()).isTrue();
            result = new ObjectMapper().readTree(rs.getString(1));
        }
        assertThat(result.size()).isEqualTo(reference.size());
        reference.forEach((region, t) -> {
            assertThat(result.get(region).get("sum").asDouble()).as(region).isCloseTo(t[0], within(1e-6));
            assertThat(result.get(region).get("count").asLong()).as(region).isEqualTo((long) t[1]);
        });
        try (TableAdmin admin = admin()) {
            assertThatThrownBy(() -> admin.drop(DevCluster.TENANT, "sales"))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION);
                        assertThat(e.getMessage()).contains("sales_by_region");
                    });
            assertThat(admin.list(DevCluster.TENANT)).anySatisfy(l -> assertThat(l).startsWith("sales").contains("8 partitions"));
        }
    }

    @Test
    void aBadRowNamesItsLineAndColumnAndLoadsNothing() throws Exception {
        String badAmount = "sale_id,region,amount\n5001,north,1.5\n5002,north,2.5\n5003,south,abc\n5004,west,4\n";
        String badKey = "5101,north,1.5\nx,north,2\n";
        String shortRow = "5201,north,1.5\n5202,north\n";
        try (TableAdmin admin = admin()) {
            CsvLoader loader = new CsvLoader(admin, CsvLoader.Progress.NONE);
            assertThatThrownBy(() -> loader.load(DevCluster.TENANT, "sales", new StringReader(badAmount), true))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS);
                        assertThat(e.getMessage()).contains("line 4").contains("column amount");
                    });
            assertThatThrownBy(() -> loader.load(DevCluster.TENANT, "sales", new StringReader(badKey), false))
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.getMessage()).contains("line 2, column sale_id").contains("'x' is not a bigint"));
            assertThatThrownBy(() -> loader.load(DevCluster.TENANT, "sales", new StringReader(shortRow), false))
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.getMessage()).contains("line 2: expected 3 fields"));
            assertThatThrownBy(() -> admin.create(DevCluster.TENANT, "bad", "id", "id bigint, v jsonb", 4, List.of()))
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.getMessage()).contains("column v has type 'jsonb'"));
        }
        long count = 0;
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM sales WHERE sale_id > 5000")) {
                rs.next();
                count += rs.getLong(1);
            }
        }
        assertThat(count).as("rows of the failed loads on any shard").isZero();
    }

    /** {@code thresher load} as a user runs it: the exit code, what it printed, and what it said went wrong. */
    private record Run(int exit, String out, String err) {}

    private static Run load(Path file, String... more) {
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setOut(new java.io.PrintWriter(out, true));
        cl.setErr(new java.io.PrintWriter(err, true));
        List<String> args = new java.util.ArrayList<>(List.of("load"));
        args.addAll(List.of(more));
        args.addAll(List.of(file.toString(), "--dev", dev.toString()));
        return new Run(cl.execute(args.toArray(String[]::new)), out.toString(), err.toString());
    }

    private static long rowsOnShards(String sql) throws Exception {
        long count = 0;
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
                rs.next();
                count += rs.getLong(1);
            }
        }
        return count;
    }

    @Test
    void theLoadCommandStreamsAFileLargerThanAnyRequestBodyThroughANodeAndARefusedFileLoadsNothing() throws Exception {
        assertThat(main("table", "create", "ledger", "--dev", dev.toString(), "--key", "entry_id",
                "--columns", "entry_id bigint, account text not null, amount double precision not null",
                "--partitions", "4")).isZero();
        int rows = 80_000;
        StringBuilder csv = new StringBuilder("amount,entry_id,account\n"); // the header names the columns, in its order
        double sum = 0;
        for (int i = 1; i <= rows; i++) {
            double amount = i % 1000 + 0.5;
            sum += amount;
            csv.append(amount).append(',').append(i).append(",account-").append(i % 37).append('\n');
        }
        Path file = Files.createTempFile("ledger-", ".csv");
        Files.writeString(file, csv, StandardCharsets.UTF_8);
        assertThat(Files.size(file)).as("over the 1 MiB every other request body may hold")
                .isGreaterThan(PAYLOAD_LIMIT);

        Run ok = load(file, "ledger", "--header");
        assertThat(ok.exit()).as(ok.err()).isZero();
        assertThat(ok.out()).startsWith("loaded 80,000 rows into ledger in ").contains("shard 1: ", "shard 2: ", "shard 3: ");
        assertThat(rowsOnShards("SELECT count(*) FROM ledger")).isEqualTo(rows);
        assertThat(rowsOnShards("SELECT round(sum(amount))::bigint FROM ledger")).isEqualTo(Math.round(sum));

        Path bad = Files.createTempFile("ledger-bad-", ".csv");
        Files.writeString(bad, "entry_id,account,amount\n100001,a,1\n100002,b,abc\n" + "100003,c,3\n".repeat(50_000),
                StandardCharsets.UTF_8);
        Run refused = load(bad, "ledger", "--header");
        assertThat(refused.exit()).isEqualTo(1);
        assertThat(refused.err()).contains("line 3, column amount").endsWith("; nothing was loaded" + System.lineSeparator());
        assertThat(rowsOnShards("SELECT count(*) FROM ledger WHERE entry_id > 100000")).isZero();

        Run unknown = load(file, "no_such_table", "--header");
        assertThat(unknown.exit()).isEqualTo(1);
        assertThat(unknown.err()).contains("no_such_table");
        assertThat(main("table", "drop", "ledger", "--dev", dev.toString())).isZero();
    }

    @Test
    void aTextKeyedTableIsRoutedByItsTextSlotAndDroppedWithItsShardTables() throws Exception {
        try (TableAdmin admin = admin()) {
            admin.create(DevCluster.TENANT, "visits", "visitor", "visitor text, pages integer not null", 4, List.of(1, 2));
            String csv = "ann,3\n\"bob, jr\",5\nzoë,7\n";
            dev.thresher.bindings.TableService.Loaded loaded = new CsvLoader(admin, CsvLoader.Progress.NONE)
                    .load(DevCluster.TENANT, "visits", new StringReader(csv), false);
            assertThat(loaded.rows()).isEqualTo(3);
            assertThat(loaded.rowsByShard().keySet()).isSubsetOf(1, 2);
            Map<String, Integer> slots = new HashMap<>();
            for (int shard : List.of(1, 2)) {
                try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                     Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT visitor, thresher_slot FROM visits")) {
                    while (rs.next()) {
                        slots.put(rs.getString(1), rs.getInt(2));
                    }
                }
            }
            assertThat(slots).containsOnlyKeys("ann", "bob, jr", "zoë");
            slots.forEach((visitor, slot) -> assertThat(slot).as(visitor).isEqualTo(Slots.ofText(visitor)));

            admin.drop(DevCluster.TENANT, "visits");
            assertThat(admin.control().readTopology().partitionsOf(DevCluster.TENANT, "visits")).isEmpty();
            assertThat(admin.list(DevCluster.TENANT)).noneSatisfy(l -> assertThat(l).startsWith("visits "));
            for (int shard : List.of(1, 2)) {
                try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                     Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT to_regclass('visits')")) {
                    rs.next();
                    assertThat(rs.getString(1)).as("visits on shard %d", shard).isNull();
                }
            }
        }
    }
}
