package dev.thresher.store.shard;

import dev.thresher.bindings.abi.ColumnType;

/**
 * The PostgreSQL column types a row batch carries, and how each is read. Both read paths use this one
 * mapping, so they agree on what a selector's columns become; any other type is refused.
 */
enum PgType {
    /** {@code int2}: INT64. */
    INT2(ColumnType.INT64, 2),
    /** {@code int4}: INT64. */
    INT4(ColumnType.INT64, 4),
    /** {@code int8}: INT64. */
    INT8(ColumnType.INT64, 8),
    /** {@code float4}: FLOAT64, the float's exact value widened. */
    FLOAT4(ColumnType.FLOAT64, 4),
    /** {@code float8}: FLOAT64, bit for bit. */
    FLOAT8(ColumnType.FLOAT64, 8),
    /** {@code numeric}: FLOAT64, as PostgreSQL's {@code numeric::float8} (the COPY path casts in SQL). */
    NUMERIC(ColumnType.FLOAT64, 8),
    /** {@code text}, {@code varchar}, {@code bpchar} (with its padding): TEXT. */
    TEXT(ColumnType.TEXT, -1),
    /** {@code bool}: BOOL. */
    BOOL(ColumnType.BOOL, 1),
    /** {@code bytea}: BYTES. */
    BYTEA(ColumnType.BYTES, -1);

    /** The batch type the column becomes. */
    final ColumnType batchType;
    /** The length of the value's binary form in the COPY stream, or -1 when it varies. */
    final int binaryWidth;

    PgType(ColumnType batchType, int binaryWidth) {
        this.batchType = batchType;
        this.binaryWidth = binaryWidth;
    }

    /**
     * The type of a column as pgjdbc names it ({@code ResultSetMetaData.getColumnTypeName}: the type's
     * name, or {@code serial}, {@code bigserial}, {@code smallserial} for an integer column with a
     * sequence default; a domain arrives as its base type), or null when a batch cannot carry it.
     */
    static PgType ofName(String typeName) {
        if (typeName == null) {
            return null;
        }
        return switch (typeName) {
            case "int2", "smallserial" -> INT2;
            case "int4", "serial" -> INT4;
            case "int8", "bigserial" -> INT8;
            case "float4" -> FLOAT4;
            case "float8" -> FLOAT8;
            case "numeric" -> NUMERIC;
            case "text", "varchar", "bpchar" -> TEXT;
            case "bool" -> BOOL;
            case "bytea" -> BYTEA;
            default -> null;
        };
    }
}
