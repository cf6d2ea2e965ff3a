package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.server.admin.TableAdmin;
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
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;
import org.postgresql.util.PSQLException;

/**
 * Loading through pgwire, as psql and pgjdbc do it: {@code \copy} (COPY FROM STDIN, CSV and text),
 * pgjdbc's CopyManager, and multi-row INSERT; every row checked on the shard database its key's slot
 * names, and every failure (a bad line, a client that gives up) loading nothing on any shard and leaving
 * the connection usable.
 */
class LoadingIT {
    private static DevCluster cluster;
    private static final Map<Integer, Integer> SHARD_OF_SLOT = new HashMap<>();

    @BeforeAll
    static void createTable() throws Exception {
        cluster = Cluster.get();
        try (TableAdmin admin = new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                new PrintStream(PrintStream.nullOutputStream()))) {
            admin.create(DevCluster.TENANT, "loads", "id", "id bigint, name text, amount double precision not null", 8, List.of());
            for (Partition p : admin.control().readTopology().partitionsOf(DevCluster.TENANT, "loads")) {
                for (int s = p.slotLo(); s <= p.slotHi(); s++) {
                    SHARD_OF_SLOT.put(s, p.shardId());
                }
            }
        }
    }

    /** id → (name, amount) of the rows with ids in [from, to], read from every shard; each checked against its slot. */
    private static Map<Long, String> rows(long from, long to) throws SQLException {
        Map<Long, String> out = new TreeMap<>();
        for (int shard = 1; shard <= 3; shard++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT id, name, amount, thresher_slot FROM loads WHERE id BETWEEN "
                         + from + " AND " + to)) {
                while (rs.next()) {
                    long id = rs.getLong(1);
                    int slot = Slots.ofLong(id);
                    assertThat(rs.getInt(4)).as("slot of %d", id).isEqualTo(slot);
                    assertThat(SHARD_OF_SLOT.get(slot)).as("shard of %d", id).isEqualTo(shard);
                    String name = rs.getString(2);
                    assertThat(out.put(id, (name == null ? "NULL" : name) + "|" + rs.getDouble(3))).as("row %d once", id).isNull();
                }
            }
        }
        return out;
    }

    private static String psql(String... commands) throws Exception {
        String address = cluster.nodes().get(1).pgwireAddress();
        List<String> cmd = new java.util.ArrayList<>(List.of("psql", "-X", "-At", "-v", "ON_ERROR_STOP=1",
                "postgresql://" + DevCluster.USER + ":" + DevCluster.PASSWORD + "@" + address + "/thresher"));
        for (String c : commands) {
            cmd.add("-c");
            cmd.add(c);
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return p.exitValue() + ":" + out;
    }

    @Test
    void psqlCopiesACsvFileWithAHeaderOntoTheShardsItsKeysName() throws Exception {
        StringBuilder csv = new StringBuilder("id,name,amount\n");
        for (int i = 1; i <= 5_000; i++) {
            csv.append(i).append(',').append(i % 7 == 0 ? "" : i % 5 == 0 ? "\"a, \"\"quoted\"\" name\"" : "n" + i)
                    .append(',').append(i / 4.0).append('\n');
        }
        Path file = Files.createTempFile("loads-", ".csv");
        Files.writeString(file, csv);
        assertThat(psql("\\copy loads FROM '" + file + "' WITH (FORMAT csv, HEADER true)")).isEqualTo("0:COPY 5000\n");
        Map<Long, String> rows = rows(1, 5_000);
        assertThat(rows).hasSize(5_000);
        assertThat(rows.get(7L)).isEqualTo("NULL|1.75");
        assertThat(rows.get(5L)).isEqualTo("a, \"quoted\" name|1.25");
        assertThat(rows.get(1L)).isEqualTo("n1|0.25");
    }

    @Test
    void psqlCopiesTextFormatWithItsEscapesAndNulls() throws Exception {
        Path file = Files.createTempFile("loads-", ".txt");
        Files.writeString(file, "10001\ttab\\there\t1\n10002\t\\N\t2\n10003\t\\\\N\t3\n10004\tüñí\\ncode\t4\n10005\t\t5\n");
        assertThat(psql("\\copy loads FROM '" + file + "'")).isEqualTo("0:COPY 5\n");
        assertThat(rows(10_001, 10_005)).containsExactly(
                Map.entry(10_001L, "tab\there|1.0"), Map.entry(10_002L, "NULL|2.0"), Map.entry(10_003L, "\\N|3.0"),
                Map.entry(10_004L, "üñí\ncode|4.0"), Map.entry(10_005L, "|5.0"));
    }

    @Test
    void aThousandRowInsertFromPsqlAndFromPgjdbcLandsEveryRow() throws Exception {
        StringBuilder insert = new StringBuilder("INSERT INTO loads (id, name, amount) VALUES ");
        for (int i = 0; i < 1_000; i++) {
            insert.append(i == 0 ? "" : ", ").append('(').append(20_000 + i).append(", 'it''s ").append(i).append("', ")
                    .append(-i).append(".5)");
        }
        assertThat(psql(insert.toString())).isEqualTo("0:INSERT 0 1000\n");
        assertThat(rows(20_000, 20_999)).hasSize(1_000).containsEntry(20_003L, "it's 3|-3.5");

        try (Connection c = Cluster.connect(0); Statement s = c.createStatement()) {
            assertThat(s.executeUpdate(insert.toString().replace("(2", "(3"))).isEqualTo(1_000);
        }
        assertThat(rows(30_000, 30_999)).hasSize(1_000).containsEntry(30_999L, "it's 999|-999.5");
    }

    @Test
    void pgjdbcPreparedInsertsWithBoundParametersPlainAndBatchedRewritten() throws Exception {
        for (boolean rewrite : new boolean[] {false, true}) {
            long base = rewrite ? 70_000 : 80_000;
            java.util.Properties props = new java.util.Properties();
            props.setProperty("user", DevCluster.USER);
            props.setProperty("password", DevCluster.PASSWORD);
            props.setProperty("reWriteBatchedInserts", Boolean.toString(rewrite));
            try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + cluster.nodes().get(0).pgwireAddress()
                    + "/thresher", props);
                 java.sql.PreparedStatement ps = c.prepareStatement("INSERT INTO loads (id, name, amount) VALUES (?, ?, ?)")) {
                for (int i = 0; i < 1_000; i++) {
                    ps.setLong(1, base + i);
                    if (i % 10 == 0) {
                        ps.setNull(2, java.sql.Types.VARCHAR);
                    } else {
                        ps.setString(2, "o'neil " + i);
                    }
                    ps.setDouble(3, i + 0.5);
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                assertThat(java.util.Arrays.stream(counts).map(n -> n == java.sql.Statement.SUCCESS_NO_INFO ? 1 : n).sum())
                        .isEqualTo(1_000);
                ps.setLong(1, base + 5_000);
                ps.setString(2, "single");
                ps.setDouble(3, -1);
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
            Map<Long, String> rows = rows(base, base + 5_000);
            assertThat(rows).hasSize(1_001).containsEntry(base + 10, "NULL|10.5").containsEntry(base + 11, "o'neil 11|11.5")
                    .containsEntry(base + 5_000, "single|-1.0");
        }
    }

    @Test
    void aBadLineLoadsNothingAnywhereNamesItsLineAndTheConnectionGoesOn() throws Exception {
        StringBuilder csv = new StringBuilder();
        for (int i = 40_001; i <= 60_000; i++) {
            csv.append(i).append(",n,").append(i == 52_000 ? "lots" : "1").append('\n');
        }
        try (Connection c = Cluster.connect(2)) {
            PGConnection pg = c.unwrap(PGConnection.class);
            assertThatThrownBy(() -> pg.getCopyAPI().copyIn("COPY loads FROM STDIN (FORMAT csv)", new StringReader(csv.toString())))
                    .isInstanceOf(PSQLException.class)
                    .hasMessageContaining("line 12000, column amount");
            // a client that gives up sends CopyFail: nothing loaded either
            CopyIn in = pg.getCopyAPI().copyIn("COPY loads FROM STDIN (FORMAT csv)");
            byte[] row = "60001,n,1\n".getBytes(StandardCharsets.UTF_8);
            in.writeToCopy(row, 0, row.length);
            in.cancelCopy();
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
            }
        }
        assertThat(rows(40_001, 60_001)).isEmpty();
        assertThat(psql("\\copy loads FROM '/dev/null' CSV", "COPY nope FROM STDIN")).startsWith("1:COPY 0\n")
                .contains("there is no table nope");
    }

    @Test
    void aRecordThatNeverEndsIsRefusedAtTheRecordBoundNotHeldAndTheConnectionGoesOn() throws Exception {
        int bound = dev.thresher.limits.Limits.DEFAULTS.batchMaxBytes();
        // an unclosed quote: the rest of the stream, three times the bound, would be one record
        java.io.Reader endless = new java.io.Reader() {
            long left = 3L * bound;
            boolean started;

            @Override
            public int read(char[] buf, int off, int len) {
                if (!started) {
                    started = true;
                    String head = "95001,n,1\n95002,\"";
                    head.getChars(0, head.length(), buf, off);
                    return head.length();
                }
                if (left <= 0) {
                    return -1;
                }
                int n = (int) Math.min(len, left);
                java.util.Arrays.fill(buf, off, off + n, 'x');
                left -= n;
                return n;
            }

            @Override
            public void close() {
            }
        };
        try (Connection c = Cluster.connect(0)) {
            PGConnection pg = c.unwrap(PGConnection.class);
            assertThatThrownBy(() -> pg.getCopyAPI().copyIn("COPY loads FROM STDIN (FORMAT csv)", endless))
                    .isInstanceOfSatisfying(PSQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("54000");
                        assertThat(e.getMessage()).contains("line 2 is longer than " + bound + " characters");
                    });
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                assertThat(rs.next()).isTrue();
            }
        }
        assertThat(rows(95_001, 95_002)).isEmpty();
    }
}
