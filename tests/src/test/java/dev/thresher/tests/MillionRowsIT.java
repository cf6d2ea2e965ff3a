package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.admin.CsvLoader;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.topology.Partition;
import java.io.PrintStream;
import java.io.StringReader;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Partitions of any size: a table of 1,000,000 rows in 16 partitions (about 62,500 rows each, fifteen
 * times one batch), loaded with the CSV loader, called through pgwire with the sample component (guest ABI
 * v2, paged input) within the default deadline, and equal to SQL over the shard databases.
 */
class MillionRowsIT {
    private static final int ROWS = 1_000_000;
    private static final List<String> REGIONS = List.of("north", "south", "east", "west", "centre", "überall");

    @Test
    void aCallOverAMillionRowsInSixteenPartitionsEqualsSqlOverTheShards() throws Exception {
        DevCluster cluster = Cluster.get();
        StringBuilder csv = new StringBuilder(ROWS * 24);
        Random random = new Random(1_000_000);
        for (int i = 1; i <= ROWS; i++) {
            csv.append(i).append(',').append(REGIONS.get(random.nextInt(REGIONS.size()))).append(',')
                    .append(random.nextInt(1_000_000) / 100.0).append('\n');
        }
        List<Partition> partitions;
        try (TableAdmin admin = new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                new PrintStream(PrintStream.nullOutputStream()))) {
            admin.create(DevCluster.TENANT, "million", "order_id",
                    "order_id bigint, region text not null, amount double precision not null", 16, List.of());
            dev.thresher.bindings.TableService.Loaded loaded = new CsvLoader(admin, CsvLoader.Progress.NONE)
                    .load(DevCluster.TENANT, "million", new StringReader(csv.toString()), false);
            assertThat(loaded.rows()).isEqualTo(ROWS);
            partitions = admin.control().readTopology().partitionsOf(DevCluster.TENANT, "million");
            String digest = cluster.nodes().get(0).catalog().currentBinding(DevCluster.TENANT, DevCluster.SAMPLE_BINDING)
                    .orElseThrow().componentDigest();
            admin.control().putBinding(DevCluster.TENANT, "million_by_region", digest, "SELECT region, amount FROM million");
        }
        csv = null;
        assertThat(partitions).hasSize(16);

        Map<String, double[]> reference = new TreeMap<>();
        long largestPartition = 0;
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD)) {
                try (Statement s = c.createStatement();
                     ResultSet rs = s.executeQuery("SELECT region, sum(amount), count(*) FROM million GROUP BY region")) {
                    while (rs.next()) {
                        double[] t = reference.computeIfAbsent(rs.getString(1), k -> new double[2]);
                        t[0] += rs.getDouble(2);
                        t[1] += rs.getLong(3);
                    }
                }
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT count(*) FROM million WHERE thresher_slot BETWEEN ? AND ?")) {
                    for (Partition p : partitions) {
                        if (p.shardId() == shard) {
                            ps.setInt(1, p.slotLo());
                            ps.setInt(2, p.slotHi());
                            try (ResultSet rs = ps.executeQuery()) {
                                rs.next();
                                largestPartition = Math.max(largestPartition, rs.getLong(1));
                            }
                        }
                    }
                }
            }
        }
        assertThat(largestPartition).as("rows in the largest partition").isGreaterThan(10L * 4096);
        assertThat(reference.values().stream().mapToDouble(t -> t[1]).sum()).isEqualTo(ROWS);

        JsonNode result;
        try (Connection c = Cluster.connect(2); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING million_by_region('{}')")) {
            assertThat(rs.next()).isTrue();
            result = new ObjectMapper().readTree(rs.getString(1));
        }
        assertThat(result.size()).isEqualTo(reference.size());
        reference.forEach((region, t) -> {
            assertThat(result.get(region).get("count").asLong()).as("count of %s", region).isEqualTo((long) t[1]);
            assertThat(result.get(region).get("sum").asDouble()).as("sum of %s", region)
                    .isCloseTo(t[0], within(Math.abs(t[0]) * 1e-12));
        });
    }
}
