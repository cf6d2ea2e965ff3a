package dev.thresher.store.replica;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.RowBatch;
import dev.thresher.limits.Deadline;
import dev.thresher.store.TestPostgres;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A shard's replicas on real PostgreSQL (logical replication): built from the slot's snapshot, current after
 * every committed change a read started after, the same rows as the SQL read, rebuilt after the stream drops or
 * the columns change, bounded by the budget, and leaving no slot behind.
 */
class ShardReplicaTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Partition LOW = new Partition(1, "default", "sales", 0, 8191, 1, 1);
    private static final Partition HIGH = new Partition(2, "default", "sales", 8192, 16383, 1, 1);
    private static final Selector ALL = Selector.parse("SELECT id, region, amount FROM sales");

    private String url;
    private final List<ShardReplica> started = new ArrayList<>();

    @BeforeEach
    void table() throws SQLException {
        url = TestPostgres.newDatabase();
        sql("CREATE TABLE sales (id bigint NOT NULL, region text NOT NULL, amount double precision, "
                + "thresher_slot integer NOT NULL) PARTITION BY RANGE (thresher_slot)");
        sql("CREATE TABLE sales_p1 PARTITION OF sales FOR VALUES FROM (0) TO (8192)");
        sql("CREATE TABLE sales_p2 PARTITION OF sales FOR VALUES FROM (8192) TO (16384)");
        sql("ALTER TABLE sales_p1 REPLICA IDENTITY FULL");
        sql("ALTER TABLE sales_p2 REPLICA IDENTITY FULL");
        sql("INSERT INTO sales SELECT g, 'r' || (g % 7), CASE WHEN g % 11 = 0 THEN NULL ELSE g * 1.5 END, "
                + "(g * 37) % 16384 FROM generate_series(1, 2000) g");
    }

    @AfterEach
    void stop() {
        started.forEach(ShardReplica::close);
    }

    private ShardReplica start(long budgetBytes) {
        ShardReplica r = ShardReplica.start("test-host-" + started.size(), 1, url, "postgres", null,
                () -> List.of(LOW, HIGH), new ReplicaBudget(budgetBytes), 5_000);
        started.add(r);
        return r;
    }

    private ShardReplica serving() {
        ShardReplica r = start(64L << 20);
        awaitMemory(r);
        return r;
    }

    private static void awaitMemory(ShardReplica r) {
        TestPostgres.await(WAIT, "every partition in memory", () -> r.status().stream()
                .allMatch(p -> p.state() == ShardReplica.State.MEMORY));
    }

    @Test
    void aReplicaServesTheRowsTheSqlReadGives() throws Exception {
        ShardReplica r = serving();
        for (Partition p : List.of(LOW, HIGH)) {
            for (Selector s : List.of(ALL, Selector.parse("SELECT amount, region FROM sales WHERE region = 'r3'"),
                    Selector.parse("SELECT id FROM sales WHERE amount IS NULL OR id BETWEEN 10 AND 20"))) {
                ShardBatch memory = read(r, p, s);
                assertThat(memory).as("served from memory: " + s.sql()).isNotNull();
                assertThat(rows(memory)).as(s.sql()).isEqualTo(rows(sqlRead(p, s)));
            }
        }
        assertThat(r.reads().memory()).isEqualTo(6);
        assertThat(r.status()).allSatisfy(p -> {
            assertThat(p.rows()).isPositive();
            assertThat(p.bytes()).isPositive();
            assertThat(p.lagBytes()).isGreaterThanOrEqualTo(0);
        });
    }

    @Test
    void everyChangeCommittedBeforeAReadStartsIsInIt() throws Exception {
        ShardReplica r = serving();
        try (Connection c = connect(); Statement s = c.createStatement()) {
            for (int i = 0; i < 100; i++) {
                switch (i % 4) {
                    case 0 -> s.execute("INSERT INTO sales VALUES (" + (10_000 + i) + ", 'new', 1.0, " + (i * 163) % 16384 + ")");
                    case 1 -> s.execute("UPDATE sales SET amount = coalesce(amount, 0) + 1, region = 'upd' WHERE id = " + i);
                    case 2 -> s.execute("DELETE FROM sales WHERE id = " + (i + 1000));
                    default -> {
                        c.setAutoCommit(false);
                        s.execute("UPDATE sales SET thresher_slot = 16383 - thresher_slot WHERE id = " + (i + 500));
                        s.execute("INSERT INTO sales VALUES (" + (20_000 + i) + ", 'tx', NULL, 5)");
                        c.commit();
                        c.setAutoCommit(true);
                    }
                }
                for (Partition p : List.of(LOW, HIGH)) {
                    ShardBatch memory = read(r, p, ALL);
                    assertThat(memory).as("served from memory after change " + i).isNotNull();
                    assertThat(rows(memory)).as("after change " + i).isEqualTo(rows(sqlRead(p, ALL)));
                }
            }
            s.execute("TRUNCATE sales_p1");
            assertThat(read(r, LOW, ALL)).as("a partition's own truncate is not streamed: its storage changed").isNull();
            TestPostgres.await(WAIT, "rebuilt, empty", () -> {
                ShardBatch b = read(r, LOW, ALL);
                return b != null && b.rowCount() == 0;
            });
        }
    }

    @Test
    void aTableNewToTheShardJoinsTheRunningStreamWithoutARebuild() throws Exception {
        Partition added = new Partition(3, "default", "refunds", 0, 16383, 1, 1);
        AtomicReference<List<Partition>> partitions = new AtomicReference<>(List.of(LOW, HIGH));
        ShardReplica r = ShardReplica.start("test-host-add", 1, url, "postgres", null, partitions::get,
                new ReplicaBudget(64L << 20), 5_000);
        started.add(r);
        awaitMemory(r);
        sql("CREATE TABLE refunds (id bigint NOT NULL, region text NOT NULL, amount double precision, "
                + "thresher_slot integer NOT NULL, PRIMARY KEY (id, thresher_slot))");
        sql("INSERT INTO refunds SELECT g, 'r', g, g % 16384 FROM generate_series(1, 500) g");
        // A writer running throughout, and a transaction open when the table joins: every change is in the copy or
        // applied from the stream, never lost and never applied twice.
        Selector refunds = Selector.parse("SELECT id, region, amount FROM refunds");
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicInteger writes = new java.util.concurrent.atomic.AtomicInteger();
        try (Connection open = connect(); Statement os = open.createStatement()) {
            open.setAutoCommit(false);
            os.execute("INSERT INTO refunds VALUES (100000, 'open', 1, 7)");
            os.execute("UPDATE refunds SET amount = -1 WHERE id = 1");
            Thread writer = Thread.ofPlatform().start(() -> {
                try (Connection w = connect(); Statement ws = w.createStatement()) {
                    ws.execute("SET synchronous_commit = on"); // each commit flushed: streamed while the replica waits
                    int published = -1; // the iteration at which the table was seen in the publication
                    for (int i = 0; !stop.get() || i < 200; i++) {
                        if (published < 0) {
                            try (ResultSet rs = ws.executeQuery("SELECT count(*) FROM pg_publication_tables "
                                    + "WHERE tablename = 'refunds'")) {
                                rs.next();
                                published = rs.getInt(1) > 0 ? i : -1;
                            }
                        }
                        ws.execute("INSERT INTO refunds VALUES (" + (200_000 + i) + ", 'during', 1, " + (i % 16384) + ")");
                        ws.execute("UPDATE refunds SET amount = amount + 1 WHERE id = " + (100 + i % 300));
                        ws.execute("DELETE FROM refunds WHERE id = " + (10 + i));
                        if (published >= 0 && i == published + 100) {
                            open.commit(); // the replica waited for it, reading the stream meanwhile
                        }
                        writes.incrementAndGet();
                    }
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            TestPostgres.await(WAIT, "writes under way", () -> writes.get() > 5);
            partitions.set(List.of(LOW, HIGH, added));
            TestPostgres.await(WAIT, "the new table served from memory", () -> read(r, added, refunds) != null);
            stop.set(true);
            writer.join();
        }
        assertThat(rows(read(r, added, refunds))).isEqualTo(rows(sqlRead(added, refunds)));
        sql("UPDATE refunds SET amount = amount + 1 WHERE id < 100");
        assertThat(rows(read(r, added, refunds))).as("changes after the add").isEqualTo(rows(sqlRead(added, refunds)));
        assertThat(rows(read(r, LOW, ALL))).isEqualTo(rows(sqlRead(LOW, ALL)));
        assertThat(r.builds()).as("the running replica took the table in, not a rebuild").isEqualTo(1);
        partitions.set(List.of(LOW, HIGH));
        TestPostgres.await(WAIT, "the table gone from memory", () -> r.status().size() == 2
                && read(r, added, refunds) == null);
        sql("INSERT INTO sales VALUES (888888, 'after drop', 1.0, 9)");
        assertThat(rows(read(r, LOW, ALL))).as("the others still served").isEqualTo(rows(sqlRead(LOW, ALL)));
        assertThat(r.builds()).as("a table leaving is not a rebuild either").isEqualTo(1);
    }

    @Test
    void aPartitionPastOneBatchIsServedAsPagesOfTheSameRows() throws Exception {
        ShardReplica r = serving();
        List<ShardBatch> pages = r.pages(LOW, ALL, 100, 64 << 20, Deadline.after(Duration.ofSeconds(10)), System.nanoTime());
        assertThat(pages).hasSizeGreaterThan(5).allSatisfy(p -> assertThat(p.rowCount()).isBetween(1, 100));
        List<String> all = new ArrayList<>();
        for (ShardBatch p : pages) {
            all.addAll(rows(p).subList(1, rows(p).size()));
        }
        all.sort(null);
        List<String> expected = rows(sqlRead(LOW, ALL));
        assertThat(all).isEqualTo(expected.subList(1, expected.size()));
        // bounded in bytes too, as the SQL read's pages are
        List<ShardBatch> small = r.pages(LOW, ALL, 100_000, 2_000, Deadline.after(Duration.ofSeconds(10)), System.nanoTime());
        assertThat(small).allSatisfy(p -> assertThat(p.bytes().length).isLessThanOrEqualTo(2_000));
        assertThat(small.stream().mapToInt(ShardBatch::rowCount).sum()).isEqualTo(expected.size() - 1);
    }

    @Test
    void aFilterTheReplicaCannotEvaluateExactlyGoesThroughSql() throws Exception {
        ShardReplica r = serving();
        assertThat(read(r, LOW, Selector.parse("SELECT id FROM sales WHERE region LIKE 'r%'"))).isNull();
        assertThat(read(r, LOW, Selector.parse("SELECT id FROM sales WHERE region > 'r3'"))).isNull();
        assertThat(r.reads().sqlByReason()).containsEntry("filter not evaluable in memory", 2L);
    }

    @Test
    void aDroppedStreamIsRebuiltAndTheSlotIsGoneWhenTheReplicaCloses() throws Exception {
        ShardReplica r = serving();
        assertThat(slots()).containsEntry(r.slotName(), true);
        sql("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '" + r.slotName() + "'");
        sql("INSERT INTO sales VALUES (777777, 'after', 2.0, 3)");
        TestPostgres.await(WAIT, "served from memory again with the row written meanwhile", () -> {
            try {
                ShardBatch b = read(r, LOW, ALL);
                return b != null && rows(b).equals(rows(sqlRead(LOW, ALL)));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        r.close();
        started.remove(r);
        TestPostgres.await(WAIT, "the slot dropped", () -> !slots().containsKey(r.slotName()));
    }

    @Test
    void changedColumnsSendReadsToSqlUntilTheReplicaIsRebuilt() throws Exception {
        ShardReplica r = serving();
        sql("ALTER TABLE sales ADD COLUMN note text NOT NULL DEFAULT 'n'");
        Selector note = Selector.parse("SELECT id, note FROM sales");
        AtomicReference<ShardBatch> got = new AtomicReference<>();
        TestPostgres.await(WAIT, "the new column served from memory", () -> {
            got.set(read(r, LOW, note));
            return got.get() != null;
        });
        assertThat(rows(got.get())).isEqualTo(rows(sqlRead(LOW, note)));
        sql("ALTER TABLE sales DROP COLUMN amount");
        assertThat(read(r, LOW, ALL)).as("a dropped column is never served").isNull();
    }

    @Test
    void aPartitionOverTheBudgetIsReadThroughSql() throws Exception {
        ShardReplica r = start(10_000);
        TestPostgres.await(WAIT, "both partitions judged", () -> r.status().stream()
                .allMatch(p -> p.state() == ShardReplica.State.SQL));
        assertThat(r.status()).allSatisfy(p -> assertThat(p.reason()).contains("replicaMemoryBytes"));
        assertThat(read(r, LOW, ALL)).isNull();
    }

    @Test
    void aTableWithoutReplicaIdentityIsReadThroughSqlAndItsWritesStillWork() throws Exception {
        sql("ALTER TABLE sales_p2 REPLICA IDENTITY DEFAULT");
        ShardReplica r = start(64L << 20);
        TestPostgres.await(WAIT, "judged", () -> r.status().stream().allMatch(p -> p.state() == ShardReplica.State.SQL));
        assertThat(r.status().get(0).reason()).contains("replica identity");
        sql("UPDATE sales SET amount = 0 WHERE id = 1");
        assertThat(read(r, LOW, ALL)).isNull();
    }

    private ShardBatch read(ShardReplica r, Partition p, Selector s) {
        return r.read(p, s, 100_000, 64 << 20, Deadline.after(Duration.ofSeconds(10)), System.nanoTime());
    }

    private ShardBatch sqlRead(Partition p, Selector s) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(url);
        return new ShardReader(ds).read(p, s, 100_000, 64 << 20, Deadline.after(Duration.ofSeconds(10)));
    }

    /** The batch's rows as a sorted multiset of their printed values, and its columns. */
    private static List<String> rows(ShardBatch b) {
        RowBatch batch = RowBatch.decode(b.bytes());
        List<String> rows = new ArrayList<>();
        for (int row = 0; row < batch.rowCount(); row++) {
            StringBuilder sb = new StringBuilder();
            for (int col = 0; col < batch.columns().size(); col++) {
                Object v = batch.value(col, row);
                sb.append(v instanceof Double d ? Long.toHexString(Double.doubleToRawLongBits(d)) : String.valueOf(v)).append('|');
            }
            rows.add(sb.toString());
        }
        rows.sort(null);
        rows.add(0, batch.columns().toString());
        return rows;
    }

    private Map<String, Boolean> slots() {
        Map<String, Boolean> slots = new TreeMap<>();
        try (Connection c = connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT slot_name, temporary FROM pg_replication_slots")) {
            while (rs.next()) {
                slots.put(rs.getString(1), rs.getBoolean(2));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return slots;
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(url);
    }

    private void sql(String statement) throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            s.execute(statement);
        }
    }
}
