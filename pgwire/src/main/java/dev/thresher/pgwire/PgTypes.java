package dev.thresher.pgwire;

/**
 * The PostgreSQL types pgwire speaks, by OID, in one place: those it describes columns with (text, json, jsonb, the
 * journal's and the session queries' types), and those a parameter may be declared as and read in (docs/clients.md).
 */
final class PgTypes {
    static final int UNSPECIFIED_OID = 0;
    static final int BOOL_OID = 16;
    static final int BYTEA_OID = 17;
    static final int CHAR_OID = 18;
    static final int NAME_OID = 19;
    static final int INT8_OID = 20;
    static final int INT2_OID = 21;
    static final int INT4_OID = 23;
    static final int TEXT_OID = 25;
    static final int OID_OID = 26;
    static final int JSON_OID = 114;
    static final int FLOAT4_OID = 700;
    static final int FLOAT8_OID = 701;
    static final int UNKNOWN_OID = 705;
    static final int BPCHAR_OID = 1042;
    static final int VARCHAR_OID = 1043;
    static final int TIMESTAMP_OID = 1114;
    static final int TIMESTAMPTZ_OID = 1184;
    static final int VOID_OID = 2278;
    static final int UUID_OID = 2950;
    static final int JSONB_OID = 3802;
    /** The version byte that starts jsonb's binary format. */
    static final byte JSONB_VERSION = 1;

    private PgTypes() {
    }
}
