package dev.thresher.bindings;

import java.util.Objects;

/**
 * A table statement as the front door parsed it ({@code CREATE TABLE}, {@code DROP TABLE}, {@code ALTER TABLE} over
 * pgwire), for {@link TableService#execute(String, String, TableCommand)}: the service runs commands, it reads no SQL.
 */
public sealed interface TableCommand {
    /** {@code CREATE TABLE name (columns) PARTITION BY HASH (key) [WITH (partitions = n, shards = '1,2')]}. */
    record Create(TableService.TableSpec spec) implements TableCommand {
        public Create {
            Objects.requireNonNull(spec, "spec");
        }
    }

    /** {@code DROP TABLE [IF EXISTS] name}. */
    record Drop(String table, boolean ifExists) implements TableCommand {
        public Drop {
            Objects.requireNonNull(table, "table");
        }
    }

    /** {@code ALTER TABLE name ADD [COLUMN] column type [NOT NULL]} or {@code ALTER TABLE name DROP [COLUMN] column}. */
    record Alter(String table, TableService.Change change) implements TableCommand {
        public Alter {
            Objects.requireNonNull(table, "table");
            Objects.requireNonNull(change, "change");
        }
    }

    /** The command tag a client is answered with once the command ran. */
    default String tag() {
        return switch (this) {
            case Create c -> "CREATE TABLE";
            case Drop d -> "DROP TABLE";
            case Alter a -> "ALTER TABLE";
        };
    }
}
