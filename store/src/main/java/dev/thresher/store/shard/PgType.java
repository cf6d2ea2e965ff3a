package dev.thresher.store.shard;

import dev.thresher.bindings.abi.ColumnType;

/**
 * The PostgreSQL column types a row batch carries, and how each is read. Both read paths use this one
 * mapping, so they agree on what a selector's columns become; any other type is refused.
 */
public enum PgType {
    /** {@code int2}: INT64. */
    INT2(ColumnType.INT64, 2, 21),
    /** {@code int4}: INT64. */
    INT4(ColumnType.INT64, 4, 23),
    /** {@code int8}: INT64. */
    INT8(ColumnType.INT64, 8, 20),
    /** {@code float4}: FLOAT64, the float's exact value widened. */
    FLOAT4(ColumnType.FLOAT64, 4, 700),
    /** {@code float8}: FLOAT64, bit for bit. */
    FLOAT8(ColumnType.FLOAT64, 8, 701),
    /** {@code numeric}: FLOAT64, as PostgreSQL's {@code numeric::float8} (the COPY path casts in SQL). */
    NUMERIC(ColumnType.FLOAT64, 8, 1700),
    /** {@code text}, {@code varchar}, {@code bpchar} (with its padding): TEXT. */
    TEXT(ColumnType.TEXT, -1, 25),
    /** {@code bool}: BOOL. */
    BOOL(ColumnType.BOOL, 1, 16),
    /** {@code bytea}: BYTES. */
    BYTEA(ColumnType.BYTES, -1, 17);

    /** The type OID of {@code varchar}, which reads as {@link #TEXT}. */
    public static final int VARCHAR_OID = 1043;
    /** The type OID of {@code bpchar} ({@code char(n)}), which reads as {@link #TEXT}, padding included. */
    public static final int BPCHAR_OID = 1042;

    /** The batch type the column becomes. */
    final ColumnType batchType;
    /** The length of the value's binary form in the COPY stream, or -1 when it varies. */
    final int binaryWidth;
    /** The OID of the type this constant is named after ({@code text} for {@link #TEXT}). */
    final int oid;

    PgType(ColumnType batchType, int binaryWidth, int oid) {
        this.batchType = batchType;
        this.binaryWidth = binaryWidth;
        this.oid = oid;
    }

    /** The batch type the column becomes. */
    public ColumnType batchType() {
        return batchType;
    }

    /** The length of the value's binary form in a binary COPY stream, or -1 when it varies. */
    public int binaryWidth() {
        return binaryWidth;
    }

    /** The OID of the type this constant is named after ({@code text}, 25, for {@link #TEXT}). */
    public int oid() {
        return oid;
    }

    /**
     * The type of a column by its type OID (as {@code pg_attribute.atttypid} and a {@code pgoutput} relation
     * message carry it), or null when a batch cannot carry it. Built-in OIDs only: a domain's OID is not its
     * base type's, so a caller resolves a domain to its base type ({@code pg_type.typbasetype}) first, as
     * pgjdbc does for {@link #ofName}.
     */
    public static PgType ofOid(int typeOid) {
        return switch (typeOid) {
            case 21 -> INT2;
            case 23 -> INT4;
            case 20 -> INT8;
            case 700 -> FLOAT4;
            case 701 -> FLOAT8;
            case 1700 -> NUMERIC;
            case 25, VARCHAR_OID, BPCHAR_OID -> TEXT;
            case 16 -> BOOL;
            case 17 -> BYTEA;
            default -> null;
        };
    }

    /**
     * The type of a column as pgjdbc names it ({@code ResultSetMetaData.getColumnTypeName}: the type's
     * name, or {@code serial}, {@code bigserial}, {@code smallserial} for an integer column with a
     * sequence default; a domain arrives as its base type), or null when a batch cannot carry it.
     */
    public static PgType ofName(String typeName) {
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
