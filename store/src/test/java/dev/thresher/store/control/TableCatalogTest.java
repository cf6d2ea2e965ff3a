package dev.thresher.store.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.store.control.TableCatalog.Migration;
import dev.thresher.store.control.TableCatalog.PendingMigration;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link TableCatalog} on a real PostgreSQL. Every test works in a tenant and on shard ids of its own, so tests share
 * one database and never see each other's rows. Each test names, in a one-line comment, what of
 * {@code TableCatalog} (an SQL condition, a lock, a transaction) its removal would break.
 */
class TableCatalogTest {
    private static final AtomicInteger ids = new AtomicInteger(100);

    private static HikariDataSource pool;
    private static TableCatalog catalog;
    private static ControlStore store;

    private final int n = ids.incrementAndGet();
    private final String tenant = "tenant-" + n;
    private final int shardA = n * 10;
    private final int shardB = n * 10 + 1;

    @BeforeAll
    static void migrate() {
        pool = Pools.open("table-catalog-test", TestPostgres.newDatabase(), null, null, 4);
        ControlStore.migrate(pool);
        catalog = new TableCatalog(pool);
        store = new ControlStore(pool);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    @BeforeEach
    void shardsAndTenant() {
        store.ensureTenant(tenant);
        store.topology().putShard(shardB, "jdbc:postgresql://b-" + n + "/db");
        store.topology().putShard(shardA, "jdbc:postgresql://a-" + n + "/db");
    }

    private static List<Partition> halves(int firstId, String tenant, String table, int lowShard, int highShard) {
        return List.of(new Partition(firstId, tenant, table, 0, Slots.COUNT / 2 - 1, lowShard, 1),
                new Partition(firstId + 1, tenant, table, Slots.COUNT / 2, Slots.COUNT - 1, highShard, 1));
    }

    private static long count(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    // ---- tables ------------------------------------------------------------------------------

    @Test
    void aTenantsTablesAreListedByNameWithTheirKeyAndAWrittenTableIsNotWrittenAgain() {
        // kills: the tenant condition of tables(), its ORDER BY, putTable's ON CONFLICT DO NOTHING
        catalog.putTable(tenant, "zebra", "id", "bigint");
        catalog.putTable(tenant, "apple", "name", "text");
        catalog.putTable(tenant, "apple", "other", "uuid");
        store.ensureTenant(tenant + "-other");
        catalog.putTable(tenant + "-other", "mango", "id", "integer");

        assertThat(catalog.tables(tenant)).containsExactly(new TableCatalog.Table("apple", "name", "text"),
                new TableCatalog.Table("zebra", "id", "bigint"));
    }

    @Test
    void residencyIsStoredInShardOrder() throws SQLException {
        // kills: the sort before the array is written, the table condition of the UPDATE
        catalog.putTable(tenant, "pinned", "id", "bigint");
        catalog.putTable(tenant, "free", "id", "bigint");
        catalog.setResidency(tenant, "pinned", List.of(shardB, shardA));

        try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT table_name, residency::text FROM user_tables WHERE tenant = '" + tenant + "' ORDER BY 1")) {
            rs.next();
            assertThat(rs.getString(1)).isEqualTo("free");
            assertThat(rs.getString(2)).isNull();
            rs.next();
            assertThat(rs.getString(2)).isEqualTo("{" + shardA + "," + shardB + "}");
        }
    }

    @Test
    void aFailedCreatesRowIsDeletedOnlyWhileTheTableHasNoPartitions() {
        // kills: the NOT EXISTS of deleteTableWithoutPartitions, which would delete a table with partitions
        catalog.putTable(tenant, "half_made", "id", "bigint");
        catalog.putTable(tenant, "made", "id", "bigint");
        catalog.putTablePartitions(tenant, "made", halves(catalog.nextPartitionId(), tenant, "made", shardA, shardB));

        catalog.deleteTableWithoutPartitions(tenant, "half_made");
        catalog.deleteTableWithoutPartitions(tenant, "made"); // deletes nothing, refuses nothing
        assertThat(catalog.tables(tenant)).extracting(TableCatalog.Table::name).containsExactly("made");
    }

    @Test
    void aDroppedTableLeavesNoPartitionLeaseOrMigrationAndOtherTablesAreLeftAlone() throws SQLException {
        // kills: any of the three deletes of dropTable, or their table conditions
        catalog.putTable(tenant, "gone", "id", "bigint");
        catalog.putTable(tenant, "kept", "id", "bigint");
        int first = catalog.nextPartitionId();
        catalog.putTablePartitions(tenant, "gone", halves(first, tenant, "gone", shardA, shardA));
        catalog.putTablePartitions(tenant, "kept", halves(first + 2, tenant, "kept", shardA, shardA));
        catalog.recordMigration(tenant, "gone", 1, "create table", "CREATE TABLE gone ()", List.of(shardA, shardB), "applied");
        String host = "host-" + n;
        store.topology().registerHost(new Host(host, shardA, "127.0.0.1", 7000 + n), null, null);
        assertThat(store.topology().acquireLeadership(host, 30_000)).hasSize(4);

        catalog.dropTable(tenant, "gone");

        assertThat(catalog.tables(tenant)).extracting(TableCatalog.Table::name).containsExactly("kept");
        assertThat(catalog.migrations(tenant, "gone")).isEmpty();
        assertThat(count("SELECT count(*) FROM partitions WHERE tenant = '" + tenant + "' AND table_name = 'gone'"))
                .isZero();
        assertThat(count("SELECT count(*) FROM partition_leases WHERE partition_id IN (" + first + ", " + (first + 1)
                + ")")).isZero();
        assertThat(count("SELECT count(*) FROM partition_leases WHERE partition_id IN (" + (first + 2) + ", "
                + (first + 3) + ")")).isEqualTo(2);
        store.topology().releaseLeadership(host);
    }

    // ---- partitions --------------------------------------------------------------------------

    @Test
    void theNextPartitionIdFollowsTheHighestThereIs() {
        // kills: the + 1 of nextPartitionId
        catalog.putTable(tenant, "t", "id", "bigint");
        int next = catalog.nextPartitionId();
        catalog.putPartition(new Partition(next + 5, tenant, "t", 0, Slots.COUNT - 1, shardA, 1));
        assertThat(catalog.nextPartitionId()).isEqualTo(next + 6);
    }

    @Test
    void aTablesPartitionsAreWrittenAsOneSetThatTilesOrNotAtAll() {
        // kills: the tiling check, the check for partitions already there, the check that each names the table
        catalog.putTable(tenant, "t", "id", "bigint");
        int first = catalog.nextPartitionId();
        assertThatThrownBy(() -> catalog.putTablePartitions(tenant, "t", List.of(
                new Partition(first, tenant, "t", 0, 100, shardA, 1))))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE));
        assertThatThrownBy(() -> catalog.putTablePartitions(tenant, "t", halves(first, tenant, "other", shardA, shardA)))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION));
        catalog.putTablePartitions(tenant, "t", halves(first, tenant, "t", shardA, shardB));
        assertThatThrownBy(() -> catalog.putTablePartitions(tenant, "t", halves(first + 2, tenant, "t", shardA, shardB)))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e).hasMessageContaining("already has 2"));
        assertThat(store.readTopology().partitionsOf(tenant, "t")).extracting(Partition::id)
                .containsExactly(first, first + 1);
    }

    // ---- shard databases ---------------------------------------------------------------------

    @Test
    void shardDatabasesAreReadByIdWithTheirURLsAndNamesAndAURLChangeKeepsTheName() {
        // kills: the DO UPDATE of putShard (a second registration must change the URL, not fail), reading names as URLs
        store.topology().putShard(shardB, "jdbc:postgresql://b2-" + n + "/db");
        Map<Integer, String> urls = store.topology().shardUrls();
        assertThat(urls).containsEntry(shardA, "jdbc:postgresql://a-" + n + "/db")
                .containsEntry(shardB, "jdbc:postgresql://b2-" + n + "/db");
        assertThat(List.copyOf(urls.keySet())).isSorted();
        assertThat(store.topology().shardNames()).containsEntry(shardA, "shard-" + shardA).containsEntry(shardB, "shard-" + shardB);
        assertThat(store.shardUrls()).isEqualTo(urls);
    }

    // ---- migrations --------------------------------------------------------------------------

    @Test
    void migrationsAreNumberedAfterTheCreateAndEachShardsStateAndErrorAreKept() {
        // kills: greatest(…, 1) (a first change numbered 1 would collide with the create), the state written per
        // shard, the applied condition of pendingMigrations, setMigrationState's shard and version conditions
        catalog.putTable(tenant, "t", "id", "bigint");
        assertThat(catalog.recordMigration(tenant, "t", -1, "add column a integer", "ALTER TABLE t ADD COLUMN a integer",
                List.of(shardA, shardB), "pending")).isEqualTo(2);
        catalog.recordMigration(tenant, "t", 1, "create table", "CREATE TABLE t ()", List.of(shardA, shardB), "applied");
        assertThat(catalog.recordMigration(tenant, "t", -1, "drop column a", "ALTER TABLE t DROP COLUMN a",
                List.of(shardA, shardB), "pending")).isEqualTo(3);

        assertThat(catalog.pendingMigrations(tenant, "t")).containsExactly(
                new PendingMigration(shardA, 2, "add column a integer", "ALTER TABLE t ADD COLUMN a integer"),
                new PendingMigration(shardA, 3, "drop column a", "ALTER TABLE t DROP COLUMN a"),
                new PendingMigration(shardB, 2, "add column a integer", "ALTER TABLE t ADD COLUMN a integer"),
                new PendingMigration(shardB, 3, "drop column a", "ALTER TABLE t DROP COLUMN a"));

        catalog.setMigrationState(tenant, "t", 2, shardA, "applied", null);
        catalog.setMigrationState(tenant, "t", 2, shardB, "failed", "column \"a\" exists");

        assertThat(catalog.pendingMigrations(tenant, "t")).extracting(m -> m.shardId() + "/" + m.version())
                .containsExactly(shardA + "/3", shardB + "/2", shardB + "/3");
        List<Migration> migrations = catalog.migrations(tenant, "t");
        assertThat(migrations).extracting(Migration::version).containsExactly(1, 2, 3);
        assertThat(migrations.get(1).description()).isEqualTo("add column a integer");
        assertThat(migrations.get(1).states()).isEqualTo(Map.of(shardA, "applied", shardB, "failed"));
        assertThat(migrations.get(1).errors()).isEqualTo(Map.of(shardB, "column \"a\" exists"));
        assertThat(migrations.get(2).states()).isEqualTo(Map.of(shardA, "pending", shardB, "pending"));
    }

    @Test
    void aMigrationRecordedForNoShardIsListedWithNoStates() {
        // kills: the LEFT JOIN of migrations() (a table on no shard database yet still shows its migrations)
        catalog.putTable(tenant, "t", "id", "bigint");
        catalog.recordMigration(tenant, "t", 1, "create table", "CREATE TABLE t ()", List.of(), "applied");
        assertThat(catalog.migrations(tenant, "t")).containsExactly(new Migration(1, "create table", Map.of(), Map.of()));
    }

    @Test
    void aMigrationWhoseShardRowCannotBeWrittenIsNotRecordedAtAll() {
        // kills: the one transaction of recordMigration (the migration's row would outlive its failed shard rows)
        catalog.putTable(tenant, "t", "id", "bigint");
        assertThatThrownBy(() -> catalog.recordMigration(tenant, "t", 1, "create table", "CREATE TABLE t ()",
                List.of(shardA, -n), "applied")) // no shard database -n
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE);
                    assertThat(e).hasMessageStartingWith("control database: ");
                });
        assertThat(catalog.migrations(tenant, "t")).isEmpty();
    }

    @Test
    void aControlDatabaseThatCannotBeReachedIsStoreUnavailable() {
        // kills: a catalog failure escaping as an SQLException or a bare RuntimeException
        HikariDataSource closed = Pools.open("table-catalog-closed", pool.getJdbcUrl(), null, null, 1);
        closed.close();
        assertThatThrownBy(() -> new TableCatalog(closed).tables(tenant))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE);
                    assertThat(e).hasMessageStartingWith("control database: ");
                });
    }
}
