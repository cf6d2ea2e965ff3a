package dev.thresher.store.replica;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.store.replica.PgOutput.Begin;
import dev.thresher.store.replica.PgOutput.Commit;
import dev.thresher.store.replica.PgOutput.Delete;
import dev.thresher.store.replica.PgOutput.Insert;
import dev.thresher.store.replica.PgOutput.LogicalMessage;
import dev.thresher.store.replica.PgOutput.Message;
import dev.thresher.store.replica.PgOutput.Origin;
import dev.thresher.store.replica.PgOutput.Relation;
import dev.thresher.store.replica.PgOutput.RelationColumn;
import dev.thresher.store.replica.PgOutput.Truncate;
import dev.thresher.store.replica.PgOutput.TypeMessage;
import dev.thresher.store.replica.PgOutput.Update;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * pgoutput protocol v1 messages built byte by byte from PostgreSQL's "Logical Replication Message
 * Formats", decoded; and malformed ones refused with IllegalArgumentException, every golden vector cut
 * at every length among them.
 */
class PgOutputTest {
    private static final HexFormat HEX = HexFormat.of();

    /** Big-endian fields as the message formats name them. */
    private static final class Bytes {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        static Bytes tag(char tag) {
            return new Bytes().int8(tag);
        }

        Bytes int8(int v) {
            out.write(v);
            return this;
        }

        Bytes int16(int v) {
            return int8(v >>> 8).int8(v & 0xff);
        }

        Bytes int32(int v) {
            return int16(v >>> 16).int16(v & 0xffff);
        }

        Bytes int64(long v) {
            return int32((int) (v >>> 32)).int32((int) v);
        }

        Bytes string(String s) {
            out.writeBytes(s.getBytes(UTF_8));
            return int8(0);
        }

        Bytes raw(byte[] b) {
            out.writeBytes(b);
            return this;
        }

        /** TupleData: each entry null ('n'), Tuple.UNCHANGED ('u') or a string sent as text ('t'). */
        Bytes tuple(Object... columns) {
            int16(columns.length);
            for (Object c : columns) {
                if (c == null) {
                    int8('n');
                } else if (c == Tuple.UNCHANGED) {
                    int8('u');
                } else {
                    byte[] text = ((String) c).getBytes(UTF_8);
                    int8('t').int32(text.length).raw(text);
                }
            }
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    private static Message decode(byte[] bytes) {
        return PgOutput.decode(ByteBuffer.wrap(bytes));
    }

    /** A tuple as strings, Tuple.UNCHANGED kept as itself, for comparing. */
    private static List<Object> columns(Tuple t) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) {
            out.add(t.isUnchanged(i) ? Tuple.UNCHANGED : t.value(i) == null ? null : new String(t.value(i), UTF_8));
        }
        return out;
    }

