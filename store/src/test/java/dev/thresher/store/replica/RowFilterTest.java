package dev.thresher.store.replica;

import static dev.thresher.store.replica.Rows.tuple;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.RowBatch;
import dev.thresher.store.shard.PgType;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RowFilterTest {
    private static final List<ReplicaColumn> COLUMNS = List.of(
            new ReplicaColumn("id", PgType.INT4, true),
            new ReplicaColumn("i", PgType.INT4, false),
            new ReplicaColumn("l", PgType.INT8, false),
            new ReplicaColumn("f4", PgType.FLOAT4, false),
            new ReplicaColumn("f8", PgType.FLOAT8, false),
            new ReplicaColumn("n", PgType.NUMERIC, false),
            new ReplicaColumn("t", PgType.TEXT, false),
            new ReplicaColumn("bp", PgType.BPCHAR_OID, false),
            new ReplicaColumn("b", PgType.BOOL, false),
            new ReplicaColumn("by", PgType.BYTEA, false),
            new ReplicaColumn("u", 2950, false),
            new ReplicaColumn("Mixed Case", PgType.INT4, false));
    private static PartitionRows rows;

    @BeforeAll
    static void load() {
        rows = new PartitionRows(COLUMNS, new int[] {0});
        //                     id   i     l                        f4          f8           n     t     bp     b    by     u     Mixed
        rows.insert(tuple("1", "1", "1", "1.1", "0", "1", "a", "a  ", "t", "\\x", "00000000-0000-0000-0000-000000000001", "1"));
        rows.insert(tuple("2", "2", "9223372036854775807", "NaN", "NaN", "NaN", "b", "b", "f", null, null, "2"));
        rows.insert(tuple("3", null, null, null, "-0", null, null, null, null, null, null, null));
        rows.insert(tuple("4", "-5", "-9223372036854775808", "-Infinity", "Infinity", "-1", "a ", "", "t", "\\x00", null, "4"));
        rows.insert(tuple("5", "3", "0", "16777216", "-Infinity", "0.5", "", "c", "f", null, null, null));
    }

    private static List<Integer> ids(String where) {
        Selector selector = Selector.parse("SELECT id FROM t WHERE " + where);
        RowFilter filter = RowFilter.compile(selector.where().orElseThrow(), COLUMNS)
                .orElseThrow(() -> new AssertionError("'" + where + "' did not compile"));
        RowBatch batch = RowBatch.decode(rows.batch(1, selector, filter, 100, 1 << 20).bytes());
        List<Integer> ids = new ArrayList<>();
        for (int r = 0; r < batch.rowCount(); r++) {
            ids.add((int) batch.getLong(0, r));
        }
        ids.sort(null);
        return ids;
    }

    @Test
    void threeValuedLogic() {
        assertThat(ids("i = 1")).containsExactly(1);
        assertThat(ids("NOT i = 1")).as("NULL is not 'not 1'").containsExactly(2, 4, 5);
        assertThat(ids("i <> 1")).containsExactly(2, 4, 5);
        assertThat(ids("i = 1 OR i IS NULL")).containsExactly(1, 3);
        assertThat(ids("NOT (i = 1 OR NULL)")).isEmpty();
        assertThat(ids("(i = 1 AND NULL) IS NULL")).containsExactly(1, 3);
        assertThat(ids("(i = 1 OR NULL) IS NOT FALSE")).containsExactly(1, 2, 3, 4, 5);
        assertThat(ids("(i = 1 OR NULL) IS FALSE")).isEmpty();
        assertThat(ids("b")).containsExactly(1, 4);
        assertThat(ids("NOT b")).containsExactly(2, 5);
        assertThat(ids("b IS NOT TRUE")).containsExactly(2, 3, 5);
        assertThat(ids("NOT b IS TRUE")).as("IS binds tighter than NOT").containsExactly(2, 3, 5);
        assertThat(ids("b IS NULL OR b IS FALSE")).containsExactly(2, 3, 5);
        assertThat(ids("b = TRUE AND i > 0")).containsExactly(1);
        assertThat(ids("TRUE = b OR b < TRUE")).containsExactly(1, 2, 4, 5);
        assertThat(ids("i IN (1, NULL)")).containsExactly(1);
        assertThat(ids("i NOT IN (1, NULL)")).isEmpty();
        assertThat(ids("i NOT IN (1, 2)")).containsExactly(4, 5);
        assertThat(ids("i NOT BETWEEN 0 AND 2")).containsExactly(4, 5);
        assertThat(ids("i BETWEEN NULL AND 2")).isEmpty();
        assertThat(ids("NOT i BETWEEN NULL AND 2")).as("i < NULL OR i > 2").containsExactly(5);
        assertThat(ids("i = NULL")).isEmpty();
        assertThat(ids("NOT i = NULL")).isEmpty();
        assertThat(ids("true")).hasSize(5);
        assertThat(ids("false OR NULL")).isEmpty();
        assertThat(ids("n IS NULL AND u IS NULL")).containsExactly(3);
        assertThat(ids("u IS NOT NULL")).containsExactly(1);
        assertThat(ids("\"Mixed Case\" >= 2")).containsExactly(2, 4);
        assertThat(ids("((i)) = ((1))")).containsExactly(1);
        assertThat(ids("i = 1 OR i = 2 AND b")).as("AND binds tighter than OR").containsExactly(1);
    }

    @Test
    void floatsCompareAsPostgresqlFloat8() {
        assertThat(ids("f8 = 0")).as("-0 equals 0").containsExactly(1, 3);
        assertThat(ids("f8 = -0.0")).containsExactly(1, 3);
        assertThat(ids("f8 < 0")).containsExactly(5);
        assertThat(ids("f8 > 1e308")).as("NaN is above everything, Infinity too").containsExactly(2, 4);
        assertThat(ids("f8 >= 1.7976931348623157e308")).containsExactly(2, 4);
        assertThat(ids("f8 <> 0")).containsExactly(2, 4, 5);
        assertThat(ids("f4 > 1e38")).containsExactly(2);
        assertThat(ids("f4 < -1e38")).containsExactly(4);
        // float4 meets a single literal as float8 (1.1f is not 1.1), a list of two or more as float4.
        assertThat(ids("f4 = 1.1")).isEmpty();
        assertThat(ids("f4 IN (1.1)")).isEmpty();
        assertThat(ids("f4 IN (1.1, 7)")).containsExactly(1);
        assertThat(ids("f4 < 1.1")).containsExactly(4);
        assertThat(ids("f4 <= 1.100000023841858")).containsExactly(1, 4);
        assertThat(ids("f4 = 16777217")).as("as float8: 16777216 is not 16777217").isEmpty();
        assertThat(ids("f4 IN (16777217, 0)")).as("as float4: 16777217 rounds to 16777216").containsExactly(5);
        assertThat(ids("f8 BETWEEN -1 AND 1")).containsExactly(1, 3);
    }

    @Test
    void integersMeetDecimalsExactly() {
        assertThat(ids("i = 2.0")).containsExactly(2);
        assertThat(ids("i = 2.5")).isEmpty();
        assertThat(ids("i < 2.5")).containsExactly(1, 2, 4);
        assertThat(ids("i > 2.5")).containsExactly(5);
        assertThat(ids("i >= 3.0")).containsExactly(5);
        assertThat(ids("i > -5.5")).containsExactly(1, 2, 4, 5);
        assertThat(ids("-5 = i")).containsExactly(4);
        assertThat(ids("i = -(5)")).containsExactly(4);
        assertThat(ids("i BETWEEN -5 AND 1")).containsExactly(1, 4);
        assertThat(ids("l = 9223372036854775807")).containsExactly(2);
        assertThat(ids("l > 9223372036854775807")).isEmpty();
        assertThat(ids("l < 9223372036854775808")).containsExactly(1, 2, 4, 5);
        assertThat(ids("l < 9223372036854775807.5")).containsExactly(1, 2, 4, 5);
        assertThat(ids("l > -9223372036854775808.5")).containsExactly(1, 2, 4, 5);
        assertThat(ids("l = -9223372036854775808")).containsExactly(4);
        assertThat(ids("l < -9223372036854775808")).isEmpty();
        assertThat(ids("l < -99999999999999999999999")).isEmpty();
        assertThat(ids("l IN (1, 0.5, 1e0, 0)")).containsExactly(1, 5);
        assertThat(ids("i > 1e-400")).containsExactly(1, 2, 5);
    }

    @Test
    void textIsComparedForEqualityOnly() {
        assertThat(ids("t = 'a'")).containsExactly(1);
        assertThat(ids("t = 'a '")).as("text keeps trailing spaces").containsExactly(4);
        assertThat(ids("t <> 'a'")).containsExactly(2, 4, 5);
        assertThat(ids("t IN ('a', 'b', '')")).containsExactly(1, 2, 5);
        assertThat(ids("t NOT IN ('a', 'b')")).containsExactly(4, 5);
        assertThat(ids("bp = 'a'")).as("bpchar ignores trailing spaces").containsExactly(1);
        assertThat(ids("bp = 'a     '")).containsExactly(1);
        assertThat(ids("bp = ''")).containsExactly(4);
        assertThat(ids("bp IN ('b  ', 'c')")).containsExactly(2, 5);
        assertThat(ids("'b' <> t")).containsExactly(1, 4, 5);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "t < 'b'", "t BETWEEN 'a' AND 'b'", "n = 1", "n > 0.5", "by = 'x'", "u = 'x'", "i + 1 = 2", "i = l", "-i = 5",
        "t LIKE 'a%'", "i = CAST(1 AS int)", "i = 1::int", "abs(i) = 1", "i = '1'", "t = 1", "b = 1", "b = 't'",
        "i IN (1, 2) AND b", "i IN (1) OR b", "NOT NOT b IS NULL", "i = ?", "i = :x", "t.i = 1", "user = 'x'",
        "current_user = 'x'", "f8 = 1e400", "f8 = 1e-400", "f4 IN (1e39, 1)", "f4 IN (1e-50, 1)", "f8 = 'NaN'",
        "i IS DISTINCT FROM 1", "t = E'a'", "t = N'a'", "nope = 1", "i", "i AND b", "1 = 1", "i = 1 garbage",
        "(i, l) = (1, 1)", "i IN (SELECT 1)", "i = ALL(1)", "i ^= 1", "NULL IS NULL", "i ISNULL", "i NOTNULL",
        "i = 0x10", "b IS TRUE = b", "i IN ()", "i = 1e99999", "\"id\" = 'x'", "i = 1 AND", "", "t = 'a\\b'",
        "i = 1 XOR b", "b && b", "\"t\".i = 1",
    })
    void whatCannotBeExactIsDeclined(String where) {
        assertThat(RowFilter.compile(where, COLUMNS)).as(where).isEmpty();
    }

    @Test
    void aFilterKnowsItsTextAndColumns() {
        RowFilter f = RowFilter.compile("i = 1", COLUMNS).orElseThrow();
        assertThat(f.where()).isEqualTo("i = 1");
        assertThat(f.columns()).isEqualTo(COLUMNS);
        assertThat(f.toString()).contains("i = 1");
        assertThat(RowFilter.compile("I = 1", COLUMNS)).as("unquoted names fold to lower case").isPresent();
        assertThat(RowFilter.compile("\"I\" = 1", COLUMNS)).as("quoted names do not").isEmpty();
    }
}
