package dev.thresher.store.replica;

import dev.thresher.store.shard.PgType;
import java.util.Objects;

/**
 * One column of a replicated table, in the table's column order.
 *
 * <p>The type is kept as its OID, not only as the {@link PgType} a batch makes of it: {@code text},
 * {@code varchar} and {@code bpchar} read alike but compare differently ({@code bpchar} ignores trailing
 * spaces), and a column of a type a batch cannot carry (a {@code uuid} key, a {@code jsonb}) is still a
 * column of the table.
 *
 * @param name the column's name as PostgreSQL spells it (unquoted)
 * @param typeOid the column's type OID; for a domain, its base type's
 * @param notNull whether the column is declared {@code NOT NULL} (then the batch column is not nullable)
 */
public record ReplicaColumn(String name, int typeOid, boolean notNull) {
    public ReplicaColumn {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("column name is empty");
        }
    }

    /** A column of the type a {@link PgType} is named after ({@code text} for {@link PgType#TEXT}). */
    public ReplicaColumn(String name, PgType type, boolean notNull) {
        this(name, type.oid(), notNull);
    }

    /** What a batch makes of the column, or null when a batch cannot carry its type. */
    public PgType type() {
        return PgType.ofOid(typeOid);
    }

    /** Whether the column is {@code bpchar} ({@code char(n)}), whose comparisons ignore trailing spaces. */
    public boolean blankPadded() {
        return typeOid == PgType.BPCHAR_OID;
    }
}