    private static final byte[] BEGIN = Bytes.tag('B').int64(0x0000_0001_6B37_4D48L).int64(765_432_100_123_456L)
            .int32(0xFFFF_FFF0).bytes();
    private static final byte[] COMMIT = Bytes.tag('C').int8(0).int64(0x1_6B37_4D48L).int64(0x1_6B37_4D80L)
            .int64(765_432_100_123_456L).bytes();
    private static final byte[] RELATION = Bytes.tag('R').int32(16_385).string("public").string("accounts").int8('d')
            .int16(3)
            .int8(1).string("id").int32(20).int32(-1)
            .int8(0).string("naïve").int32(1043).int32(68)
            .int8(0).string("amount").int32(1700).int32(-1)
            .bytes();
    private static final byte[] RELATION_NO_COLUMNS =
            Bytes.tag('R').int32(-2).string("").string("t").int8('n').int16(0).bytes();
    private static final byte[] INSERT = Bytes.tag('I').int32(16_385).int8('N')
            .tuple("7", null, "", "tab\there", "ünïcødé €").bytes();
    private static final byte[] UPDATE_NEW_ONLY = Bytes.tag('U').int32(16_385).int8('N')
            .tuple("7", Tuple.UNCHANGED, "x").bytes();
    private static final byte[] UPDATE_KEY = Bytes.tag('U').int32(16_385).int8('K').tuple("7", null, null).int8('N')
            .tuple("8", Tuple.UNCHANGED, "y").bytes();
    private static final byte[] UPDATE_OLD = Bytes.tag('U').int32(16_385).int8('O').tuple("7", "a", null).int8('N')
            .tuple("7", "b", null).bytes();
    private static final byte[] DELETE_KEY = Bytes.tag('D').int32(16_385).int8('K').tuple("7", null, null).bytes();
    private static final byte[] DELETE_OLD = Bytes.tag('D').int32(16_385).int8('O').tuple("7", "a", "1.5").bytes();
    private static final byte[] TRUNCATE = Bytes.tag('T').int32(3).int8(3).int32(16_385).int32(16_390).int32(-5).bytes();
    private static final byte[] TRUNCATE_NONE = Bytes.tag('T').int32(0).int8(0).bytes();
    private static final byte[] MESSAGE = Bytes.tag('M').int8(1).int64(0x2_0000_0010L).string("thresher")
            .int32(4).raw(new byte[] {0, 1, (byte) 0xff, 'z'}).bytes();
    private static final byte[] MESSAGE_EMPTY = Bytes.tag('M').int8(0).int64(0x2_0000_0028L).string("thresher_fence")
            .int32(0).bytes();
    private static final byte[] ORIGIN = Bytes.tag('O').int64(0x0000_0000_0300_0000L).string("node_a").bytes();
    private static final byte[] TYPE = Bytes.tag('Y').int32(16_400).string("public").string("mood").bytes();

    private static final Map<String, byte[]> GOLDEN = Map.ofEntries(
            Map.entry("begin", BEGIN), Map.entry("commit", COMMIT), Map.entry("relation", RELATION),
            Map.entry("relation without columns", RELATION_NO_COLUMNS), Map.entry("insert", INSERT),
            Map.entry("update", UPDATE_NEW_ONLY), Map.entry("update K", UPDATE_KEY), Map.entry("update O", UPDATE_OLD),
            Map.entry("delete K", DELETE_KEY), Map.entry("delete O", DELETE_OLD), Map.entry("truncate", TRUNCATE),
            Map.entry("truncate none", TRUNCATE_NONE), Map.entry("message", MESSAGE),
            Map.entry("empty message", MESSAGE_EMPTY), Map.entry("origin", ORIGIN), Map.entry("type", TYPE));

    @Test
    void beginAndCommitAsWrittenOutInHex() {
        assertThat(BEGIN).isEqualTo(HEX.parseHex("42" + "000000016b374d48" + "0002b8280c6d7340" + "fffffff0"));
        assertThat(decode(BEGIN)).isEqualTo(new Begin(0x1_6B37_4D48L, 765_432_100_123_456L, 0xFFFF_FFF0));
        assertThat(COMMIT).isEqualTo(HEX.parseHex(
                "43" + "00" + "000000016b374d48" + "000000016b374d80" + "0002b8280c6d7340"));
        assertThat(decode(COMMIT)).isEqualTo(new Commit(0, 0x1_6B37_4D48L, 0x1_6B37_4D80L, 765_432_100_123_456L));
    }

    @Test
    void relationCarriesItsColumnsKeysTypesAndModifiers() {
        assertThat(decode(RELATION)).isEqualTo(new Relation(16_385, "public", "accounts", 'd', List.of(
                new RelationColumn(true, "id", 20, -1),
                new RelationColumn(false, "naïve", 1043, 68),
                new RelationColumn(false, "amount", 1700, -1))));
        assertThat(decode(RELATION_NO_COLUMNS)).isEqualTo(new Relation(-2, "", "t", 'n', List.of()));
    }

