package dev.thresher.store.replica;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Decodes the messages of PostgreSQL's {@code pgoutput} plugin, logical replication protocol version 1
 * (PostgreSQL's "Logical Replication Message Formats"), as they arrive in the payload of an XLogData
 * message. Text tuple format only: the stream is started without the {@code binary} option, so a binary
 * column is a protocol error. Strings are UTF-8 (the client encoding pgjdbc asks for).
 *
 * <p>Every malformed input (unknown tag, truncated message, bytes left over, negative count, invalid
 * UTF-8 in a name, binary column) is refused with an {@link IllegalArgumentException} saying what was
 * wrong; no other exception escapes {@link #decode}.
 */
public final class PgOutput {
    private PgOutput() {}

    /** One decoded {@code pgoutput} message. */
    public sealed interface Message
            permits Begin, Commit, Relation, Insert, Update, Delete, Truncate, LogicalMessage, Origin, TypeMessage {}

    /**
     * 'B': a transaction's changes follow, up to its {@link Commit}.
     *
     * @param finalLsn the LSN of the transaction's commit record
     * @param commitMicros commit time, microseconds since 2000-01-01 UTC
     * @param xid the transaction id (unsigned)
     */
    public record Begin(long finalLsn, long commitMicros, int xid) implements Message {}

    /**
     * 'C': the end of the transaction begun by the last {@link Begin}.
     *
     * @param flags currently always 0
     * @param commitLsn the LSN of the commit record
     * @param endLsn the end of the commit record: every transaction committed at or before it has been sent
     * @param commitMicros commit time, microseconds since 2000-01-01 UTC
     */
    public record Commit(int flags, long commitLsn, long endLsn, long commitMicros) implements Message {}

    /**
     * 'R': the shape of a relation, sent before the first change to it on this stream and again after
     * its definition changed. With {@code publish_via_partition_root} a partition's changes are sent as
     * its root's; the server sends the root's Relation and then the partition's own.
     *
     * @param oid the relation's OID, which later changes name (unsigned)
     * @param namespace its schema; empty for {@code pg_catalog}
     * @param name its name
     * @param replicaIdentity {@code relreplident}: 'd' default (primary key), 'n' nothing, 'f' full, 'i' index
     * @param columns its published columns in order (generated columns are not sent)
     */
    public record Relation(int oid, String namespace, String name, char replicaIdentity, List<RelationColumn> columns)
            implements Message {
        public Relation {
            Objects.requireNonNull(namespace, "namespace");
            Objects.requireNonNull(name, "name");
            columns = List.copyOf(columns);
        }
    }

    /**
     * One column of a {@link Relation}.
     *
     * @param key whether the column is part of the replica identity (the key an update or delete sends)
     * @param name the column's name
     * @param typeOid its type's OID (unsigned)
     * @param typeModifier its {@code atttypmod}, -1 when none
     */
    public record RelationColumn(boolean key, String name, int typeOid, int typeModifier) {
        public RelationColumn {
            Objects.requireNonNull(name, "name");
        }
    }

    /** 'I': a new row of {@code relation}. */
    public record Insert(int relation, Tuple row) implements Message {
        public Insert {
            Objects.requireNonNull(row, "row");
        }
    }

    /**
     * 'U': a row of {@code relation} changed.
     *
     * @param old the old row when sent: its key columns ({@code oldIsKey}, 'K': the key changed; other
     *     columns are null) or every column ('O': replica identity full); null when not sent
     * @param oldIsKey true for a 'K' old row, false for 'O' (or when there is none)
     * @param row the new row; a TOASTed value the update left alone is {@link Tuple#UNCHANGED}
     */
    public record Update(int relation, Tuple old, boolean oldIsKey, Tuple row) implements Message {
        public Update {
            Objects.requireNonNull(row, "row");
            if (old == null && oldIsKey) {
                throw new IllegalArgumentException("an update without an old row has no old key");
            }
        }
    }

    /**
     * 'D': a row of {@code relation} removed.
     *
     * @param old its key columns ('K', other columns null) or every column ('O', replica identity full)
     */
    public record Delete(int relation, Tuple old, boolean oldIsKey) implements Message {
        public Delete {
            Objects.requireNonNull(old, "old");
        }
    }

    /**
     * 'T': the relations were truncated, in one statement.
     *
     * @param options a bit set: {@link #CASCADE}, {@link #RESTART_IDENTITY}
     * @param relations the truncated relations' OIDs
     */
    public record Truncate(int options, int[] relations) implements Message {
        public static final int CASCADE = 1;
        public static final int RESTART_IDENTITY = 2;

        public Truncate {
            relations = relations.clone();
        }

        @Override
        public int[] relations() {
            return relations.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Truncate t && t.options == options && Arrays.equals(t.relations, relations);
        }

        @Override
        public int hashCode() {
            return 31 * options + Arrays.hashCode(relations);
        }

        @Override
        public String toString() {
            return "Truncate[options=" + options + ", relations=" + Arrays.toString(relations) + "]";
        }
    }

    /**
     * 'M': a message written by {@code pg_logical_emit_message} (sent because the stream asks for
     * {@code messages}). A non-transactional one arrives outside any Begin/Commit, as soon as decoded; a
     * transactional one inside its transaction.
     *
     * @param lsn the end of the message's WAL record
     * @param content its bytes, as given
     */
    public record LogicalMessage(boolean transactional, long lsn, String prefix, byte[] content) implements Message {
        public LogicalMessage {
            Objects.requireNonNull(prefix, "prefix");
            content = content.clone();
        }

        @Override
        public byte[] content() {
            return content.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof LogicalMessage m && m.transactional == transactional && m.lsn == lsn
                    && m.prefix.equals(prefix) && Arrays.equals(m.content, content);
        }

        @Override
        public int hashCode() {
            return Objects.hash(transactional, lsn, prefix, Arrays.hashCode(content));
        }

        @Override
        public String toString() {
            return "LogicalMessage[transactional=" + transactional + ", lsn=" + Long.toHexString(lsn) + ", prefix="
                    + prefix + ", content=" + content.length + " bytes]";
        }
    }

    /** 'O': the transaction came from another node through replication origin {@code name}. */
    public record Origin(long lsn, String name) implements Message {
        public Origin {
            Objects.requireNonNull(name, "name");
        }
    }

    /** 'Y': a non-built-in type a later {@link Relation} refers to. */
    public record TypeMessage(int oid, String namespace, String name) implements Message {
        public TypeMessage {
            Objects.requireNonNull(namespace, "namespace");
            Objects.requireNonNull(name, "name");
        }
    }

    /**
     * Decodes one message: the payload from its position to its limit, all of which must be the message.
     * The buffer itself is left as it was.
     *
     * @throws IllegalArgumentException when the payload is not exactly one well-formed protocol v1 message
     */
    public static Message decode(ByteBuffer payload) {
        Reader in = new Reader(payload);
        if (!in.buf.hasRemaining()) {
            throw new IllegalArgumentException("pgoutput: empty message");
        }
        char tag = (char) in.u8("tag");
        Message message = switch (tag) {
            case 'B' -> new Begin(in.i64("final LSN"), in.i64("commit time"), in.i32("xid"));
            case 'C' -> new Commit(in.u8("flags"), in.i64("commit LSN"), in.i64("end LSN"), in.i64("commit time"));
            case 'R' -> relation(in);
            case 'I' -> {
                int relation = in.i32("relation");
                in.expect('N', "new tuple marker");
                yield new Insert(relation, in.tuple());
            }
            case 'U' -> update(in);
            case 'D' -> {
                int relation = in.i32("relation");
                int kind = in.u8("old tuple marker");
                if (kind != 'K' && kind != 'O') {
                    throw in.malformed("old tuple marker " + describe(kind) + ", expected 'K' or 'O'");
                }
                yield new Delete(relation, in.tuple(), kind == 'K');
            }
            case 'T' -> truncate(in);
            case 'M' -> {
                int flags = in.u8("flags");
                if (flags > 1) {
                    throw in.malformed("message flags " + flags + ", expected 0 or 1");
                }
                long lsn = in.i64("message LSN");
                String prefix = in.string("prefix");
                int length = in.count32("content length");
                yield new LogicalMessage(flags == 1, lsn, prefix, in.bytes(length, "content"));
            }
            case 'O' -> new Origin(in.i64("origin LSN"), in.string("origin name"));
            case 'Y' -> new TypeMessage(in.i32("type OID"), in.string("type namespace"), in.string("type name"));
            default -> throw new IllegalArgumentException(
                    "pgoutput: unknown message tag " + describe(tag) + " (protocol version 1)");
        };
        if (in.buf.hasRemaining()) {
            throw new IllegalArgumentException("pgoutput: " + in.buf.remaining() + " bytes left over after a '"
                    + tag + "' message of " + in.buf.position() + " bytes");
        }
        return message;
    }

    private static Relation relation(Reader in) {
        int oid = in.i32("relation");
        String namespace = in.string("namespace");
        String name = in.string("relation name");
        char identity = (char) in.u8("replica identity");
        int count = in.count16("column count");
        RelationColumn[] columns = new RelationColumn[count];
        for (int i = 0; i < count; i++) {
            int flags = in.u8("column flags");
            if (flags > 1) {
                throw in.malformed("column flags " + flags + ", expected 0 or 1");
            }
            columns[i] = new RelationColumn(flags == 1, in.string("column name"), in.i32("column type"),
                    in.i32("column type modifier"));
        }
        return new Relation(oid, namespace, name, identity, List.of(columns));
    }

    private static Update update(Reader in) {
        int relation = in.i32("relation");
        int kind = in.u8("tuple marker");
        Tuple old = null;
        if (kind == 'K' || kind == 'O') {
            old = in.tuple();
            in.expect('N', "new tuple marker");
        } else if (kind != 'N') {
            throw in.malformed("tuple marker " + describe(kind) + ", expected 'K', 'O' or 'N'");
        }
        return new Update(relation, old, kind == 'K', in.tuple());
    }

    private static Truncate truncate(Reader in) {
        int count = in.count32("relation count");
        int options = in.u8("options");
        if (count > in.buf.remaining() / 4) {
            throw in.malformed(count + " relations but " + in.buf.remaining() + " bytes left");
        }
        int[] relations = new int[count];
        for (int i = 0; i < count; i++) {
            relations[i] = in.i32("relation");
        }
        return new Truncate(options, relations);
    }

    private static String describe(int b) {
        return b >= 0x20 && b < 0x7f ? "'" + (char) b + "'" : String.format("0x%02x", b);
    }

    /** Bounds-checked big-endian reads that fail with a message naming the field. */
    private static final class Reader {
        final ByteBuffer buf;

        Reader(ByteBuffer payload) {
            this.buf = payload.slice().order(ByteOrder.BIG_ENDIAN);
        }

        IllegalArgumentException malformed(String what) {
            return new IllegalArgumentException("pgoutput: malformed message at offset " + buf.position() + ": " + what);
        }

        private void need(int bytes, String field) {
            if (buf.remaining() < bytes) {
                throw new IllegalArgumentException("pgoutput: message truncated at offset " + buf.position()
                        + ": " + field + " needs " + bytes + " bytes, " + buf.remaining() + " left");
            }
        }

        int u8(String field) {
            need(1, field);
            return buf.get() & 0xff;
        }

        int i32(String field) {
            need(4, field);
            return buf.getInt();
        }

        long i64(String field) {
            need(8, field);
            return buf.getLong();
        }

        int count16(String field) {
            need(2, field);
            int n = buf.getShort();
            if (n < 0) {
                throw malformed(field + " " + n + " is negative");
            }
            return n;
        }

        int count32(String field) {
            int n = i32(field);
            if (n < 0) {
                throw malformed(field + " " + n + " is negative");
            }
            return n;
        }

        void expect(char marker, String field) {
            int b = u8(field);
            if (b != marker) {
                throw malformed(field + " " + describe(b) + ", expected '" + marker + "'");
            }
        }

        byte[] bytes(int length, String field) {
            need(length, field);
            byte[] out = new byte[length];
            buf.get(out);
            return out;
        }

        /** A NUL-terminated UTF-8 string. */
        String string(String field) {
            int start = buf.position();
            int end = start;
            while (end < buf.limit() && buf.get(end) != 0) {
                end++;
            }
            if (end == buf.limit()) {
                throw new IllegalArgumentException("pgoutput: message truncated at offset " + start + ": " + field
                        + " has no terminating NUL");
            }
            ByteBuffer text = buf.slice(start, end - start);
            buf.position(end + 1);
            try {
                CharBuffer chars = StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(text);
                return chars.toString();
            } catch (CharacterCodingException e) {
                buf.position(start);
                throw malformed(field + " is not valid UTF-8");
            }
        }

        /** TupleData: a column count, then per column 'n', 'u' or 't' with a length and the text bytes. */
        Tuple tuple() {
            int count = count16("tuple column count");
            if (count > buf.remaining()) {
                throw new IllegalArgumentException("pgoutput: message truncated at offset " + buf.position() + ": "
                        + count + " tuple columns but " + buf.remaining() + " bytes left");
            }
            byte[][] values = new byte[count][];
            for (int i = 0; i < count; i++) {
                int kind = u8("tuple column kind");
                values[i] = switch (kind) {
                    case 'n' -> null;
                    case 'u' -> Tuple.UNCHANGED;
                    case 't' -> bytes(count32("column length"), "column value");
                    case 'b' -> {
                        buf.position(buf.position() - 1);
                        throw malformed("binary column " + i + " in a text-format stream");
                    }
                    default -> {
                        buf.position(buf.position() - 1);
                        throw malformed("tuple column kind " + describe(kind) + ", expected 'n', 'u' or 't'");
                    }
                };
            }
            return new Tuple(values);
        }
    }
}
