package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.TableService;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.cli.Main;
import dev.thresher.server.dev.DevCluster;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Tables through SQL and HTTP, and their schema changes as migrations with per-shard status: CREATE,
 * ALTER and DROP TABLE from psql; a migration that fails on one shard is recorded as failed there and
 * applied elsewhere, and {@code thresher table migrate} applies it once the cause is gone, never twice;
 * {@code /admin/tables} creates, shows, alters and drops.
 */
class TableSchemaIT {

    private static String psql(String... commands) throws Exception {
        DevCluster cluster = Cluster.get();
        List<String> cmd = new ArrayList<>(List.of("psql", "-X", "-At", "-v", "ON_ERROR_STOP=1",
                "postgresql://" + DevCluster.USER + ":" + DevCluster.PASSWORD + "@" + cluster.nodes().get(0).pgwireAddress()
                        + "/thresher"));
        for (String c : commands) {
            cmd.add("-c");
            cmd.add(c);
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return p.exitValue() + ":" + out;
    }

    private static TableService.TableInfo info(String table) throws Exception {
        DevCluster cluster = Cluster.get();
        try (TableAdmin admin = new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                new PrintStream(PrintStream.nullOutputStream()))) {
            return admin.info(DevCluster.TENANT, table);
        }
    }

    /** Per shard: the columns of the table there (empty when it is not there), and its schema history versions. */
    private static Map<Integer, List<String>> shardColumns(String table) throws Exception {
        DevCluster cluster = Cluster.get();
        Map<Integer, List<String>> out = new java.util.TreeMap<>();
        for (int shard = 1; shard <= 3; shard++) {
            List<String> columns = new ArrayList<>();
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT column_name FROM information_schema.columns WHERE table_name = '"
                         + table + "' ORDER BY ordinal_position")) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
            out.put(shard, columns);
        }
        return out;
    }

    private static List<Integer> history(int shard, String table) throws SQLException, Exception {
        List<Integer> versions = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(Cluster.get().shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT version FROM thresher_schema_history WHERE table_name = '" + table
                     + "' ORDER BY version")) {
            while (rs.next()) {
                versions.add(rs.getInt(1));
            }
        }
        return versions;
    }

    /** Points the binding ddl_reader (the sample component) at {@code selector}, as its new current version. */
    private static void readersOfDdlT(String selector) throws Exception {
        DevCluster cluster = Cluster.get();
        String digest = cluster.nodes().get(0).catalog().currentBinding(DevCluster.TENANT, DevCluster.SAMPLE_BINDING)
                .orElseThrow().componentDigest();
        try (TableAdmin admin = new TableAdmin(cluster.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                new PrintStream(PrintStream.nullOutputStream()))) {
            admin.control().putBinding(DevCluster.TENANT, "ddl_reader", digest, selector);
        }
    }

    private static void onShard(int shard, String sql) throws Exception {
        try (Connection c = DriverManager.getConnection(Cluster.get().shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    @Test
    void createAlterAndDropThroughSqlWithAMigrationThatFailsOnOneShardUntilMigrateAppliesIt() throws Exception {
        assertThat(psql("CREATE TABLE ddl_t (id bigint, region text not null) PARTITION BY HASH (id) WITH (partitions = 6)"))
                .isEqualTo("0:CREATE TABLE\n");
        TableService.TableInfo created = info("ddl_t");
        assertThat(created.partitions()).hasSize(6);
        assertThat(created.tilingProblem()).isNull();
        assertThat(created.migrations()).singleElement().satisfies(m -> {
            assertThat(m.version()).isEqualTo(1);
            assertThat(m.states()).containsOnlyKeys(1, 2, 3).containsValues("applied");
        });

        assertThat(psql("ALTER TABLE ddl_t ADD COLUMN amount double precision")).isEqualTo("0:ALTER TABLE\n");
        assertThat(shardColumns("ddl_t").values()).allSatisfy(cols -> assertThat(cols)
                .containsExactly("id", "region", "thresher_slot", "amount"));

        // shard 2 already has a column of that name: the migration fails there, is applied on the others
        onShard(2, "ALTER TABLE ddl_t ADD COLUMN note integer");
        assertThat(psql("ALTER TABLE ddl_t ADD COLUMN note text")).startsWith("1:")
                .contains("migration 3 (add column note text) failed on shard(s) {2=");
        TableService.MigrationInfo third = info("ddl_t").migrations().get(2);
        assertThat(third.states()).isEqualTo(Map.of(1, "applied", 2, "failed", 3, "applied"));
        assertThat(third.errors().get(2)).contains("already exists");
        assertThat(history(2, "ddl_t")).containsExactly(1, 2);

        // the cause removed, migrate applies it on shard 2 only, and running it again changes nothing
        onShard(2, "ALTER TABLE ddl_t DROP COLUMN note");
        assertThat(new CommandLine(new Main()).execute("table", "migrate", "ddl_t", "--dev",
                Cluster.get().endpointsFile().getParent().toString())).isZero();
        assertThat(info("ddl_t").migrations().get(2).states()).containsValues("applied").doesNotContainValue("failed");
        assertThat(new CommandLine(new Main()).execute("table", "migrate", "ddl_t", "--dev",
                Cluster.get().endpointsFile().getParent().toString())).isZero();
        for (int shard = 1; shard <= 3; shard++) {
            assertThat(history(shard, "ddl_t")).containsExactly(1, 2, 3);
        }
        assertThat(shardColumns("ddl_t").get(2)).containsExactly("id", "region", "thresher_slot", "amount", "note");

        assertThat(psql("ALTER TABLE ddl_t DROP COLUMN id")).startsWith("1:").contains("is the table's key");

        // a column a binding reads, selected or named by its filter, is not dropped (as a table read is not)
        readersOfDdlT("SELECT region, id FROM ddl_t WHERE amount > 0");
        for (String column : List.of("amount", "region")) {
            assertThat(psql("ALTER TABLE ddl_t DROP COLUMN " + column)).as(column).startsWith("1:")
                    .contains("column " + column + " of table ddl_t is read by binding(s) [ddl_reader]");
        }
        assertThat(shardColumns("ddl_t").get(1)).contains("amount", "region");
        assertThat(psql("ALTER TABLE ddl_t DROP COLUMN note")).as("a column no binding reads").isEqualTo("0:ALTER TABLE\n");
        readersOfDdlT("SELECT region, amount FROM orders");
        assertThat(psql("DROP TABLE ddl_t", "DROP TABLE IF EXISTS ddl_t")).isEqualTo("0:DROP TABLE\nDROP TABLE\n");
        assertThat(shardColumns("ddl_t").values()).allSatisfy(cols -> assertThat(cols).isEmpty());
        assertThat(history(1, "ddl_t")).isEmpty();
        assertThat(psql("CREATE TABLE ddl_t (id bigint)")).startsWith("1:").contains("PARTITION BY HASH (key)");
    }

    @Test
    void aTableWhoseNameTakesAll63BytesIsCreatedWithDistinctChildrenAndDropped() throws Exception {
        // kills: TableAdmin.childName (children "<name>_p<id>" cut to 63 bytes by PostgreSQL collided: XX000)
        String name = "t".repeat(60) + "_63";
        assertThat(psql("CREATE TABLE " + name + " (id bigint) PARTITION BY HASH (id) WITH (partitions = 16)"))
                .isEqualTo("0:CREATE TABLE\n");
        assertThat(info(name).partitions()).hasSize(16);
        assertThat(psql("INSERT INTO " + name + " (id) VALUES (1), (2), (3)")).isEqualTo("0:INSERT 0 3\n");
        assertThat(psql("DROP TABLE " + name)).isEqualTo("0:DROP TABLE\n");
    }

    @Test
    void adminTablesOverHttpCreateShowAlterAndDrop() throws Exception {
        DevCluster cluster = Cluster.get();
        String base = cluster.nodes().get(1).httpAddress() + "/admin/tables";
        ObjectMapper json = new ObjectMapper();
        try (HttpClient client = HttpClient.newHttpClient()) {
            HttpResponse<String> created = client.send(HttpRequest.newBuilder(URI.create(base)).header("Authorization", "Bearer " + cluster.adminToken()).POST(HttpRequest.BodyPublishers.ofString(
                    "{\"name\": \"http_t\", \"key\": \"k\", \"columns\": \"k text, v bigint\", \"partitions\": 3}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
            JsonNode table = json.readTree(created.body());
            assertThat(table.get("keyType").asText()).isEqualTo("text");
            assertThat(table.get("partitions")).hasSize(3);

            HttpResponse<String> altered = client.send(HttpRequest.newBuilder(URI.create(base + "/http_t/migrations")).header("Authorization", "Bearer " + cluster.adminToken())
                    .POST(HttpRequest.BodyPublishers.ofString("{\"dropColumn\": \"v\"}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(altered.statusCode()).as(altered.body()).isEqualTo(200);
            JsonNode migrations = json.readTree(altered.body()).get("migrations");
            assertThat(migrations).hasSize(2);
            assertThat(migrations.get(1).get("description").asText()).isEqualTo("drop column v");

            HttpResponse<String> list = client.send(HttpRequest.newBuilder(URI.create(base)).header("Authorization", "Bearer " + cluster.adminToken()).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(json.readTree(list.body()).findValuesAsText("name")).contains("http_t", "orders");

            HttpResponse<String> bad = client.send(HttpRequest.newBuilder(URI.create(base + "/http_t/migrations")).header("Authorization", "Bearer " + cluster.adminToken())
                    .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(bad.statusCode()).isEqualTo(400);
            assertThat(json.readTree(bad.body()).at("/error/name").asText()).isEqualTo("INVALID_ARGUMENTS");

            HttpResponse<String> dropped = client.send(HttpRequest.newBuilder(URI.create(base + "/http_t")).header("Authorization", "Bearer " + cluster.adminToken()).DELETE().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(dropped.statusCode()).as(dropped.body()).isEqualTo(200);
            HttpResponse<String> gone = client.send(HttpRequest.newBuilder(URI.create(base + "/http_t")).header("Authorization", "Bearer " + cluster.adminToken()).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(json.readTree(gone.body()).at("/error/message").asText()).isEqualTo("there is no table http_t");
            assertThat(gone.statusCode()).isEqualTo(404);
            assertThat(json.readTree(gone.body()).at("/error/name").asText()).isEqualTo("UNKNOWN_TABLE");
            HttpResponse<String> wrong = client.send(HttpRequest.newBuilder(URI.create(base + "/http_t/migrate")).header("Authorization", "Bearer " + cluster.adminToken())
                    .GET().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(wrong.statusCode()).isEqualTo(405);
        }
        assertThat(shardColumns("http_t").values()).allSatisfy(cols -> assertThat(cols).isEmpty());
    }
}
