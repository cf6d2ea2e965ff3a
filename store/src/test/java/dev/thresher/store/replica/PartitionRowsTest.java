package dev.thresher.store.replica;

import static dev.thresher.store.replica.Rows.UNCHANGED;
import static dev.thresher.store.replica.Rows.content;
import static dev.thresher.store.replica.Rows.row;
import static dev.thresher.store.replica.Rows.tuple;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.RowBatch;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.shard.PgType;
import dev.thresher.store.shard.ShardBatch;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class PartitionRowsTest {
    /** {@code (id int8 key, name text, score float8, flag bool, data bytea, thresher_slot int4 NOT NULL)}. */
    private static final List<ReplicaColumn> COLUMNS = List.of(
            new ReplicaColumn("id", PgType.INT8, true),
            new ReplicaColumn("name", PgType.TEXT, false),
            new ReplicaColumn("score", PgType.FLOAT8, false),
            new ReplicaColumn("flag", PgType.BOOL, false),
            new ReplicaColumn("data", PgType.BYTEA, false),
            new ReplicaColumn("thresher_slot", PgType.INT4, true));
    private static final String ALL = "SELECT id, name, score, flag, data, thresher_slot FROM t";

    private static PartitionRows keyed() {
        return new PartitionRows(COLUMNS, new int[] {0});
    }

    private static PartitionRows full() {
        return new PartitionRows(COLUMNS, new int[] {0, 1, 2, 3, 4, 5});
    }

    @Test
    void insertUpdateAndDeleteByKey() {
        PartitionRows rows = keyed();
        rows.insert(tuple("1", "one", "1.5", "t", "\\x0102", "7"));
        rows.insert(tuple("2", "two", null, "f", null, "7"));
        rows.insert(tuple("3", null, "NaN", null, "\\x", "8"));
        assertThat(rows.rowCount()).isEqualTo(3);
        assertThat(content(rows, ALL)).containsExactly(
                row(1L, "one", 1.5, true, new byte[] {1, 2}, 7L),
                row(2L, "two", null, false, null, 7L),
                row(3L, null, Double.NaN, null, new byte[0], 8L));

        // The key stays: found by the new row.
        assertThat(rows.update(null, false, tuple("2", "TWO", "-0", "t", "\\xff", "7"))).isTrue();
        // The key changes: found by the old key (only key columns set).
        assertThat(rows.update(tuple("1", null, null, null, null, null), true, tuple("10", "ten", "Infinity", "f", null, "9")))
                .isTrue();
        assertThat(rows.delete(tuple("3", null, null, null, null, null), true)).isTrue();
        assertThat(content(rows, ALL)).containsExactly(
                row(10L, "ten", Double.POSITIVE_INFINITY, false, null, 9L),
                row(2L, "TWO", -0.0, true, new byte[] {-1}, 7L));

        // Nothing has these keys: nothing changes.
        long version = rows.version();
        assertThat(rows.delete(tuple("1", null, null, null, null, null), true)).isFalse();
        assertThat(rows.update(tuple("3", null, null, null, null, null), true, tuple("3", "x", null, null, null, "1"))).isFalse();
        assertThat(rows.version()).isEqualTo(version);
        assertThat(rows.rowCount()).isEqualTo(2);
    }

    @Test
    void anUnchangedValueKeepsTheRowsValue() {
        PartitionRows rows = keyed();
        rows.insert(tuple("1", "a long toasted text", "2.5", "t", "\\xabcd", "1"));
        assertThat(rows.update(null, false, tuple("1", UNCHANGED, "3.5", "f", UNCHANGED, "1"))).isTrue();
        assertThat(content(rows, ALL)).containsExactly(row(1L, "a long toasted text", 3.5, false, new byte[] {(byte) 0xab, (byte) 0xcd}, 1L));
        // An unchanged key (a TOASTed key the update did not touch) is found by the other identity columns.
        PartitionRows twoColumnKey = new PartitionRows(COLUMNS, new int[] {0, 1});
        twoColumnKey.insert(tuple("1", "k", null, null, null, "1"));
        twoColumnKey.insert(tuple("2", "k", null, null, null, "1"));
        assertThat(twoColumnKey.update(null, false, tuple("2", UNCHANGED, "5", null, null, "1"))).isTrue();
        assertThat(twoColumnKey.update(null, false, tuple("3", UNCHANGED, "5", null, null, "1"))).isFalse();
        assertThat(content(twoColumnKey, "SELECT id, name, score FROM t")).containsExactly(row(1L, "k", null), row(2L, "k", 5.0));
        // An insert has no unchanged values.
        assertThatThrownBy(() -> rows.insert(tuple("2", UNCHANGED, null, null, null, "1")))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aWholeRowIdentityChangesExactlyOneOfIdenticalRows() {
        PartitionRows rows = full();
        for (int i = 0; i < 3; i++) {
            rows.insert(tuple("1", "same", "0.1", "t", null, "4"));
        }
        rows.insert(tuple("1", "same", "0.1", "t", "\\x00", "4")); // differs only in data
        assertThat(rows.rowCount()).isEqualTo(4);
        assertThat(rows.delete(tuple("1", "same", "0.1", "t", null, "4"), false)).isTrue();
        assertThat(rows.rowCount()).isEqualTo(3);
        assertThat(rows.update(tuple("1", "same", "0.1", "t", null, "4"), false, tuple("1", "changed", "0.1", "t", null, "4"))).isTrue();
        assertThat(content(rows, ALL)).containsExactly(
                row(1L, "changed", 0.1, true, null, 4L),
                row(1L, "same", 0.1, true, null, 4L),
                row(1L, "same", 0.1, true, new byte[] {0}, 4L));
        assertThat(rows.delete(tuple("1", "same", "0.1", "t", null, "4"), false)).isTrue();
        assertThat(rows.delete(tuple("1", "same", "0.1", "t", null, "4"), false)).isFalse();
        // NULL matches NULL in a whole-row identity (IS NOT DISTINCT FROM, as the old row is meant).
        assertThat(rows.delete(tuple("1", "same", "0.1", "t", "\\x00", "4"), false)).isTrue();
        assertThat(content(rows, ALL)).containsExactly(row(1L, "changed", 0.1, true, null, 4L));
    }

    @Test
    void truncateEmptiesAndFreesTheRows() {
        PartitionRows rows = keyed();
        long empty = rows.bytes();
        for (int i = 0; i < 1000; i++) {
            rows.insert(tuple(Integer.toString(i), "name " + i, "1", "t", null, "1"));
        }
        long version = rows.version();
        rows.clear();
        assertThat(rows.rowCount()).isZero();
        assertThat(rows.version()).isGreaterThan(version);
        assertThat(rows.bytes()).isEqualTo(empty);
        assertThat(content(rows, ALL)).isEmpty();
        rows.insert(tuple("1", "again", null, null, null, "1"));
        assertThat(content(rows, "SELECT name FROM t")).containsExactly(row("again"));
    }

    /** Random changes against a plain map: the replica must hold exactly the model's rows after each round. */
    @Test
    void randomChangesByKeyMatchAModel() {
        Random random = new Random(42);
        PartitionRows rows = keyed();
        Map<Long, String[]> model = new HashMap<>();
        for (int round = 0; round < 40; round++) {
            for (int op = 0; op < 500; op++) {
                long id = random.nextInt(2000);
                String[] values = randomRow(random, id);
                int kind = random.nextInt(10);
                if (kind < 4) {
                    if (!model.containsKey(id)) {
                        rows.insert(tuple(values));
                        model.put(id, values);
                    }
                } else if (kind < 7) {
                    boolean present = model.containsKey(id);
                    assertThat(rows.update(null, false, tuple(values))).isEqualTo(present);
                    if (present) {
                        model.put(id, values);
                    }
                } else if (kind < 8) {
                    // The key changes.
                    long to = 2000 + random.nextInt(2000);
                    boolean present = model.containsKey(id) && !model.containsKey(to);
                    if (present) {
                        String[] moved = randomRow(random, to);
                        assertThat(rows.update(keyOnly(id), true, tuple(moved))).isTrue();
                        model.remove(id);
                        model.put(to, moved);
                    }
                } else {
                    assertThat(rows.delete(keyOnly(id), true)).isEqualTo(model.remove(id) != null);
                }
            }
            assertThat(rows.rowCount()).isEqualTo(model.size());
            List<String> expected = new ArrayList<>();
            for (String[] v : model.values()) {
                expected.add(expectedRow(v));
            }
            expected.sort(null);
            assertThat(content(rows, ALL)).as("round %d", round).isEqualTo(expected);
        }
    }

    /** Random changes to a table without a key (whole-row identity) from a small domain: many identical rows. */
    @Test
    void randomChangesWithIdenticalRowsMatchAModel() {
        Random random = new Random(7);
        PartitionRows rows = full();
        List<String[]> model = new ArrayList<>();
        for (int round = 0; round < 30; round++) {
            for (int op = 0; op < 400; op++) {
                String[] values = randomRow(random, random.nextInt(4));
                int kind = random.nextInt(10);
                if (kind < 4 || model.isEmpty()) {
                    rows.insert(tuple(values));
                    model.add(values);
                } else if (kind < 7) {
                    String[] old = model.get(random.nextInt(model.size()));
                    assertThat(rows.update(tuple(old), false, tuple(values))).isTrue();
                    removeOne(model, old);
                    model.add(values);
                } else {
                    boolean present = model.stream().anyMatch(m -> expectedRow(m).equals(expectedRow(values)));
                    assertThat(rows.delete(tuple(values), false)).isEqualTo(present);
                    if (present) {
                        removeOne(model, values);
                    }
                }
            }
            List<String> expected = new ArrayList<>(model.stream().map(PartitionRowsTest::expectedRow).toList());
            expected.sort(null);
            assertThat(content(rows, ALL)).as("round %d", round).isEqualTo(expected);
        }
        // And away again, one by one.
        while (!model.isEmpty()) {
            assertThat(rows.delete(tuple(model.removeLast()), false)).isTrue();
        }
        assertThat(rows.rowCount()).isZero();
    }

    private static void removeOne(List<String[]> model, String[] row) {
        String key = expectedRow(row);
        for (int i = 0; i < model.size(); i++) {
            if (expectedRow(model.get(i)).equals(key)) {
                model.remove(i);
                return;
            }
        }
        throw new AssertionError("not in the model: " + key);
    }

    private static String[] randomRow(Random random, long id) {
        String[] names = {null, "", "a", "b", "grüße", "x".repeat(300)};
        String[] scores = {null, "0", "-0", "1.5", "NaN", "-Infinity"};
        String[] flags = {null, "t", "f"};
        String[] data = {null, "\\x", "\\x00ff", "\\x41"};
        return new String[] {Long.toString(id), names[random.nextInt(names.length)], scores[random.nextInt(scores.length)],
            flags[random.nextInt(flags.length)], data[random.nextInt(data.length)], Integer.toString(random.nextInt(3))};
    }

    private static Tuple keyOnly(long id) {
        return tuple(Long.toString(id), null, null, null, null, null);
    }

    private static String expectedRow(String[] v) {
        return row(Long.parseLong(v[0]), v[1], v[2] == null ? null : Double.parseDouble(v[2]),
                v[3] == null ? null : v[3].equals("t"),
                v[4] == null ? null : java.util.HexFormat.of().parseHex(v[4].substring(2)), Long.parseLong(v[5]));
    }

    @Test
    void bytesGrowWithTheRowsAndShrinkAsTheyGo() {
        PartitionRows rows = keyed();
        long empty = rows.bytes();
        for (int i = 0; i < 10_000; i++) {
            rows.insert(tuple(Integer.toString(i), "n".repeat(100), "1", "t", null, "1"));
        }
        long full = rows.bytes();
        // 10,000 rows of a 100-byte text (116 bytes with its array header) and 4 numbers at least.
        assertThat(full - empty).isGreaterThan(10_000L * (116 + 8 + 8 + 4));
        assertThat(full - empty).isLessThan(10_000L * 400);
        for (int i = 0; i < 9_000; i++) {
            rows.delete(keyOnly(i), true);
        }
        long tenth = rows.bytes();
        assertThat(tenth).isLessThan(full / 4);
        for (int i = 9_000; i < 10_000; i++) {
            rows.delete(keyOnly(i), true);
        }
        assertThat(rows.bytes()).isEqualTo(empty);
    }

    @Test
    void aFinishedBatchIsKeptUntilTheRowsChange() {
        PartitionRows rows = keyed();
        rows.insert(tuple("1", "one", "1", "t", null, "1"));
        Selector selector = Selector.parse("SELECT id, name FROM t");
        long before = rows.bytes();
        ShardBatch first = rows.batch(5, selector, null, 100, 1 << 20);
        assertThat(rows.batch(5, selector, null, 100, 1 << 20).bytes()).isSameAs(first.bytes());
        assertThat(rows.bytes()).as("the kept batch is counted").isGreaterThanOrEqualTo(before + first.bytes().length);
        // Another bound is another batch.
        assertThat(rows.batch(5, selector, null, 99, 1 << 20).bytes()).isNotSameAs(first.bytes()).isEqualTo(first.bytes());

        long version = rows.version();
        rows.insert(tuple("2", "two", "1", "t", null, "1"));
        assertThat(rows.version()).isGreaterThan(version);
        ShardBatch second = rows.batch(5, selector, null, 100, 1 << 20);
        assertThat(second.bytes()).isNotSameAs(first.bytes());
        assertThat(second.rowCount()).isEqualTo(2);
        assertThat(RowBatch.decode(second.bytes()).partitionId()).isEqualTo(5);

        // A refusal is kept too, and thrown again each time.
        for (int i = 0; i < 3; i++) {
            assertThatThrownBy(() -> rows.batch(5, selector, null, 1, 1 << 20))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_MANY_ROWS);
                        assertThat(e.getMessage()).isEqualTo("batch exceeds 1 rows");
                    });
        }
        assertThat(rows.update(null, false, tuple("2", "TWO", "1", "t", null, "1"))).isTrue();
        assertThat(content(rows, "SELECT name FROM t")).containsExactly(row("TWO"), row("one"));
    }

    @Test
    void batchesHaveTheSelectorsColumnsAndRefuseAsTheSqlReadDoes() {
        PartitionRows rows = keyed();
        for (int i = 0; i < 10; i++) {
            rows.insert(tuple(Integer.toString(i), "name " + i, null, "t", null, "1"));
        }
        ShardBatch batch = rows.batch(3, Selector.parse("SELECT \"name\", THRESHER_SLOT, flag, id FROM t"), null, 10, 1 << 20);
        RowBatch decoded = RowBatch.decode(batch.bytes());
        assertThat(decoded.columns()).containsExactly(Column.nullable("name", ColumnType.TEXT),
                Column.of("thresher_slot", ColumnType.INT64), Column.nullable("flag", ColumnType.BOOL),
                Column.of("id", ColumnType.INT64));
        assertThat(batch.rowCount()).isEqualTo(10);

        Selector names = Selector.parse("SELECT name FROM t");
        assertThatThrownBy(() -> rows.batch(3, names, null, 9, 1 << 20)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_MANY_ROWS));
        int size = rows.batch(3, names, null, 10, 1 << 20).bytes().length;
        assertThat(rows.batch(3, names, null, 10, size).rowCount()).isEqualTo(10);
        assertThatThrownBy(() -> rows.batch(3, names, null, 10, size - 1)).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
            assertThat(e.getMessage()).startsWith("batch exceeds " + (size - 1) + " bytes");
        });
        assertThatThrownBy(() -> rows.batch(3, names, null, 10, 8)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE));
        assertThatThrownBy(() -> rows.batch(3, Selector.parse("SELECT nope FROM t"), null, 10, 1 << 20))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR);
                    assertThat(e.getMessage()).contains("\"nope\" does not exist");
                });
        // The filter must be the selector's.
        Selector filtered = Selector.parse("SELECT name FROM t WHERE id < 3");
        assertThatThrownBy(() -> rows.batch(3, filtered, null, 10, 1 << 20)).isInstanceOf(IllegalArgumentException.class);
        RowFilter other = RowFilter.compile("id < 4", COLUMNS).orElseThrow();
        assertThatThrownBy(() -> rows.batch(3, filtered, other, 10, 1 << 20)).isInstanceOf(IllegalArgumentException.class);
        RowFilter own = RowFilter.compile(filtered.where().orElseThrow(), COLUMNS).orElseThrow();
        assertThat(rows.batch(3, filtered, own, 10, 1 << 20).rowCount()).isEqualTo(3);
        assertThatThrownBy(() -> rows.batch(3, names, own, 10, 1 << 20)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aKeyOfATypeABatchCannotCarryIsComparedByItsText() {
        // (u uuid key, n numeric, v int4): rows found by the uuid's text; the uuid cannot be selected.
        List<ReplicaColumn> columns = List.of(new ReplicaColumn("u", 2950, true), new ReplicaColumn("n", PgType.NUMERIC, false),
                new ReplicaColumn("v", PgType.INT4, false), new ReplicaColumn("j", 3802, false));
        PartitionRows rows = new PartitionRows(columns, new int[] {0});
        rows.insert(tuple("00000000-0000-0000-0000-000000000001", "1", "1", "{\"a\": 1}"));
        rows.insert(tuple("00000000-0000-0000-0000-000000000002", "2", "2", null));
        assertThat(rows.delete(tuple("00000000-0000-0000-0000-000000000001", null, null, null), true)).isTrue();
        assertThat(content(rows, "SELECT n, v FROM t")).containsExactly(row(2.0, 2L));
        assertThatThrownBy(() -> rows.batch(1, Selector.parse("SELECT v, u FROM t"), null, 10, 1 << 20))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR);
                    assertThat(e.getMessage()).contains("'u'").contains("cannot carry");
                });

        // numeric keys that are one double apart only in their text: two rows, each found by its own text.
        PartitionRows numeric = new PartitionRows(List.of(new ReplicaColumn("k", PgType.NUMERIC, true),
                new ReplicaColumn("v", PgType.TEXT, false)), new int[] {0});
        numeric.insert(tuple("0.1", "short"));
        numeric.insert(tuple("0.1000000000000000000001", "long"));
        assertThat(numeric.update(tuple("0.1000000000000000000001", null), true, tuple("0.1000000000000000000001", "LONG"))).isTrue();
        assertThat(numeric.delete(tuple("0.1", null), true)).isTrue();
        assertThat(content(numeric, "SELECT k, v FROM t")).containsExactly(row(0.1, "LONG"));
    }

    @Test
    void valuesAreConvertedAsTheSqlReadConvertsThem() {
        List<ReplicaColumn> columns = List.of(new ReplicaColumn("i2", PgType.INT2, false), new ReplicaColumn("i8", PgType.INT8, false),
                new ReplicaColumn("f4", PgType.FLOAT4, false), new ReplicaColumn("num", PgType.NUMERIC, false),
                new ReplicaColumn("bp", PgType.BPCHAR_OID, false), new ReplicaColumn("by", PgType.BYTEA, false));
        PartitionRows rows = new PartitionRows(columns, new int[] {0, 1, 2, 3, 4, 5});
        rows.insert(tuple("-32768", "-9223372036854775808", "1.1", "12345678901234567890.123456789", "ab    ", "\\x00ff"));
        rows.insert(tuple("32767", "9223372036854775807", "-0", "NaN", "", "a\\\\b\\000\\377"));
        rows.insert(tuple("0", "0", "-Infinity", "-Infinity", null, "\\x"));
        assertThat(content(rows, "SELECT i2, i8, f4, num, bp, by FROM t")).containsExactlyInAnyOrder(
                row(-32768L, Long.MIN_VALUE, (double) 1.1f, 12345678901234567890.123456789, "ab    ", new byte[] {0, -1}),
                row(32767L, Long.MAX_VALUE, -0.0, Double.NaN, "", new byte[] {'a', '\\', 'b', 0, -1}),
                row(0L, 0L, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, null, new byte[0]));
        for (String bad : List.of("9223372036854775808", "1.5", "", "-", "0x10")) {
            assertThatThrownBy(() -> rows.insert(tuple("1", bad, "1", "1", "x", "\\x"))).as(bad)
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> rows.insert(tuple("1", "1", "1", "1", "x", "\\x0"))).isInstanceOf(IllegalArgumentException.class);
        assertThat(rows.rowCount()).as("a refused row leaves the rows as they were").isEqualTo(3);
        // NULL where the column is NOT NULL, a tuple of the wrong width.
        assertThatThrownBy(() -> keyed().insert(tuple(null, "x", null, null, null, "1"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> keyed().insert(tuple("1", "x"))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void textThatIsNotUtf8IsRefusedAsTheSqlReadRefusesIt() {
        PartitionRows rows = keyed();
        rows.insert(new Tuple(new byte[][] {"1".getBytes(), {(byte) 0xC3}, null, null, null, "1".getBytes()}));
        assertThatThrownBy(() -> rows.batch(1, Selector.parse("SELECT id, name FROM t"), null, 10, 1 << 20))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE));
        assertThat(rows.batch(1, Selector.parse("SELECT id FROM t"), null, 10, 1 << 20).rowCount()).isOne();
    }

    /** Many readers at once (as under a shared read lock): one batch, the same array for all. */
    @Test
    void concurrentReadersShareOneBatch() throws Exception {
        PartitionRows rows = keyed();
        for (int i = 0; i < 5000; i++) {
            rows.insert(tuple(Integer.toString(i), "name " + i, Integer.toString(i), "t", null, "1"));
        }
        Selector selector = Selector.parse("SELECT id, name, score FROM t WHERE score >= 100");
        RowFilter filter = RowFilter.compile(selector.where().orElseThrow(), rows.columns()).orElseThrow();
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<byte[]>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    byte[] bytes = null;
                    for (int i = 0; i < 50; i++) {
                        byte[] b = rows.batch(1, selector, filter, 10_000, 64 << 20).bytes();
                        assertThat(bytes == null || b == bytes).isTrue();
                        bytes = b;
                    }
                    return bytes;
                }));
            }
            start.countDown();
            byte[] first = results.getFirst().get(30, TimeUnit.SECONDS);
            for (Future<byte[]> f : results) {
                assertThat(f.get(30, TimeUnit.SECONDS)).isSameAs(first);
            }
            assertThat(RowBatch.decode(first).rowCount()).isEqualTo(4900);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void identityAndColumnsAreChecked() {
        assertThatThrownBy(() -> new PartitionRows(COLUMNS, new int[0])).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new PartitionRows(COLUMNS, new int[] {0, 0})).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new PartitionRows(COLUMNS, new int[] {6})).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> new PartitionRows(List.of(new ReplicaColumn("a", PgType.INT4, true),
                new ReplicaColumn("a", PgType.INT4, true)), new int[] {0})).isInstanceOf(IllegalArgumentException.class);
    }
}
