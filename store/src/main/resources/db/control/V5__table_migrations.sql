-- Control database, version 5: schema changes of distributed tables as migrations with per-shard status.
--
-- A table's schema on its shard databases changes only through numbered migrations: version 1 is the
-- CREATE TABLE of `thresher table create`, each later one an ALTER TABLE (a column added or dropped).
-- Each shard database holding partitions of the table applies them in order, each in one transaction
-- together with a row of its own history table (thresher_schema_history, created on first use), so a
-- migration is applied once per shard whatever is retried. The control database keeps what each shard
-- did: pending, applied, or failed with the database's error, until `thresher table migrate` (or its
-- HTTP and SQL equivalents) applies what is pending or failed again.

CREATE TABLE table_migrations (
    tenant       text NOT NULL,
    table_name   text NOT NULL,
    version      integer NOT NULL CHECK (version >= 1),
    description  text NOT NULL,
    ddl          text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, table_name, version),
    FOREIGN KEY (tenant, table_name) REFERENCES user_tables ON DELETE CASCADE
);

CREATE TABLE table_migration_shards (
    tenant       text NOT NULL,
    table_name   text NOT NULL,
    version      integer NOT NULL,
    shard_id     integer NOT NULL REFERENCES shards,
    state        text NOT NULL CHECK (state IN ('pending', 'applied', 'failed')),
    error        text,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, table_name, version, shard_id),
    FOREIGN KEY (tenant, table_name, version) REFERENCES table_migrations ON DELETE CASCADE
);
