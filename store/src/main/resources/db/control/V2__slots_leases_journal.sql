-- Control database, version 2: the coordination state of the call contract.

-- Each shard's complete partial set, published once under a lease and stamped with the
-- partition, the epoch it ran under and its wire identity.
CREATE TABLE shard_slots (
    call_id       uuid NOT NULL,
    slot_index    integer NOT NULL CHECK (slot_index >= 0),
    tenant        text NOT NULL,
    partition_id  integer NOT NULL,
    epoch         bigint NOT NULL,
    wire_id       text NOT NULL,
    host_id       text NOT NULL,
    row_count     integer NOT NULL,
    emit_count    integer NOT NULL,
    entry_count   integer NOT NULL,
    partials      bytea NOT NULL,          -- guest ABI v1 partials encoding
    published_at  timestamptz NOT NULL DEFAULT now(),
    lease_until   timestamptz NOT NULL,
    PRIMARY KEY (call_id, slot_index)
);
CREATE INDEX shard_slots_by_published ON shard_slots (published_at);

-- The right to reduce one call and publish its result.
CREATE TABLE reduce_leases (
    call_id      uuid PRIMARY KEY,
    host_id      text NOT NULL,
    wire_id      text NOT NULL,
    lease_until  timestamptz NOT NULL,
    taken_at     timestamptz NOT NULL DEFAULT now()
);

-- Component outcomes by (tenant, wire identity): a redelivery replays the outcome instead of
-- running the guest again. kind: 'shard' (payload = partials encoding) or 'reduce' (payload =
-- the result JSON in UTF-8); failed outcomes keep the code and message.
CREATE TABLE journal (
    tenant        text NOT NULL,
    wire_id       text NOT NULL,
    call_id       uuid NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('shard', 'reduce')),
    host_id       text NOT NULL,
    partition_id  integer,
    epoch         bigint,
    succeeded     boolean NOT NULL,
    error_code    integer,
    error_message text,
    row_count     integer,
    emit_count    integer,
    payload       bytea,
    guest_micros  bigint NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, wire_id)
);
CREATE INDEX journal_by_recorded ON journal (recorded_at);

-- Attempts of shard runs, for operators: one row per dispatch.
ALTER TABLE invocations ADD COLUMN attempts integer NOT NULL DEFAULT 0;
ALTER TABLE invocations ADD COLUMN deadline_ms bigint;
ALTER TABLE invocations ADD COLUMN published_by text;
