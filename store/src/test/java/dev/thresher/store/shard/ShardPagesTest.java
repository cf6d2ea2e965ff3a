package dev.thresher.store.shard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.RowBatch;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A partition read as a sequence of batches (guest ABI v2) on a real PostgreSQL: every row exactly once,
 * batches bounded in rows and bytes, one snapshot for the whole read, and the one pooled connection
 * given back clean after every way out.
 */
class ShardPagesTest {
    private static final Partition BIG = new Partition(1, "acme", "items", 0, 99, 1, 1);
    private static final Partition EMPTY = new Partition(2, "acme", "items", 5000, 5099, 1, 1);
    private static final Partition WIDE = new Partition(3, "acme", "wide", 0, 99, 1, 1);
    private static final Selector ITEMS = Selector.parse("SELECT k, v FROM items");
    private static final int ROWS = 10_000;

    private static HikariDataSource pool;
    private static ShardReader reader;

    @BeforeAll
    static void load() throws SQLException {
        // one connection: every read after another runs on the connection the last one gave back
        pool = Pools.open("shard-pages-test", TestPostgres.newDatabase(), null, null, 1);
        reader = new ShardReader(pool);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE items (k int8 NOT NULL, v text NOT NULL, thresher_slot int NOT NULL)");
            s.execute("CREATE INDEX items_by_slot ON items (thresher_slot)");
            s.execute("INSERT INTO items SELECT g, 'value ' || g, g % 100 FROM generate_series(1, " + ROWS + ") g");
            s.execute("INSERT INTO items SELECT g, 'elsewhere', 200 + g % 100 FROM generate_series(1, 500) g");
            s.execute("CREATE TABLE wide (t text NOT NULL, thresher_slot int NOT NULL)");
            s.execute("INSERT INTO wide SELECT repeat('w', 2000) || g, g % 100 FROM generate_series(1, 300) g");
        }
    }

    @AfterAll
    static void close() {
        pool.close();
    }

    private static Deadline deadline() {
        return Deadline.afterMillis(System.nanoTime(), TimeUnit.SECONDS.toMillis(30));
    }

    private static List<RowBatch> readAll(ShardPages pages) {
        List<RowBatch> out = new ArrayList<>();
        for (ShardBatch b = pages.next(); b != null; b = pages.next()) {
            RowBatch batch = RowBatch.decode(b.bytes());
            assertThat(batch.rowCount()).isEqualTo(b.rowCount());
            out.add(batch);
        }
        return out;
    }

    private static long count(String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void everyRowOfThePartitionOnceInBatchesOfAtMostTheBound() {
        List<RowBatch> batches;
        try (ShardPages pages = reader.openPages(BIG, ITEMS, 4096, 8 << 20, deadline())) {
            batches = readAll(pages);
            assertThat(pages.next()).isNull();
            assertThat(pages.rowsRead()).isEqualTo(ROWS);
        }
        assertThat(batches).extracting(RowBatch::rowCount).containsExactly(4096, 4096, ROWS - 2 * 4096);
        Set<Long> keys = new HashSet<>();
        for (RowBatch b : batches) {
            assertThat(b.partitionId()).isEqualTo(BIG.id());
            for (int r = 0; r < b.rowCount(); r++) {
                long k = b.getLong(0, r);
                assertThat(keys.add(k)).as("key %d once", k).isTrue();
                assertThat(b.getText(1, r)).isEqualTo("value " + k);
            }
        }
        assertThat(keys).hasSize(ROWS);
    }

    @Test
    void anEmptyPartitionIsOneBatchWithNoRows() {
        try (ShardPages pages = reader.openPages(EMPTY, ITEMS, 4096, 8 << 20, deadline())) {
            assertThat(readAll(pages)).singleElement().satisfies(b -> {
                assertThat(b.rowCount()).isZero();
                assertThat(b.partitionId()).isEqualTo(EMPTY.id());
                assertThat(b.columns()).hasSize(2);
            });
        }
    }

    @Test
    void aBatchIsCutBeforeTheRowThatWouldPassTheByteBoundAndOnlyARowAloneTooLargeFails() {
        int maxBytes = 64 * 1024;
        List<RowBatch> batches;
        try (ShardPages pages = reader.openPages(WIDE, Selector.parse("SELECT t FROM wide"), 4096, maxBytes, deadline())) {
            batches = readAll(pages);
        }
        assertThat(batches).hasSizeGreaterThan(5).allSatisfy(b -> assertThat(b.encodedSize()).isLessThanOrEqualTo(maxBytes));
        assertThat(batches.stream().mapToInt(RowBatch::rowCount).sum()).isEqualTo(300);

        try (ShardPages pages = reader.openPages(WIDE, Selector.parse("SELECT t FROM wide"), 4096, 1024, deadline())) {
            assertThatThrownBy(pages::next).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE));
        }
        assertCleanConnection();
    }

    @Test
    void theWholeReadIsOneSnapshotRowsWrittenMeanwhileAreNotSeen() throws SQLException {
        List<RowBatch> batches = new ArrayList<>();
        HikariDataSource writer = Pools.open("shard-pages-writer", pool.getJdbcUrl(), null, null, 1);
        try (writer; ShardPages pages = reader.openPages(BIG, ITEMS, 1000, 8 << 20, deadline())) {
            batches.add(RowBatch.decode(pages.next().bytes()));
            try (Connection c = writer.getConnection(); Statement s = c.createStatement()) {
                s.execute("INSERT INTO items SELECT g, 'late', g % 100 FROM generate_series(" + (ROWS + 1) + ", "
                        + (ROWS + 5000) + ") g");
                s.execute("DELETE FROM items WHERE k BETWEEN 9000 AND 9999");
            }
            batches.addAll(readAll(pages));
        } finally {
            try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                s.execute("DELETE FROM items WHERE k > " + ROWS);
                s.execute("INSERT INTO items SELECT g, 'value ' || g, g % 100 FROM generate_series(9000, 9999) g");
            }
        }
        assertThat(batches.stream().mapToInt(RowBatch::rowCount).sum()).isEqualTo(ROWS);
    }

    @Test
    void closingMidwayOrFailingGivesTheConnectionBackClean() {
        try (ShardPages pages = reader.openPages(BIG, ITEMS, 100, 8 << 20, deadline())) {
            assertThat(pages.next().rowCount()).isEqualTo(100);
        }
        assertCleanConnection();

        Deadline soon = Deadline.afterMillis(System.nanoTime(), 300);
        try (ShardPages pages = reader.openPages(BIG, ITEMS, 100, 8 << 20, soon)) {
            pages.next();
            while (!soon.passed()) {
                Thread.onSpinWait();
            }
            assertThatThrownBy(pages::next).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
        }
        assertCleanConnection();

        assertThatThrownBy(() -> reader.openPages(BIG, Selector.parse("SELECT nope FROM items"), 100, 8 << 20, deadline()))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR));
        assertCleanConnection();
    }

    /** The one pooled connection is out of any transaction, in auto-commit, and reads. */
    private static void assertCleanConnection() {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM items WHERE thresher_slot BETWEEN 0 AND 99")) {
            assertThat(c.getAutoCommit()).isTrue();
            rs.next();
            assertThat(rs.getLong(1)).isEqualTo(ROWS);
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
        try {
            assertThat(count("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'")).isZero();
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }
}
