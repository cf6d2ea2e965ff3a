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
    static final int BOOL = 16;
    static final int BYTEA = 17;
    static final int NAME = 19;
    static final int INT8 = 20;
    static final int INT2 = 21;
    static final int INT4 = 23;
    static final int TEXT = 25;
    static final int OID = 26;
    static final int FLOAT4 = 700;
    static final int FLOAT8 = 701;
    static final int UNKNOWN = 705;
    static final int BPCHAR = 1042;
    static final int VARCHAR = 1043;
    static final int UUID_OID = 2950;

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
            case INT2 -> Short.toString(fixed(b, 2, n).getShort());
            case INT4 -> Integer.toString(fixed(b, 4, n).getInt());
            case INT8 -> Long.toString(fixed(b, 8, n).getLong());
            case OID -> Integer.toUnsignedString(fixed(b, 4, n).getInt());
            case FLOAT4 -> floatText(fixed(b, 4, n).getFloat());
            case FLOAT8 -> doubleText(fixed(b, 8, n).getDouble());
            case BOOL -> fixed(b, 1, n).get() != 0 ? "true" : "false";
            case TEXT, VARCHAR, BPCHAR, NAME, UNKNOWN -> text(value, n);
            case BYTEA -> "\\x" + HexFormat.of().formatHex(value);
            case UUID_OID -> new UUID(fixed(b, 16, n).getLong(), b.getLong()).toString();
            default -> throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter $" + n + " has type OID " + typeOid
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
