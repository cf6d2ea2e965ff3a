package dev.thresher.pgwire;

/**
 * The PostgreSQL types pgwire describes columns with and reads parameters as, by OID: text, json and jsonb answer, and
 * a parameter may be declared as any of them, as varchar, as unknown or not at all.
 */
final class PgTypes {
    static final int UNSPECIFIED_OID = 0;
    static final int TEXT_OID = 25;
    static final int JSON_OID = 114;
    static final int UNKNOWN_OID = 705;
    static final int VARCHAR_OID = 1043;
    static final int JSONB_OID = 3802;
    /** The version byte that starts jsonb's binary format. */
    static final byte JSONB_VERSION = 1;

    private PgTypes() {
    }
}
