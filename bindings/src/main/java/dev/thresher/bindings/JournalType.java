package dev.thresher.bindings;

/**
 * The type of a column of the journal views, as PostgreSQL names it; each has one Java type its values come
 * as in {@link JournalRows}.
 */
public enum JournalType {
    /** {@link String}. */
    TEXT("text"),
    /** {@link Integer}. */
    INT4("integer"),
    /** {@link Long}. */
    INT8("bigint"),
    /** {@link java.time.Instant}, microsecond precision. */
    TIMESTAMPTZ("timestamptz"),
    /** {@link java.util.UUID}. */
    UUID("uuid"),
    /** {@link String}: a JSON document as published. */
    JSON("json");

    private final String sqlName;

    JournalType(String sqlName) {
        this.sqlName = sqlName;
    }

    /** The type's name in SQL ({@code timestamptz}, {@code bigint}, ...). */
    public String sqlName() {
        return sqlName;
    }

    /** Whether values of the type have an order (and equality): every type but json. */
    public boolean ordered() {
        return this != JSON;
    }

    /** Whether {@code LIKE} applies: text, and uuid through its text. */
    public boolean matchable() {
        return this == TEXT || this == UUID;
    }

    /** Whether values are whole numbers. */
    public boolean integral() {
        return this == INT4 || this == INT8;
    }
}
