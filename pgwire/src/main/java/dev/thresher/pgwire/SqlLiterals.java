package dev.thresher.pgwire;

import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.UUID;

/**
 * A bound parameter's value as the text the table's column type reads (the loader hands every value of an INSERT to
 * PostgreSQL's COPY as text), or a journal query's literal. Text-format
 * values of any type are taken as they are; binary-format values are decoded for the types drivers send in
 * binary: int2, int4, int8, oid, float4, float8, bool, text, varchar, bpchar, name, bytea and uuid.
 */
final class SqlLiterals {

    private SqlLiterals() {
    }

    /**
     * A non-NULL bound parameter's value as text: text format as it is, binary decoded.
     *
     * @param format 0 text, 1 binary
     * @param n the parameter's number, for messages
     */
    static String raw(int typeOid, short format, byte[] value, int n) {
        if (format == 0) {
            return text(value, n);
        }
        ByteBuffer b = ByteBuffer.wrap(value);
        String v = switch (typeOid) {
            case PgTypes.INT2_OID -> Short.toString(fixed(b, 2, n).getShort());
            case PgTypes.INT4_OID -> Integer.toString(fixed(b, 4, n).getInt());
            case PgTypes.INT8_OID -> Long.toString(fixed(b, 8, n).getLong());
            case PgTypes.OID_OID -> Integer.toUnsignedString(fixed(b, 4, n).getInt());
            case PgTypes.FLOAT4_OID -> floatText(fixed(b, 4, n).getFloat());
            case PgTypes.FLOAT8_OID -> doubleText(fixed(b, 8, n).getDouble());
            case PgTypes.BOOL_OID -> fixed(b, 1, n).get() != 0 ? "true" : "false";
            case PgTypes.TEXT_OID, PgTypes.VARCHAR_OID, PgTypes.BPCHAR_OID, PgTypes.NAME_OID, PgTypes.UNKNOWN_OID -> text(value, n);
            case PgTypes.BYTEA_OID -> "\\x" + HexFormat.of().formatHex(value);
            case PgTypes.UUID_OID -> new UUID(fixed(b, 16, n).getLong(), b.getLong()).toString();
            default -> throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter $" + n + " has type PgTypes.OID_OID " + typeOid
                    + " in binary format, which is not served; send it in text format");
        };
        return v;
    }

    private static ByteBuffer fixed(ByteBuffer b, int length, int n) {
        if (b.remaining() != length) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter $" + n + " has " + b.remaining()
                    + " bytes in binary format; its type takes " + length);
        }
        return b;
    }

    private static String floatText(float f) {
        return Float.isNaN(f) ? "NaN" : Float.isInfinite(f) ? (f > 0 ? "Infinity" : "-Infinity") : Float.toString(f);
    }

    private static String doubleText(double d) {
        return Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity" : "-Infinity") : Double.toString(d);
    }

    private static String text(byte[] value, int n) {
        return Utf8.decode(ByteBuffer.wrap(value)).orElseThrow(() -> new ThresherException(ErrorCode.INVALID_TEXT_ENCODING,
                "parameter $" + n + " is not valid UTF-8"));
    }

}