    @Test
    void insertColumnsAreTextNullOrEmpty() {
        Insert insert = (Insert) decode(INSERT);
        assertThat(insert.relation()).isEqualTo(16_385);
        assertThat(columns(insert.row())).containsExactly("7", null, "", "tab\there", "ünïcødé €");
        assertThat(insert.row().isNull(1)).isTrue();
        assertThat(insert.row().isNull(2)).isFalse();
        assertThat(insert.row().value(2)).isEmpty();
        assertThat(insert.row().isUnchanged(2)).isFalse();
    }

    @Test
    void updatesWithoutOldRowWithOldKeyAndWithWholeOldRow() {
        Update plain = (Update) decode(UPDATE_NEW_ONLY);
        assertThat(plain.relation()).isEqualTo(16_385);
        assertThat(plain.old()).isNull();
        assertThat(plain.oldIsKey()).isFalse();
        assertThat(columns(plain.row())).containsExactly("7", Tuple.UNCHANGED, "x");
        assertThat(plain.row().isUnchanged(1)).isTrue();
        assertThat(plain.row().value(1)).isSameAs(Tuple.UNCHANGED);

        Update key = (Update) decode(UPDATE_KEY);
        assertThat(key.oldIsKey()).isTrue();
        assertThat(columns(key.old())).containsExactly("7", null, null);
        assertThat(columns(key.row())).containsExactly("8", Tuple.UNCHANGED, "y");

        Update old = (Update) decode(UPDATE_OLD);
        assertThat(old.oldIsKey()).isFalse();
        assertThat(columns(old.old())).containsExactly("7", "a", null);
        assertThat(columns(old.row())).containsExactly("7", "b", null);
    }

    @Test
    void deletesWithOldKeyAndWithWholeOldRow() {
        Delete key = (Delete) decode(DELETE_KEY);
        assertThat(key.relation()).isEqualTo(16_385);
        assertThat(key.oldIsKey()).isTrue();
        assertThat(columns(key.old())).containsExactly("7", null, null);
        Delete old = (Delete) decode(DELETE_OLD);
        assertThat(old.oldIsKey()).isFalse();
        assertThat(columns(old.old())).containsExactly("7", "a", "1.5");
    }

    @Test
    void truncateOfSeveralRelationsWithOptions() {
        Truncate t = (Truncate) decode(TRUNCATE);
        assertThat(t.options()).isEqualTo(Truncate.CASCADE | Truncate.RESTART_IDENTITY);
        assertThat(t.relations()).containsExactly(16_385, 16_390, -5);
        assertThat(t).isEqualTo(new Truncate(3, new int[] {16_385, 16_390, -5}));
        assertThat(decode(TRUNCATE_NONE)).isEqualTo(new Truncate(0, new int[0]));
    }

    @Test
    void logicalMessagesOriginsAndTypes() {
        assertThat(decode(MESSAGE)).isEqualTo(
                new LogicalMessage(true, 0x2_0000_0010L, "thresher", new byte[] {0, 1, (byte) 0xff, 'z'}));
        assertThat(decode(MESSAGE_EMPTY)).isEqualTo(
                new LogicalMessage(false, 0x2_0000_0028L, ReplicationSource.FENCE_PREFIX, new byte[0]));
        assertThat(decode(ORIGIN)).isEqualTo(new Origin(0x300_0000L, "node_a"));
        assertThat(decode(TYPE)).isEqualTo(new TypeMessage(16_400, "public", "mood"));
    }

    @Test
    void decodesFromTheBufferPositionToItsLimitAndLeavesTheBufferAsItWas() {
        byte[] framed = new byte[COMMIT.length + 7];
        System.arraycopy(COMMIT, 0, framed, 3, COMMIT.length);
        ByteBuffer buffer = ByteBuffer.wrap(framed, 3, COMMIT.length);
        assertThat(PgOutput.decode(buffer)).isEqualTo(decode(COMMIT));
        assertThat(buffer.position()).isEqualTo(3);
        assertThat(buffer.limit()).isEqualTo(3 + COMMIT.length);
    }

