package dev.thresher.store.shard;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.topology.Partition;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Reads one partition's rows from the node's shard database straight into the guest batch
 * encoding. The selector's filter is kept; the partition is the slot range on the
 * {@value #SLOT_COLUMN} column, which every distributed table carries (indexed).
 */
public final class ShardReader {
    /** The column holding each row's slot, written by whoever routes rows in. */
    public static final String SLOT_COLUMN = "thresher_slot";

    private final DataSource db;

    public ShardReader(DataSource db) {
        this.db = db;
    }

    /**
     * The batch of one partition.
     *
     * @param deadline the call's deadline; the query is bounded by it
     * @throws ThresherException {@link ErrorCode#BATCH_TOO_MANY_ROWS} past {@code maxRows},
     *     {@link ErrorCode#BATCH_TOO_LARGE} past {@code maxBytes}, {@link ErrorCode#INVALID_SELECTOR}
     *     for a column type the batch cannot carry, {@link ErrorCode#DEADLINE_EXCEEDED}
     */
    public ShardBatch read(Partition partition, Selector selector, int maxRows, int maxBytes, Deadline deadline) {
        String sql = sql(selector);
        long started = System.nanoTime();
        long remainingMs = deadline.remainingMillis();
        if (remainingMs <= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed before reading partition " + partition.id());
        }
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setQueryTimeout((int) Math.max(1, (remainingMs + 999) / 1000));
            ps.setInt(1, partition.slotLo());
            ps.setInt(2, partition.slotHi());
            // One row past the bound tells "too many" from "exactly the bound".
            ps.setInt(3, maxRows + 1);
            try (ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData md = rs.getMetaData();
                List<Column> columns = new ArrayList<>();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    ColumnType type = typeOf(selector, md.getColumnName(i), md.getColumnType(i), md.getColumnTypeName(i));
                    columns.add(new Column(selector.columns().get(i - 1), type,
                            md.isNullable(i) != ResultSetMetaData.columnNoNulls));
                }
                RowBatchBuilder batch = new RowBatchBuilder(partition.id(), columns, maxRows, maxBytes);
                int rows = 0;
                while (rs.next()) {
                    batch.startRow();
                    rows++;
                    for (int i = 0; i < columns.size(); i++) {
                        copy(rs, i, columns.get(i).type(), batch);
                    }
                }
                byte[] bytes = batch.finish();
                return new ShardBatch(bytes, rows, System.nanoTime() - started);
            }
        } catch (SQLException e) {
            if (deadline.passed() || "57014".equals(e.getSQLState())) {
                throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "deadline passed while reading partition " + partition.id(), e);
            }
            if ("42703".equals(e.getSQLState()) || "42P01".equals(e.getSQLState())) {
                throw new ThresherException(ErrorCode.INVALID_SELECTOR,
                        "selector does not match the shard schema: " + e.getMessage(), e);
            }
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard database: " + e.getMessage(), e);
        }
    }

    /** The SQL that reads one partition for a selector; parameters: slot low, slot high, row limit. */
    public static String sql(Selector selector) {
        StringBuilder sb = new StringBuilder("SELECT ");
        for (int i = 0; i < selector.columns().size(); i++) {
            sb.append(i == 0 ? "" : ", ").append(quote(selector.columns().get(i)));
        }
        sb.append(" FROM ").append(quote(selector.table()))
                .append(" WHERE ").append(SLOT_COLUMN).append(" BETWEEN ? AND ?");
        selector.where().ifPresent(w -> sb.append(" AND (").append(w).append(')'));
        return sb.append(" LIMIT ?").toString();
    }

    private static String quote(String identifier) {
        return '"' + identifier.replace("\"", "\"\"") + '"';
    }

    private static ColumnType typeOf(Selector selector, String column, int jdbcType, String typeName) {
        return switch (jdbcType) {
            case Types.SMALLINT, Types.INTEGER, Types.BIGINT -> ColumnType.INT64;
            case Types.REAL, Types.FLOAT, Types.DOUBLE, Types.NUMERIC, Types.DECIMAL -> ColumnType.FLOAT64;
            case Types.VARCHAR, Types.CHAR, Types.LONGVARCHAR, Types.NVARCHAR -> ColumnType.TEXT;
            case Types.BIT, Types.BOOLEAN -> ColumnType.BOOL;
            case Types.BINARY, Types.VARBINARY, Types.LONGVARBINARY -> ColumnType.BYTES;
            default -> throw new ThresherException(ErrorCode.INVALID_SELECTOR, "column '" + column + "' of "
                    + selector.table() + " has type " + typeName + ", which a row batch cannot carry");
        };
    }

    private static void copy(ResultSet rs, int i, ColumnType type, RowBatchBuilder batch) throws SQLException {
        int col = i + 1;
        switch (type) {
            case INT64 -> {
                long v = rs.getLong(col);
                if (rs.wasNull()) {
                    batch.setNull(i);
                } else {
                    batch.setLong(i, v);
                }
            }
            case FLOAT64 -> {
                double v = rs.getDouble(col);
                if (rs.wasNull()) {
                    batch.setNull(i);
                } else {
                    batch.setDouble(i, v);
                }
            }
            case TEXT -> {
                String v = rs.getString(col);
                if (v == null) {
                    batch.setNull(i);
                } else {
                    batch.setText(i, v);
                }
            }
            case BOOL -> {
                boolean v = rs.getBoolean(col);
                if (rs.wasNull()) {
                    batch.setNull(i);
                } else {
                    batch.setBool(i, v);
                }
            }
            case BYTES -> {
                byte[] v = rs.getBytes(col);
                if (v == null) {
                    batch.setNull(i);
                } else {
                    batch.setBytes(i, v);
                }
            }
        }
    }
}
