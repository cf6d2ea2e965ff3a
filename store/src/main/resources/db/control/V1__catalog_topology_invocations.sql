-- Control database, version 1: the catalog, the topology and the invocation record.
-- Plain SQL only, so that a PostgreSQL-compatible distributed SQL engine can host it later.

CREATE TABLE tenants (
    tenant      text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Content-addressed component packages: the digest is sha256 over the wasm bytes.
CREATE TABLE packages (
    digest      text PRIMARY KEY CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    wasm        bytea NOT NULL,
    size_bytes  integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Immutable binding versions; the highest version of a name is the one callers reach.
CREATE TABLE bindings (
    tenant          text NOT NULL REFERENCES tenants,
    name            text NOT NULL,
    version         integer NOT NULL CHECK (version >= 1),
    package_digest  text NOT NULL REFERENCES packages,
    selector_sql    text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, name, version)
);

-- Shard databases hold user rows; each node attaches to one.
CREATE TABLE shards (
    shard_id    integer PRIMARY KEY,
    jdbc_url    text NOT NULL UNIQUE
);

-- Tables whose rows are spread over slots by their key.
CREATE TABLE user_tables (
    tenant      text NOT NULL REFERENCES tenants,
    table_name  text NOT NULL,
    key_column  text NOT NULL,
    key_type    text NOT NULL CHECK (key_type IN ('smallint', 'integer', 'bigint', 'text', 'uuid', 'bytea')),
    PRIMARY KEY (tenant, table_name)
);

-- A partition is a slot range of one table on one shard database. Every change bumps its epoch.
CREATE TABLE partitions (
    partition_id  integer PRIMARY KEY,
    tenant        text NOT NULL,
    table_name    text NOT NULL,
    slot_lo       integer NOT NULL CHECK (slot_lo >= 0 AND slot_lo < 16384),
    slot_hi       integer NOT NULL CHECK (slot_hi >= slot_lo AND slot_hi < 16384),
    shard_id      integer NOT NULL REFERENCES shards,
    epoch         bigint NOT NULL DEFAULT 1,
    FOREIGN KEY (tenant, table_name) REFERENCES user_tables
);
CREATE INDEX partitions_by_table ON partitions (tenant, table_name, slot_lo);

-- Nodes as they registered themselves.
CREATE TABLE hosts (
    host_id         text PRIMARY KEY,
    shard_id        integer NOT NULL REFERENCES shards,
    wire_host       text NOT NULL,
    wire_port       integer NOT NULL,
    pgwire_address  text,
    http_address    text,
    started_at      timestamptz NOT NULL DEFAULT now(),
    heartbeat_at    timestamptz NOT NULL DEFAULT now()
);

-- Leadership of a partition: the leader replica is the node holding a live lease under the current epoch.
CREATE TABLE partition_leases (
    partition_id  integer PRIMARY KEY REFERENCES partitions,
    host_id       text NOT NULL REFERENCES hosts,
    epoch         bigint NOT NULL,
    lease_until   timestamptz NOT NULL
);

-- One row per distributed call. The result becomes visible once: state moves from running to
-- succeeded or failed exactly once, guarded by the state in the UPDATE.
CREATE TABLE invocations (
    call_id           uuid PRIMARY KEY,
    tenant            text NOT NULL,
    binding_name      text NOT NULL,
    binding_version   integer NOT NULL,
    package_digest    text NOT NULL,
    principal         text NOT NULL,
    coordinator_host  text NOT NULL,
    shard_count       integer NOT NULL,
    deadline_at       timestamptz NOT NULL,
    state             text NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
    error_code        integer,
    error_message     text,
    result_json       text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz
);
CREATE INDEX invocations_by_created ON invocations (created_at);