    @Test
    void everyGoldenVectorCutShortAtEveryLengthIsRefused() {
        GOLDEN.forEach((name, full) -> {
            assertThat(decode(full)).as(name).isNotNull();
            for (int length = 0; length < full.length; length++) {
                byte[] cut = Arrays.copyOf(full, length);
                assertThatThrownBy(() -> decode(cut))
                        .as("%s cut to %d of %d bytes", name, cut.length, full.length)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("pgoutput: ");
            }
        });
    }

    @Test
    void everyGoldenVectorWithATrailingByteIsRefused() {
        GOLDEN.forEach((name, full) -> {
            byte[] longer = Arrays.copyOf(full, full.length + 1);
            assertThatThrownBy(() -> decode(longer)).as(name)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("1 bytes left over");
        });
    }

    @Test
    void malformedMessagesAreRefusedWithAClearMessage() {
        assertRefused(new byte[0], "empty message");
        assertRefused(Bytes.tag('Z').int64(1).bytes(), "unknown message tag 'Z'");
        assertRefused(Bytes.tag('S').int32(1).int8(1).bytes(), "unknown message tag 'S'");
        assertRefused(new byte[] {(byte) 0x80}, "unknown message tag 0x80");
        // A binary column: the stream never asks for the binary format.
        assertRefused(Bytes.tag('I').int32(1).int8('N').int16(1).int8('b').int32(1).int8(7).bytes(),
                "binary column 0");
        assertRefused(Bytes.tag('I').int32(1).int8('N').int16(1).int8('q').bytes(), "tuple column kind 'q'");
        assertRefused(Bytes.tag('I').int32(1).int8('K').tuple("1").bytes(), "new tuple marker 'K'");
        assertRefused(Bytes.tag('I').int32(1).int8('N').int16(-1).bytes(), "tuple column count -1 is negative");
        assertRefused(Bytes.tag('I').int32(1).int8('N').int16(1).int8('t').int32(-1).bytes(),
                "column length -1 is negative");
        assertRefused(Bytes.tag('I').int32(1).int8('N').int16(1).int8('t').int32(Integer.MAX_VALUE).int8('x').bytes(),
                "column value needs 2147483647 bytes, 1 left");
        assertRefused(Bytes.tag('I').int32(1).int8('N').int16(30_000).int8('n').bytes(), "30000 tuple columns");
        assertRefused(Bytes.tag('U').int32(1).int8('X').tuple("1").bytes(), "tuple marker 'X'");
        assertRefused(Bytes.tag('U').int32(1).int8('K').tuple("1").int8('K').tuple("1").bytes(),
                "new tuple marker 'K'");
        assertRefused(Bytes.tag('D').int32(1).int8('N').tuple("1").bytes(), "old tuple marker 'N'");
        assertRefused(Bytes.tag('T').int32(-1).int8(0).bytes(), "relation count -1 is negative");
        assertRefused(Bytes.tag('T').int32(1_000_000).int8(0).int32(1).bytes(), "1000000 relations but 4 bytes left");
        assertRefused(Bytes.tag('R').int32(1).string("s").string("t").int8('d').int16(1).int8(2).string("c")
                .int32(23).int32(-1).bytes(), "column flags 2");
        assertRefused(Bytes.tag('R').int32(1).string("s").string("t").int8('d').int16(-3).bytes(),
                "column count -3 is negative");
        assertRefused(Bytes.tag('R').int32(1).int8(0xc3).int8(0x28).int8(0).string("t").int8('d').int16(0).bytes(),
                "namespace is not valid UTF-8");
        assertRefused(Bytes.tag('M').int8(2).int64(1).string("p").int32(0).bytes(), "message flags 2");
        assertRefused(Bytes.tag('M').int8(0).int64(1).string("p").int32(-7).bytes(), "content length -7 is negative");
        assertRefused(Bytes.tag('O').int64(1).raw("no terminator".getBytes(UTF_8)).bytes(),
                "origin name has no terminating NUL");
    }

    private static void assertRefused(byte[] bytes, String reason) {
        assertThatThrownBy(() -> decode(bytes)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("pgoutput: ")
                .hasMessageContaining(reason);
    }
}
