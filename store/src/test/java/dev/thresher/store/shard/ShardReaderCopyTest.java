package dev.thresher.store.shard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.RowBatch;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.store.shard.ShardReader.Mode;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The binary COPY path against the pgjdbc path on a real PostgreSQL: for every case the two batches
 * are equal byte for byte (each read several times, past pgjdbc's switch to server-prepared statements
 * and binary results), and every typed error is the same. One pooled connection, so every read after
 * a failure runs on the connection the failure left behind, which must be clean.
 */
class ShardReaderCopyTest {
    private static final String ALL = "SELECT i2, i4, i8, f4, f8, num, t, vc, bp, b, by, nn_t, nn_i FROM everything";
    private static final Partition P_ALL = partition(1, 0, 99);
    private static final Partition P_BOUND = partition(2, 1000, 1099);
    private static final Partition P_EMPTY = partition(3, 5000, 5099);
    private static final Partition P_WIDE = partition(4, 8000, 8099);
    private static final int BOUND_ROWS = 120;
    private static final int ROUNDS = 8;
    private static final int MAX_ROWS = 4096;
    private static final int MAX_BYTES = 8 << 20;

    private static HikariDataSource pool;
    private static ShardReader jdbc;
    private static ShardReader copy;

    @BeforeAll
    static void load() throws SQLException {
        pool = Pools.open("shard-copy-test", TestPostgres.newDatabase(), null, null, 1);
        jdbc = new ShardReader(pool, Mode.JDBC);
        copy = new ShardReader(pool, Mode.COPY);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("""
                    CREATE TABLE everything (
                        id int8 PRIMARY KEY,
                        i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric,
                        t text, vc varchar(40), bp char(6), b bool, by bytea,
                        nn_t text NOT NULL, nn_i int8 NOT NULL,
                        ts timestamptz, j jsonb, u uuid, arr int4[], m money, ch "char", nm name, o oid,
                        thresher_slot int NOT NULL)""");
            s.execute("CREATE INDEX everything_by_slot ON everything (thresher_slot)");
            // A selector cannot call functions; a view can, so a slow read is a view over a sleep.
            s.execute("CREATE VIEW slow_everything AS SELECT * FROM everything WHERE pg_sleep(0.05) IS NOT NULL");
            s.execute("CREATE TABLE wide (t text NOT NULL, thresher_slot int NOT NULL)");
            s.execute("INSERT INTO wide SELECT repeat('w', 2000) || g, 8000 + g % 100 FROM generate_series(1, 3000) g");
            loadEverything(c);
        }
    }

    @AfterAll
    static void close() {
        pool.close();
    }

    @AfterEach
    void connectionIsClean() throws SQLException {
        assertClean();
    }

    private static void loadEverything(Connection c) throws SQLException {
        Short[] i2 = {null, 0, Short.MIN_VALUE, Short.MAX_VALUE, 1, -1};
        Integer[] i4 = {null, Integer.MIN_VALUE, Integer.MAX_VALUE, 0, 42};
        Long[] i8 = {null, Long.MIN_VALUE, Long.MAX_VALUE, 0L, -7L};
        Float[] f4 = {null, 1.1f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0.0f, Float.MIN_VALUE,
            Float.MAX_VALUE, 1e-40f, 0.3f, 16777217f};
        Double[] f8 = {null, 0.1, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, Double.MIN_VALUE,
            Double.MAX_VALUE, 1.0 / 3, 2.2250738585072014E-308};
        String[] num = {null, "123.456", "0.1", "-0.000001", "12345678901234567890.123456789", "NaN", "Infinity",
            "-Infinity", "1e300", "0.00", "5e-324", "0.30000000000000000000000001", "-42"};
        String[] text = {null, "", "eu", "grüße", "日本語のテキスト", "emoji 🎉 and 𝄞", "tab\tnew\nline 'quote' \"dq\" \\bs",
            "x".repeat(5000)};
        String[] vc = {null, "varchar ü", "", "ǅ"};
        String[] bp = {null, "ab", "ü", "sixsix"};
        Boolean[] b = {null, true, false};
        Random random = new Random(7);
        byte[] noise = new byte[1000];
        random.nextBytes(noise);
        byte[][] by = {null, new byte[0], {0, -1, 127, -128}, noise};
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO everything (id, i2, i4, i8, f4, f8, num, t, vc, bp, b, by,"
                + " nn_t, nn_i, thresher_slot) VALUES (?, ?, ?, ?, ?, ?, ?::numeric, ?, ?, ?, ?, ?, ?, ?, ?)")) {
            int id = 0;
            for (int k = 0; k < 60; k++) {
                ps.setLong(1, id++);
                set(ps, 2, i2[k % i2.length], Types.SMALLINT);
                set(ps, 3, i4[k % i4.length], Types.INTEGER);
                set(ps, 4, i8[k % i8.length], Types.BIGINT);
                set(ps, 5, f4[k % f4.length], Types.REAL);
                set(ps, 6, f8[k % f8.length], Types.DOUBLE);
                set(ps, 7, num[k % num.length], Types.VARCHAR);
                set(ps, 8, text[k % text.length], Types.VARCHAR);
                set(ps, 9, vc[k % vc.length], Types.VARCHAR);
                set(ps, 10, bp[k % bp.length], Types.VARCHAR);
                set(ps, 11, b[k % b.length], Types.BOOLEAN);
                set(ps, 12, by[k % by.length], Types.BINARY);
                ps.setString(13, "row " + k + " – ✓");
                ps.setLong(14, k);
                ps.setInt(15, P_ALL.slotLo() + k % 100);
                ps.addBatch();
            }
            for (int k = 0; k < BOUND_ROWS; k++) {
                ps.setLong(1, id++);
                for (int col = 2; col <= 12; col++) {
                    ps.setNull(col, Types.NULL);
                }
                ps.setString(8, "bound " + k);
                ps.setLong(4, k * 1_000_003L);
                ps.setString(13, "b" + k);
                ps.setLong(14, k);
                ps.setInt(15, P_BOUND.slotLo() + k % 100);
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    private static void set(PreparedStatement ps, int i, Object v, int type) throws SQLException {
        if (v == null) {
            ps.setNull(i, type);
        } else {
            ps.setObject(i, v, type);
        }
    }

    @Test
    void everyTypeNullsAndUnicodeAreTheSameBatch() {
        byte[] bytes = same(P_ALL, ALL, MAX_ROWS, MAX_BYTES);
        RowBatch batch = RowBatch.decode(bytes);
        assertThat(batch.rowCount()).isEqualTo(60);
        assertThat(batch.columns()).containsExactly(
                Column.nullable("i2", ColumnType.INT64), Column.nullable("i4", ColumnType.INT64),
                Column.nullable("i8", ColumnType.INT64), Column.nullable("f4", ColumnType.FLOAT64),
                Column.nullable("f8", ColumnType.FLOAT64), Column.nullable("num", ColumnType.FLOAT64),
                Column.nullable("t", ColumnType.TEXT), Column.nullable("vc", ColumnType.TEXT),
                Column.nullable("bp", ColumnType.TEXT), Column.nullable("b", ColumnType.BOOL),
                Column.nullable("by", ColumnType.BYTES), Column.of("nn_t", ColumnType.TEXT),
                Column.of("nn_i", ColumnType.INT64));
        // Spot checks that the common bytes are the right ones (rows come in slot order here).
        boolean sawNull = false;
        boolean sawEmoji = false;
        boolean sawFloat = false;
        for (int r = 0; r < batch.rowCount(); r++) {
            sawNull |= batch.isNull(0, r) && batch.isNull(6, r) && batch.isNull(10, r);
            sawEmoji |= !batch.isNull(6, r) && batch.getText(6, r).equals("emoji 🎉 and 𝄞");
            sawFloat |= !batch.isNull(3, r) && batch.getDouble(3, r) == (double) 1.1f;
            assertThat(batch.getText(11, r)).startsWith("row ").endsWith(" – ✓");
            if (!batch.isNull(8, r)) {
                assertThat(batch.getText(8, r)).hasSize(6);
            }
        }
        assertThat(sawNull).isTrue();
        assertThat(sawEmoji).isTrue();
        assertThat(sawFloat).as("float4 carries its exact value").isTrue();
    }

    @Test
    void theExactBoundIsABatchAndOnePastItIsRefused() {
        byte[] bytes = same(P_BOUND, "SELECT t, i8, nn_i FROM everything", BOUND_ROWS, MAX_BYTES);
        assertThat(RowBatch.decode(bytes).rowCount()).isEqualTo(BOUND_ROWS);
        bothFail(ErrorCode.BATCH_TOO_MANY_ROWS, P_BOUND, "SELECT t, i8, nn_i FROM everything", BOUND_ROWS - 1, MAX_BYTES,
                Duration.ofSeconds(10));
        bothFail(ErrorCode.BATCH_TOO_MANY_ROWS, P_ALL, ALL, 1, MAX_BYTES, Duration.ofSeconds(10));
        bothFail(ErrorCode.BATCH_TOO_MANY_ROWS, P_ALL, ALL, 0, MAX_BYTES, Duration.ofSeconds(10));
    }

    @Test
    void anEmptyPartitionIsAnEmptyBatch() {
        byte[] bytes = same(P_EMPTY, ALL, MAX_ROWS, MAX_BYTES);
        assertThat(RowBatch.decode(bytes).rowCount()).isZero();
        assertThat(RowBatch.decode(same(P_EMPTY, ALL, 0, MAX_BYTES)).rowCount()).isZero();
    }

    @Test
    void theFilterIsKept() {
        String sql = "SELECT t, nn_i, f8, bp FROM everything WHERE nn_i % 2 = 0 AND (t IS NULL OR t <> 'eu') AND bp IS DISTINCT FROM 'ü'";
        RowBatch batch = RowBatch.decode(same(P_ALL, sql, MAX_ROWS, MAX_BYTES));
        assertThat(batch.rowCount()).isBetween(1, 29);
        for (int r = 0; r < batch.rowCount(); r++) {
            assertThat(batch.getLong(1, r) % 2).isZero();
            assertThat(batch.isNull(0, r) || !batch.getText(0, r).equals("eu")).isTrue();
        }
        // A filter that passes nothing, and one on unicode text.
        assertThat(RowBatch.decode(same(P_ALL, "SELECT nn_i FROM everything WHERE false", MAX_ROWS, MAX_BYTES)).rowCount()).isZero();
        assertThat(RowBatch.decode(same(P_ALL, "SELECT nn_t FROM everything WHERE t = 'grüße'", MAX_ROWS, MAX_BYTES)).rowCount())
                .isPositive();
    }

    @Test
    void tooLargeIsRefusedMidStreamAndAtTheFirstRow() {
        String sql = "SELECT t FROM wide";
        bothFail(ErrorCode.BATCH_TOO_LARGE, P_WIDE, sql, MAX_ROWS, 64 << 10, Duration.ofSeconds(10));
        bothFail(ErrorCode.BATCH_TOO_LARGE, P_WIDE, sql, MAX_ROWS, 1000, Duration.ofSeconds(10));
        // Right after, on the same connection, the whole partition reads.
        assertThat(RowBatch.decode(same(P_WIDE, sql, MAX_ROWS, MAX_BYTES)).rowCount()).isEqualTo(3000);
        for (int i = 0; i < 20; i++) {
            bothFail(ErrorCode.BATCH_TOO_LARGE, P_WIDE, sql, MAX_ROWS, 256 << 10, Duration.ofSeconds(10));
            assertThat(copy.read(P_ALL, Selector.parse(ALL), MAX_ROWS, MAX_BYTES, Deadline.after(Duration.ofSeconds(10)))
                    .rowCount()).isEqualTo(60);
        }
    }

    @Test
    void typesABatchCannotCarryAreInvalidSelectors() {
        for (String column : List.of("ts", "j", "u", "arr", "m", "ch", "nm", "o")) {
            ThresherException e = bothFail(ErrorCode.INVALID_SELECTOR, P_ALL, "SELECT i4, " + column + " FROM everything",
                    MAX_ROWS, MAX_BYTES, Duration.ofSeconds(10));
            assertThat(e.getMessage()).contains("'" + column + "'").contains("cannot carry");
        }
    }

    @Test
    void aSelectorThatDoesNotMatchTheSchemaIsInvalid() {
        bothFail(ErrorCode.INVALID_SELECTOR, P_ALL, "SELECT nope FROM everything", MAX_ROWS, MAX_BYTES, Duration.ofSeconds(10));
        bothFail(ErrorCode.INVALID_SELECTOR, P_ALL, "SELECT i4 FROM nowhere", MAX_ROWS, MAX_BYTES, Duration.ofSeconds(10));
        bothFail(ErrorCode.INVALID_SELECTOR, P_ALL, "SELECT i4 FROM everything WHERE nope > 1", MAX_ROWS, MAX_BYTES,
                Duration.ofSeconds(10));
    }

    @Test
    void aSelectorFailingOnTheRowsIsInvalidNotRetryable() {
        // kills: ShardReader.mapped answering a data exception STORE_UNAVAILABLE (retry class AMBIGUOUS: "safe to
        // retry" for a call that fails the same way every time)
        ThresherException e = bothFail(ErrorCode.INVALID_SELECTOR, P_ALL,
                "SELECT i4 FROM everything WHERE i4 / (i4 - i4) > 0", MAX_ROWS, MAX_BYTES, Duration.ofSeconds(10));
        assertThat(e.getMessage()).contains("SQLSTATE 22012");
        assertThat(e.code().retryClass()).isEqualTo(dev.thresher.errors.RetryClass.TERMINAL);
    }

    @Test
    void theDeadlineBoundsTheRead() {
        bothFail(ErrorCode.DEADLINE_EXCEEDED, P_ALL, ALL, MAX_ROWS, MAX_BYTES, Duration.ZERO);
        // Each row sleeps 50 ms: 3 s unbounded. The COPY stops at the deadline (statement_timeout, to the
        // millisecond); the JDBC path's query timeout is whole seconds.
        String slow = "SELECT nn_i FROM slow_everything";
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> copy.read(P_ALL, Selector.parse(slow), MAX_ROWS, MAX_BYTES, Deadline.after(Duration.ofMillis(300))))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMillis(1500));
        bothFail(ErrorCode.DEADLINE_EXCEEDED, P_ALL, slow, MAX_ROWS, MAX_BYTES, Duration.ofMillis(300));
    }

    /**
     * A server that stops answering (its backend frozen with SIGSTOP: no statement timeout can fire, no
     * cancel is acted on) holds the COPY up to the deadline plus the socket's grace, not forever; the
     * connection is given up and the pool's next one reads.
     */
    @Test
    void aServerThatStopsAnsweringCannotHangTheCopy() throws Exception {
        Selector selector = Selector.parse(ALL);
        copy.read(P_ALL, selector, MAX_ROWS, MAX_BYTES, Deadline.after(Duration.ofSeconds(5))); // types learned
        int backend = backendPid();
        signal("STOP", backend);
        long t0 = System.nanoTime();
        try {
            assertThatThrownBy(() -> copy.read(P_ALL, selector, MAX_ROWS, MAX_BYTES, Deadline.after(Duration.ofMillis(300))))
                    .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
        } finally {
            signal("CONT", backend);
        }
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isBetween(Duration.ofMillis(300),
                Duration.ofMillis(300 + ShardReader.NETWORK_GRACE_MS + 2_000));
        assertThat(backendPid()).as("the frozen connection was given up").isNotEqualTo(backend);
        assertThat(same(P_ALL, ALL, MAX_ROWS, MAX_BYTES)).isNotEmpty();
    }

    private static void signal(String signal, int pid) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Integer.toString(pid)).inheritIO().start();
        assertThat(kill.waitFor()).as("kill -%s %d", signal, pid).isZero();
    }

    @Test
    void aShardDatabaseThatCannotBeReachedIsStoreUnavailable() {
        // (An error in the middle of the COPY, from the server: aSelectorFailingOnTheRowsIsInvalidNotRetryable.)
        HikariDataSource closed = Pools.open("shard-copy-closed", TestPostgres.newDatabase(), null, null, 1);
        closed.close();
        for (Mode mode : Mode.values()) {
            assertThatThrownBy(() -> new ShardReader(closed, mode).read(P_ALL, Selector.parse(ALL), MAX_ROWS, MAX_BYTES,
                    Deadline.after(Duration.ofSeconds(5)))).as(mode.name())
                    .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE));
        }
    }

    @Test
    void aNumericBeyondDoubleIsInfinityOverJdbcAndRefusedOverCopy() throws SQLException {
        // The one known difference: PostgreSQL's numeric::float8 refuses what Double.parseDouble makes infinite.
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE huge (n numeric, thresher_slot int)");
            s.execute("INSERT INTO huge VALUES ('1e400', 7)");
        }
        Selector selector = Selector.parse("SELECT n FROM huge");
        RowBatch batch = RowBatch.decode(jdbc.read(P_ALL, selector, MAX_ROWS, MAX_BYTES, Deadline.after(Duration.ofSeconds(5))).bytes());
        assertThat(batch.getDouble(0, 0)).isEqualTo(Double.POSITIVE_INFINITY);
        assertThatThrownBy(() -> copy.read(P_ALL, selector, MAX_ROWS, MAX_BYTES, Deadline.after(Duration.ofSeconds(5))))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR); // 22003: fails the same every time
                    assertThat(e.getMessage()).contains("out of range");
                });
    }

    /**
     * The COPY reader keeps the types it learned; each change below contradicts them in the stream, so
     * the read learns them again and still equals the JDBC path. (The pool's connection is replaced after
     * each change: pgjdbc's server-prepared statements of the JDBC path would otherwise fail once with
     * "cached plan must not change result type", which is not what this tests.)
     */
    @Test
    void aColumnTypeChangedUnderTheCachedTypesIsLearnedAgain() throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE shifting (v int8 NOT NULL, w text, thresher_slot int NOT NULL)");
            s.execute("INSERT INTO shifting SELECT g * 3, 'w' || g, g % 100 FROM generate_series(1, 50) g");
        }
        String sql = "SELECT v, w FROM shifting";
        assertThat(RowBatch.decode(same(P_ALL, sql, MAX_ROWS, MAX_BYTES)).columns().get(0)).isEqualTo(Column.of("v", ColumnType.INT64));
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("ALTER TABLE shifting ALTER v TYPE int4"); // 4 bytes where 8 were learned
        }
        pool.getHikariPoolMXBean().softEvictConnections();
        assertThat(RowBatch.decode(same(P_ALL, sql, MAX_ROWS, MAX_BYTES)).getLong(0, 0)).isPositive();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("ALTER TABLE shifting ALTER v DROP NOT NULL");
            s.execute("INSERT INTO shifting VALUES (NULL, NULL, 0)"); // a NULL where none was allowed
        }
        pool.getHikariPoolMXBean().softEvictConnections();
        RowBatch batch = RowBatch.decode(same(P_ALL, sql, MAX_ROWS, MAX_BYTES));
        assertThat(batch.columns().get(0)).isEqualTo(Column.nullable("v", ColumnType.INT64));
        assertThat(java.util.stream.IntStream.range(0, batch.rowCount()).filter(r -> batch.isNull(0, r)).count()).isOne();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("ALTER TABLE shifting ALTER w TYPE bytea USING convert_to(w, 'UTF8') || '\\xff'::bytea");
        }
        pool.getHikariPoolMXBean().softEvictConnections();
        assertThat(RowBatch.decode(same(P_ALL, sql, MAX_ROWS, MAX_BYTES)).columns().get(1)).isEqualTo(Column.nullable("w", ColumnType.BYTES));
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("ALTER TABLE shifting DROP COLUMN w");
        }
        pool.getHikariPoolMXBean().softEvictConnections();
        bothFail(ErrorCode.INVALID_SELECTOR, P_ALL, sql, MAX_ROWS, MAX_BYTES, Duration.ofSeconds(5));
    }

    /** Reads the case {@value #ROUNDS} times each way, interleaved; every batch must be the first one. */
    private static byte[] same(Partition p, String selectorSql, int maxRows, int maxBytes) {
        Selector selector = Selector.parse(selectorSql);
        byte[] first = null;
        for (int round = 0; round < ROUNDS; round++) {
            for (ShardReader reader : List.of(jdbc, copy)) {
                ShardBatch batch = reader.read(p, selector, maxRows, maxBytes, Deadline.after(Duration.ofSeconds(10)));
                assertThat(RowBatch.decode(batch.bytes()).rowCount()).isEqualTo(batch.rowCount());
                if (first == null) {
                    first = batch.bytes();
                } else {
                    assertThat(HexFormat.of().formatHex(batch.bytes()))
                            .as("%s read %d of %s", reader.mode(), round, selectorSql)
                            .isEqualTo(HexFormat.of().formatHex(first));
                }
            }
        }
        return first;
    }

    private static ThresherException bothFail(ErrorCode code, Partition p, String selectorSql, int maxRows, int maxBytes,
                                              Duration budget) {
        Selector selector = Selector.parse(selectorSql);
        ThresherException last = null;
        for (ShardReader reader : List.of(jdbc, copy)) {
            int backend = backendPid();
            ThresherException e = null;
            try {
                reader.read(p, selector, maxRows, maxBytes, Deadline.after(budget));
            } catch (ThresherException t) {
                e = t;
            }
            assertThat(e).as("%s reading %s", reader.mode(), selectorSql).isNotNull();
            assertThat(e.code()).as("%s reading %s: %s", reader.mode(), selectorSql, e.getMessage()).isEqualTo(code);
            assertClean();
            assertThat(backendPid()).as("%s kept its connection after %s", reader.mode(), code).isEqualTo(backend);
            last = e;
        }
        return last;
    }

    /** The pool's one connection is in auto-commit, outside any transaction, with no statement timeout left. */
    private static void assertClean() {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            assertThat(c.getAutoCommit()).isTrue();
            assertThat(c.getNetworkTimeout()).isZero();
            try (ResultSet rs = s.executeQuery("SELECT current_setting('statement_timeout')")) {
                rs.next();
                assertThat(rs.getString(1)).isEqualTo("0");
            }
            // Two statements in auto-commit are two transactions, unless one was left open.
            assertThat(xid(s)).as("no transaction left open").isNotEqualTo(xid(s));
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    private static int backendPid() {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    private static String xid(Statement s) throws SQLException {
        try (ResultSet rs = s.executeQuery("SELECT pg_current_xact_id()::text")) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static Partition partition(int id, int lo, int hi) {
        return new Partition(id, "acme", "everything", lo, hi, 1, 1);
    }
}
