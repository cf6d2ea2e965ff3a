package dev.thresher.pgwire;

import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalType;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The journal views on the wire: each column's type OID, its values in text and binary format, and the bound
 * parameters of a prepared query read back as literals. Types are PostgreSQL's own (text, int4, int8, timestamptz,
 * uuid, json), so psql prints the rows as it prints a table's and pgjdbc's {@code getObject} answers
 * {@link String}, {@link Integer}, {@link Long}, {@link java.sql.Timestamp} and {@link UUID}.
 */
final class JournalResults {
    /** Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01 00:00:00 UTC. */
    private static final long POSTGRES_EPOCH_MICROS = 946_684_800_000_000L;

    private JournalResults() {
    }

    /**
     * A journal query bound to a portal (or run by a simple query): the query, its result formats, and once it ran
     * its rows and how many were sent (Execute may ask for them a few at a time).
     */
    static final class Cursor {
        private final JournalSelect select;
        private final List<Short> formats;
        private JournalRows rows;
        private int sent;

        Cursor(JournalSelect select, List<Short> formats) {
            this.select = select;
            this.formats = List.copyOf(formats);
        }

        JournalSelect select() {
            return select;
        }

        List<Short> formats() {
            return formats;
        }

        /** The rows, once the query ran; null before. */
        JournalRows rows() {
            return rows;
        }

        void ran(JournalRows rows) {
            this.rows = rows;
        }

        /**
         * Writes the rows not sent yet, at most {@code maxRows} of them (0: all), each through {@code out}, then
         * PortalSuspended when rows remain, else CommandComplete with the count written.
         */
        void send(int maxRows, java.util.function.Consumer<BackendMessage> out) {
            int total = rows.rows().size();
            int end = maxRows > 0 ? (int) Math.min(total, (long) sent + maxRows) : total;
            for (int i = sent; i < end; i++) {
                out.accept(row(rows, i, formats));
            }
            int written = end - sent;
            sent = end;
            out.accept(end < total ? new BackendMessage.PortalSuspended() : new BackendMessage.CommandComplete("SELECT " + written));
        }

        BackendMessage.RowDescription description() {
            return JournalResults.description(select.resolvedColumns(), formats);
        }
    }

    static int oid(JournalType type) {
        return switch (type) {
            case TEXT -> PgTypes.TEXT_OID;
            case INT4 -> PgTypes.INT4_OID;
            case INT8 -> PgTypes.INT8_OID;
            case TIMESTAMPTZ -> PgTypes.TIMESTAMPTZ_OID;
            case UUID -> PgTypes.UUID_OID;
            case JSON -> PgTypes.JSON_OID;
        };
    }

    private static short length(JournalType type) {
        return switch (type) {
            case INT4 -> 4;
            case INT8, TIMESTAMPTZ -> 8;
            case UUID -> 16;
            case TEXT, JSON -> -1;
        };
    }

    /**
     * The format of each of {@code columns} result columns from Bind's format codes: none means text for all, one
     * applies to all, else one per column.
     *
     * @throws ThresherException {@link ErrorCode#PROTOCOL_VIOLATION} for another count
     */
    static List<Short> formats(List<Short> requested, int columns) {
        if (requested.size() > 1 && requested.size() != columns) {
            throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "bind message has " + requested.size()
                    + " result formats but query has " + columns + " columns");
        }
        List<Short> out = new ArrayList<>(columns);
        for (int i = 0; i < columns; i++) {
            short f = requested.isEmpty() ? 0 : requested.get(requested.size() == 1 ? 0 : i);
            if (f != 0 && f != 1) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "unsupported format code: " + f);
            }
            out.add(f);
        }
        return out;
    }

    static BackendMessage.RowDescription description(List<JournalColumn> columns, List<Short> formats) {
        List<BackendMessage.Column> out = new ArrayList<>(columns.size());
        for (int i = 0; i < columns.size(); i++) {
            JournalType type = columns.get(i).type();
            out.add(new BackendMessage.Column(columns.get(i).name(), oid(type), length(type), formats.get(i)));
        }
        return new BackendMessage.RowDescription(out);
    }

    static BackendMessage.DataRow row(JournalRows rows, int index, List<Short> formats) {
        List<Object> row = rows.rows().get(index);
        List<byte[]> values = new ArrayList<>(row.size());
        for (int i = 0; i < row.size(); i++) {
            values.add(encode(rows.columns().get(i).type(), row.get(i), formats.get(i)));
        }
        return new BackendMessage.DataRow(values);
    }

    /** One value in text (0) or binary (1) format; null stays null. */
    static byte[] encode(JournalType type, Object value, short format) {
        if (value == null) {
            return null;
        }
        if (format == 0) {
            return switch (type) {
                case TIMESTAMPTZ -> PgRows.timestamp((Instant) value);
                default -> value.toString().getBytes(StandardCharsets.UTF_8);
            };
        }
        return switch (type) {
            case TEXT, JSON -> ((String) value).getBytes(StandardCharsets.UTF_8);
            case INT4 -> ByteBuffer.allocate(4).putInt((Integer) value).array();
            case INT8 -> ByteBuffer.allocate(8).putLong((Long) value).array();
            case TIMESTAMPTZ -> ByteBuffer.allocate(8).putLong(micros((Instant) value) - POSTGRES_EPOCH_MICROS).array();
            case UUID -> {
                UUID u = (UUID) value;
                yield ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits())
                        .array();
            }
        };
    }

    private static long micros(Instant t) {
        return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1_000);
    }

    /**
     * A bound parameter as the literal it stands for: a timestamp sent in binary as one, anything else as its text,
     * read as its column's type when the query is bound; null for a NULL.
     */
    static JournalSelect.Literal literal(int typeOid, short format, byte[] value, int n) {
        if (value == null) {
            return null;
        }
        if (format == 1 && (typeOid == PgTypes.TIMESTAMPTZ_OID || typeOid == PgTypes.TIMESTAMP_OID)) {
            if (value.length != 8) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter $" + n + " has " + value.length
                        + " bytes in binary format; a timestamp takes 8");
            }
            long micros = ByteBuffer.wrap(value).getLong() + POSTGRES_EPOCH_MICROS;
            return new JournalSelect.Timestamp(Instant.EPOCH.plusSeconds(Math.floorDiv(micros, 1_000_000L))
                    .plusNanos(Math.floorMod(micros, 1_000_000L) * 1_000));
        }
        return new JournalSelect.Text(SqlLiterals.raw(typeOid, format, value, n));
    }
}
