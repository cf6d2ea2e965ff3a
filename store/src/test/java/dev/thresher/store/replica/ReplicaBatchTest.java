package dev.thresher.store.replica;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.RowBatch;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.store.shard.ShardReader.Mode;
import dev.thresher.topology.Partition;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.postgresql.PGConnection;

/**
 * The replica against the SQL read on a real PostgreSQL: a partition loaded into a {@link PartitionRows} from
 * {@code COPY ... TO STDOUT} text (what a snapshot gives a replica) must give the batch {@link ShardReader}
 * reads from the table, on both of its paths: the same columns, and the same rows bit for bit, in any
 * order; the same refusals. Filters are checked against PostgreSQL's own answer, the written ones and
 * randomized ones from the grammar {@link RowFilter} compiles.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ReplicaBatchTest {
    private static final Partition P = new Partition(7, "tenant", "everything", 0, 99, 1, 1);
    private static final String ALL = "SELECT i2, i4, i8, f4, f8, num, t, vc, bp, b, by, nn_t, nn_i, d FROM everything";
    private static final int MAX_ROWS = 4096;
    private static final int MAX_BYTES = 16 << 20;
    private static final int ROWS = 400;

    private static HikariDataSource pool;
    private static ShardReader jdbc;
    private static ShardReader copy;
    private static PartitionRows replica;

    @BeforeAll
    static void load() throws SQLException, IOException {
        pool = Pools.open("replica-batch-test", TestPostgres.newDatabase(), null, null, 2);
        jdbc = new ShardReader(pool, Mode.JDBC);
        copy = new ShardReader(pool, Mode.COPY);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE DOMAIN small_count AS int4 CHECK (VALUE >= 0)");
            s.execute("""
                    CREATE TABLE everything (
                        id int8 PRIMARY KEY,
                        i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric,
                        t text, vc varchar(40), bp char(6), b bool, by bytea,
                        nn_t text NOT NULL, nn_i int8 NOT NULL,
                        u uuid, j jsonb, d small_count,
                        thresher_slot int NOT NULL)""");
            s.execute("ALTER TABLE everything DROP COLUMN j"); // a dropped column is no column
            s.execute("ALTER TABLE everything ADD COLUMN j jsonb");
            insert(c, 0, ROWS);
        }
        replica = new PartitionRows(columns(), identity());
        for (Tuple row : copyRows("thresher_slot BETWEEN " + P.slotLo() + " AND " + P.slotHi())) {
            replica.insert(row);
        }
        assertThat(replica.rowCount()).isEqualTo(ROWS / 2);
    }

    @AfterAll
    static void close() {
        pool.close();
    }

    private static void insert(Connection c, int from, int to) throws SQLException {
        Short[] i2 = {null, 0, Short.MIN_VALUE, Short.MAX_VALUE, 1, -1, 42};
        Integer[] i4 = {null, Integer.MIN_VALUE, Integer.MAX_VALUE, 0, 42, 1, 2, -5};
        Long[] i8 = {null, Long.MIN_VALUE, Long.MAX_VALUE, 0L, -7L, 1L, 1_000_003L};
        Float[] f4 = {null, 1.1f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0.0f, Float.MIN_VALUE,
            Float.MAX_VALUE, 1e-40f, 0.3f, 16777216f, 0f, 2.5f};
        Double[] f8 = {null, 0.1, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, Double.MIN_VALUE,
            Double.MAX_VALUE, 1.0 / 3, 2.2250738585072014E-308, 0.0, 1.1, 2.5};
        String[] num = {null, "123.456", "0.1", "-0.000001", "12345678901234567890.123456789", "NaN", "Infinity",
            "-Infinity", "1e300", "0.00", "5e-324", "0.30000000000000000000000001", "-42"};
        String[] text = {null, "", "a", "a ", "ab", "grüße", "日本語のテキスト", "emoji 🎉 and 𝄞",
            "tab\tnew\nline\r 'quote' \"dq\" \\bs \\N", "x".repeat(3000), "it's"};
        String[] vc = {null, "varchar ü", "", "ǅ", "a"};
        String[] bp = {null, "ab", "ü", "sixsix", "", "a"};
        Boolean[] b = {null, true, false};
        Random random = new Random(7);
        byte[] noise = new byte[500];
        random.nextBytes(noise);
        byte[][] by = {null, new byte[0], {0, -1, 127, -128}, noise, {'\\', '\\', 'x'}};
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO everything (id, i2, i4, i8, f4, f8, num, t, vc, bp, b, by,"
                + " nn_t, nn_i, u, j, d, thresher_slot) VALUES (?, ?, ?, ?, ?, ?, ?::numeric, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)")) {
            for (int k = from; k < to; k++) {
                ps.setLong(1, k);
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
                set(ps, 15, k % 3 == 0 ? null : new UUID(k, k * 31L), Types.OTHER);
                set(ps, 16, k % 4 == 0 ? null : "{\"k\": " + k + "}", Types.VARCHAR);
                set(ps, 17, k % 5 == 0 ? null : k % 7, Types.INTEGER);
                ps.setInt(18, k % 200);
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

    /** The table's columns from the catalog, a domain as its base type (as pgjdbc reports it to the SQL read). */
    private static List<ReplicaColumn> columns() throws SQLException {
        List<ReplicaColumn> columns = new ArrayList<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT a.attname, CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, a.attnotnull
                FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                WHERE a.attrelid = 'everything'::regclass AND a.attnum > 0 AND NOT a.attisdropped
                ORDER BY a.attnum""")) {
            while (rs.next()) {
                columns.add(new ReplicaColumn(rs.getString(1), rs.getInt(2), rs.getBoolean(3)));
            }
        }
        return columns;
    }

    /** The primary key's columns, as indexes into {@link #columns()}. */
    private static int[] identity() throws SQLException {
        List<String> names = columns().stream().map(ReplicaColumn::name).toList();
        List<Integer> key = new ArrayList<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
                WHERE i.indrelid = 'everything'::regclass AND i.indisprimary""")) {
            while (rs.next()) {
                key.add(names.indexOf(rs.getString(1)));
            }
        }
        return key.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The rows a filter selects, as {@code COPY (SELECT * ...) TO STDOUT} writes them, parsed into tuples. */
    private static List<Tuple> copyRows(String where) throws SQLException, IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Connection c = pool.getConnection()) {
            c.unwrap(PGConnection.class).getCopyAPI().copyOut("COPY (SELECT * FROM everything WHERE " + where + ") TO STDOUT", out);
        }
        List<Tuple> rows = new ArrayList<>();
        byte[] text = out.toByteArray();
        int start = 0;
        for (int i = 0; i < text.length; i++) {
            if (text[i] == '\n') {
                rows.add(parseLine(Arrays.copyOfRange(text, start, i)));
                start = i + 1;
            }
        }
        return rows;
    }

    /** One line of COPY's text format: fields split by tabs, {@code \N} for NULL, backslash escapes. */
    private static Tuple parseLine(byte[] line) {
        List<byte[]> fields = new ArrayList<>();
        int start = 0;
        for (int i = 0; i <= line.length; i++) {
            if (i == line.length || line[i] == '\t') {
                byte[] raw = Arrays.copyOfRange(line, start, i);
                fields.add(raw.length == 2 && raw[0] == '\\' && raw[1] == 'N' ? null : unescape(raw));
                start = i + 1;
            }
        }
        return new Tuple(fields.toArray(new byte[0][]));
    }

    private static byte[] unescape(byte[] raw) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(raw.length);
        for (int i = 0; i < raw.length; i++) {
            if (raw[i] != '\\') {
                out.write(raw[i]);
                continue;
            }
            byte e = raw[++i];
            out.write(switch (e) {
                case 'b' -> '\b';
                case 'f' -> '\f';
                case 'n' -> '\n';
                case 'r' -> '\r';
                case 't' -> '\t';
                case 'v' -> 0x0B;
                default -> e; // \\ and anything COPY escapes by a backslash alone
            });
        }
        return out.toByteArray();
    }

    private static Optional<RowFilter> filterOf(Selector selector) {
        return selector.where().map(w -> RowFilter.compile(w, replica.columns())
                .orElseThrow(() -> new AssertionError("'" + w + "' did not compile")));
    }

    /** The replica's batch equals both SQL reads' (as multisets of rows); returns its row count. */
    private static int same(String selectorSql, int maxRows, int maxBytes) {
        Selector selector = Selector.parse(selectorSql);
        ShardBatch mine = replica.batch(P.id(), selector, filterOf(selector).orElse(null), maxRows, maxBytes);
        RowBatch decoded = RowBatch.decode(mine.bytes());
        assertThat(decoded.rowCount()).isEqualTo(mine.rowCount());
        assertThat(decoded.partitionId()).isEqualTo(P.id());
        for (ShardReader reader : List.of(jdbc, copy)) {
            ShardBatch theirs = reader.read(P, selector, maxRows, maxBytes, Deadline.after(Duration.ofSeconds(10)));
            RowBatch expected = RowBatch.decode(theirs.bytes());
            assertThat(decoded.columns()).as("%s: %s", reader.mode(), selectorSql).isEqualTo(expected.columns());
            assertThat(Rows.content(mine.bytes())).as("%s: %s", reader.mode(), selectorSql)
                    .isEqualTo(Rows.content(theirs.bytes()));
            assertThat(mine.bytes().length).isEqualTo(theirs.bytes().length);
        }
        return mine.rowCount();
    }

    private static void bothFail(ErrorCode code, String selectorSql, int maxRows, int maxBytes) {
        Selector selector = Selector.parse(selectorSql);
        ThresherException mine = failure(() -> replica.batch(P.id(), selector, filterOf(selector).orElse(null), maxRows, maxBytes));
        assertThat(mine.code()).as(mine.getMessage()).isEqualTo(code);
        for (ShardReader reader : List.of(jdbc, copy)) {
            ThresherException theirs = failure(() -> reader.read(P, selector, maxRows, maxBytes, Deadline.after(Duration.ofSeconds(10))));
            assertThat(theirs.code()).as("%s: %s", reader.mode(), theirs.getMessage()).isEqualTo(code);
            String prefix = theirs.getMessage().replaceAll(" at row \\d+$", "");
            if (code == ErrorCode.BATCH_TOO_MANY_ROWS || code == ErrorCode.BATCH_TOO_LARGE) {
                assertThat(mine.getMessage()).startsWith(prefix);
            }
        }
    }

    private static ThresherException failure(Supplier<ShardBatch> read) {
        try {
            read.get();
        } catch (ThresherException e) {
            return e;
        }
        throw new AssertionError("no failure");
    }

    @Test
    @Order(1)
    void everyTypeNullsAndUnicodeAreTheSameBatch() {
        assertThat(same(ALL, MAX_ROWS, MAX_BYTES)).isEqualTo(ROWS / 2);
        assertThat(same("SELECT nn_i, thresher_slot, \"bp\", BY FROM everything", MAX_ROWS, MAX_BYTES)).isEqualTo(ROWS / 2);
        assertThat(same("SELECT nn_i FROM everything WHERE false", MAX_ROWS, MAX_BYTES)).isZero();
    }

    @Test
    @Order(2)
    void filtersAreAnsweredAsPostgresqlAnswersThem() {
        for (String where : List.of(
                "i4 > 0", "i4 = 1 OR i4 IS NULL", "NOT i4 = 1", "f8 = 0", "f8 > 1e308", "(f8 <> 0) IS NULL",
                "f4 = 1.1", "f4 IN (1.1, 0.3)", "f4 IN (1.1)", "f4 <= 1.100000023841858", "f4 IN (16777217, 2.5)",
                "f4 = 16777217", "f4 > 3.4028234663852886e38", "f4 BETWEEN -1e-40 AND 1e-40", "f8 = 4.9e-324",
                "i8 BETWEEN -7 AND 1000003", "i8 NOT BETWEEN -7.5 AND 1000002.5", "i8 > 9223372036854775806.5",
                "i8 < -9223372036854775807.5", "i2 IN (1, -1, 32768, 42.0)", "i2 = 32767", "i4 > -2147483648.1",
                "bp = 'ab'", "bp = 'ab    '", "bp = ''", "bp IN ('a', 'ü')", "vc = ''", "vc <> 'a'", "vc IN ('ǅ', 'a')",
                "t = 'grüße' OR b IS NULL", "t = 'a ' OR t = 'it''s'", "t IN ('', '日本語のテキスト')", "t NOT IN ('a', 'ab')",
                "b", "NOT b", "b IS NOT FALSE", "(b OR i4 > 0) IS NULL", "b = FALSE AND NOT i4 IN (0, 42, NULL)",
                "num IS NULL", "u IS NOT NULL AND j IS NULL", "d = 3", "d IS NULL OR d > 4")) {
            same("SELECT nn_i, f4, t FROM everything WHERE " + where, MAX_ROWS, MAX_BYTES);
        }
    }

    @Test
    @Order(3)
    void refusalsAreTheSqlReadsRefusals() {
        int n = same("SELECT t, i8, nn_i FROM everything", MAX_ROWS, MAX_BYTES);
        assertThat(same("SELECT t, i8, nn_i FROM everything", n, MAX_BYTES)).isEqualTo(n);
        bothFail(ErrorCode.BATCH_TOO_MANY_ROWS, "SELECT t, i8, nn_i FROM everything", n - 1, MAX_BYTES);
        bothFail(ErrorCode.BATCH_TOO_MANY_ROWS, ALL, 0, MAX_BYTES);
        bothFail(ErrorCode.BATCH_TOO_MANY_ROWS, "SELECT nn_i FROM everything WHERE i4 IS NULL", 1, MAX_BYTES);
        int size = replica.batch(P.id(), Selector.parse(ALL), null, MAX_ROWS, MAX_BYTES).bytes().length;
        assertThat(same(ALL, MAX_ROWS, size)).isEqualTo(n);
        bothFail(ErrorCode.BATCH_TOO_LARGE, ALL, MAX_ROWS, size - 1);
        bothFail(ErrorCode.BATCH_TOO_LARGE, ALL, MAX_ROWS, 64);
        bothFail(ErrorCode.INVALID_SELECTOR, "SELECT i4, u FROM everything", MAX_ROWS, MAX_BYTES);
        bothFail(ErrorCode.INVALID_SELECTOR, "SELECT j FROM everything", MAX_ROWS, MAX_BYTES);
        bothFail(ErrorCode.INVALID_SELECTOR, "SELECT nope FROM everything", MAX_ROWS, MAX_BYTES);
    }

    /** Changes made in PostgreSQL and applied to the replica as a replication stream would apply them. */
    @Test
    @Order(4)
    void theReplicaFollowsChanges() throws SQLException, IOException {
        List<Long> updated = ids("id % 5 = 0");
        List<Long> deleted = ids("id % 7 = 0 AND id % 5 <> 0");
        List<Long> rekeyed = ids("id % 11 = 0 AND id % 5 <> 0 AND id % 7 <> 0");
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            // (Not -f8 for NaN: PostgreSQL would keep a NaN with its sign bit set, which its text form does not show.)
            s.execute("UPDATE everything SET t = 'changed ' || id, f8 = CASE WHEN f8 = 'NaN' THEN f8 ELSE -f8 END,"
                    + " b = NOT b, by = NULL WHERE id % 5 = 0");
            s.execute("DELETE FROM everything WHERE id % 7 = 0 AND id % 5 <> 0");
            s.execute("UPDATE everything SET id = id + 100000 WHERE id % 11 = 0 AND id % 5 <> 0 AND id % 7 <> 0");
            insert(c, ROWS, ROWS + 100);
        }
        for (Tuple row : copyRows("id % 5 = 0 AND id < " + ROWS)) {
            assertThat(replica.update(null, false, row)).isEqualTo(updated.contains(id(row)));
        }
        for (long id : deleted) {
            assertThat(replica.delete(key(id), true)).isTrue();
        }
        for (Tuple row : copyRows("id >= 100000")) {
            long old = id(row) - 100000;
            assertThat(replica.update(key(old), true, row)).isEqualTo(rekeyed.contains(old));
        }
        for (Tuple row : copyRows("id >= " + ROWS + " AND id < 100000 AND thresher_slot BETWEEN 0 AND 99")) {
            replica.insert(row);
        }
        int n = same(ALL, MAX_ROWS, MAX_BYTES);
        assertThat(n).isEqualTo(ROWS / 2 + 100 - deleted.size());
        same("SELECT nn_i, t, f8, b FROM everything WHERE b OR t IN ('changed 10', 'a')", MAX_ROWS, MAX_BYTES);
    }

    private static List<Long> ids(String where) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id FROM everything WHERE thresher_slot BETWEEN 0 AND 99 AND " + where)) {
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
        }
        return ids;
    }

    private static long id(Tuple row) {
        return Long.parseLong(new String(row.value(0), java.nio.charset.StandardCharsets.US_ASCII));
    }

    private static Tuple key(long id) {
        byte[][] values = new byte[replica.columns().size()][];
        values[0] = Long.toString(id).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        return new Tuple(values);
    }

    /**
     * Randomized filters from the grammar {@link RowFilter} compiles (and some it declines): each one that
     * compiles must select what PostgreSQL selects, and PostgreSQL must accept it.
     */
    @Test
    @Order(5)
    void randomFiltersAreAnsweredAsPostgresqlAnswersThem() {
        Random random = new Random(20240607);
        FilterGenerator generator = new FilterGenerator(random);
        int compiled = 0;
        int tried = 0;
        for (int i = 0; i < 600; i++) {
            String where = generator.condition(3);
            Selector selector;
            try {
                selector = Selector.parse("SELECT nn_i, f8 FROM everything WHERE " + where);
            } catch (ThresherException e) {
                continue; // not a selector at all: nothing for a filter to answer
            }
            tried++;
            Optional<RowFilter> filter = RowFilter.compile(selector.where().orElseThrow(), replica.columns());
            if (filter.isEmpty()) {
                continue;
            }
            compiled++;
            ShardBatch mine = replica.batch(P.id(), selector, filter.get(), MAX_ROWS, MAX_BYTES);
            ShardBatch theirs;
            try {
                theirs = jdbc.read(P, selector, MAX_ROWS, MAX_BYTES, Deadline.after(Duration.ofSeconds(10)));
            } catch (ThresherException e) {
                throw new AssertionError("compiled, but PostgreSQL refuses: " + where + ": " + e.getMessage(), e);
            }
            assertThat(Rows.content(mine.bytes())).as(where).isEqualTo(Rows.content(theirs.bytes()));
        }
        assertThat(tried).isGreaterThan(500);
        assertThat(compiled).as("filters compiled of %d", tried).isGreaterThan(tried / 2);
    }

    /** Conditions over the table's columns: mostly what compiles, some of what does not. */
    private record FilterGenerator(Random random) {
        private static final String[] INTS = {"i2", "i4", "i8", "d", "nn_i"};
        private static final String[] FLOATS = {"f4", "f8"};
        private static final String[] TEXTS = {"t", "vc", "bp", "nn_t"};
        private static final String[] INT_LITERALS = {"0", "1", "-1", "2", "-5", "42", "42.0", "2.5", "-2.5", "1e3", "0.5",
            "32767", "32768", "-32768", "-32769", "2147483647", "2147483648", "-2147483648", "1000003", "-7", "-7.0000001",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
            "99999999999999999999999", "1e-400", "NULL"};
        private static final String[] FLOAT_LITERALS = {"0", "-0", "0.0", "-0.0", "0.1", "1.1", "0.3", "2.5", "1e300", "-1e300",
            "3.4028235e38", "3.4028236e38", "1.4e-45", "1e-45", "1e-40", "16777216", "16777217", "4.9e-324",
            "2.2250738585072014E-308", "1.7976931348623157e308", "0.33333333333333331", "1.100000023841858", "-7", "NULL"};
        private static final String[] TEXT_LITERALS = {"''", "'a'", "'a '", "'ab'", "'ab    '", "'grüße'", "'it''s'",
            "'日本語のテキスト'", "'varchar ü'", "'ǅ'", "'sixsix'", "'ü'", "'x'", "NULL"};

        String condition(int depth) {
            int kind = random.nextInt(depth > 0 ? 14 : 9);
            return switch (kind) {
                case 0, 1 -> comparison();
                case 2 -> in();
                case 3 -> between();
                case 4 -> pick(INTS, FLOATS, TEXTS, new String[] {"b", "num", "u", "j", "by"}) + (random.nextBoolean() ? " IS NULL" : " IS NOT NULL");
                case 5 -> random.nextBoolean() ? "b" : "b IS " + (random.nextBoolean() ? "NOT " : "") + (random.nextBoolean() ? "TRUE" : "FALSE");
                case 6 -> "b " + op() + " " + pick(new String[] {"TRUE", "FALSE", "NULL"});
                case 7 -> mismatched();
                case 8 -> pick(new String[] {"TRUE", "FALSE", "NULL"});
                case 9 -> condition(depth - 1) + " AND " + condition(depth - 1);
                case 10 -> condition(depth - 1) + " OR " + condition(depth - 1);
                case 11 -> "NOT " + condition(depth - 1);
                case 12 -> "(" + condition(depth - 1) + ")" + " IS " + (random.nextBoolean() ? "NOT " : "")
                        + pick(new String[] {"TRUE", "FALSE", "NULL"});
                default -> "(" + condition(depth - 1) + ")";
            };
        }

        private String comparison() {
            int kind = random.nextInt(3);
            String column;
            String literal;
            String op = op();
            if (kind == 0) {
                column = pick(INTS);
                literal = pick(INT_LITERALS);
            } else if (kind == 1) {
                column = pick(FLOATS);
                literal = pick(FLOAT_LITERALS);
            } else {
                column = pick(TEXTS);
                literal = pick(TEXT_LITERALS);
                op = random.nextBoolean() ? "=" : random.nextInt(4) == 0 ? op() : "<>";
            }
            return random.nextBoolean() ? column + " " + op + " " + literal : literal + " " + op + " " + column;
        }

        private String in() {
            int kind = random.nextInt(3);
            String column = kind == 0 ? pick(INTS) : kind == 1 ? pick(FLOATS) : pick(TEXTS);
            String[] literals = kind == 0 ? INT_LITERALS : kind == 1 ? FLOAT_LITERALS : TEXT_LITERALS;
            int n = 1 + random.nextInt(3);
            List<String> items = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                items.add(pick(literals));
            }
            String in = column + (random.nextBoolean() ? " NOT IN (" : " IN (") + String.join(", ", items) + ")";
            return random.nextBoolean() ? "(" + in + ")" : in;
        }

        private String between() {
            boolean isFloat = random.nextBoolean();
            String column = isFloat ? pick(FLOATS) : pick(INTS);
            String[] literals = isFloat ? FLOAT_LITERALS : INT_LITERALS;
            return column + (random.nextBoolean() ? " NOT BETWEEN " : " BETWEEN ") + pick(literals) + " AND " + pick(literals);
        }

        /** Forms PostgreSQL answers but the filter declines (or PostgreSQL refuses too). */
        private String mismatched() {
            return pick(new String[] {"num > 0.5", "num = 1", "t < 'b'", "i4 + 1 = 2", "i4 = i8", "t LIKE 'a%'",
                "i4 = CAST(1 AS int8)", "f8 = num", "bp > 'a'", "i4 IS DISTINCT FROM 1", "b = (i4 = 1)"});
        }

        private String op() {
            return pick(new String[] {"=", "<>", "!=", "<", "<=", ">", ">="});
        }

        private String pick(String[]... arrays) {
            String[] a = arrays[random.nextInt(arrays.length)];
            return a[random.nextInt(a.length)];
        }
    }
}
