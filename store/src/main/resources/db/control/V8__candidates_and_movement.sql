-- Control database, version 8: candidates, failover and movement.
--
-- Candidates. A node may serve several shard databases: its home shard (hosts.shard_id) and those it
-- stands by for. host_shards lists them; any candidate of a partition's shard may lead the partition.
-- A home candidate takes a free lease at once; a standby takes one only while no home candidate of
-- that shard is live (heartbeat within a lease) and not draining, so leadership stays where operators
-- placed it until a leader dies, freezes, drains or is transferred.
--
-- Epochs. partitions.epoch changes with every change of what a partition is or who leads it: a
-- split, a move's cutover, and a lease taken by another host than its last holder. A leader's run
-- publishes only under a live lease of its own at the run's epoch, so a stale leader (one that froze
-- and resumed, or lost its lease to a transfer) can never publish, whoever leads now.

ALTER TABLE shards ADD COLUMN name text;
UPDATE shards SET name = 'shard-' || shard_id;
ALTER TABLE shards ALTER COLUMN name SET NOT NULL;
ALTER TABLE shards ADD CONSTRAINT shards_name_unique UNIQUE (name);
ALTER TABLE shards ADD COLUMN added_at timestamptz NOT NULL DEFAULT now();

CREATE TABLE host_shards (
    host_id   text NOT NULL REFERENCES hosts ON DELETE CASCADE,
    shard_id  integer NOT NULL REFERENCES shards,
    home      boolean NOT NULL,
    PRIMARY KEY (host_id, shard_id)
);
CREATE INDEX host_shards_by_shard ON host_shards (shard_id);
INSERT INTO host_shards (host_id, shard_id, home) SELECT host_id, shard_id, true FROM hosts;

-- A draining node takes no lease and renews none: its partitions pass to other candidates as their
-- leases end.
ALTER TABLE hosts ADD COLUMN draining boolean NOT NULL DEFAULT false;

-- A leader transfer names the next leader: the holder stops renewing, and once the lease ends only
-- the named host may take it (any candidate may, if the named host is not live).
ALTER TABLE partition_leases ADD COLUMN transfer_to text;

-- Residency: the shard databases a table's partitions may live on (null: any).
ALTER TABLE user_tables ADD COLUMN residency integer[];

-- Every topology change an operator asked for: who, when, what, and how it ended.
CREATE TABLE topology_changes (
    change_id     bigserial PRIMARY KEY,
    requested_by  text NOT NULL,
    requested_at  timestamptz NOT NULL DEFAULT now(),
    command       text NOT NULL,
    dry_run       boolean NOT NULL,
    outcome       text NOT NULL CHECK (outcome IN ('running', 'succeeded', 'failed', 'planned', 'refused')),
    detail        text,
    finished_at   timestamptz
);
CREATE INDEX topology_changes_by_time ON topology_changes (requested_at);

-- A partition move in progress, by phase: copy -> verify -> cutover -> cleanup. Each phase is
-- idempotent, so a move interrupted anywhere resumes from its recorded phase.
CREATE TABLE partition_moves (
    partition_id     integer PRIMARY KEY,
    from_shard       integer NOT NULL REFERENCES shards,
    to_shard         integer NOT NULL REFERENCES shards,
    phase            text NOT NULL CHECK (phase IN ('copy', 'verify', 'cutover', 'cleanup')),
    source_epoch     bigint NOT NULL,
    row_count        bigint,
    checksum         text,
    change_id        bigint REFERENCES topology_changes,
    started_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TRIGGER host_shards_changed AFTER INSERT OR UPDATE OR DELETE ON host_shards
    FOR EACH ROW EXECUTE FUNCTION thresher_topology_changed();
CREATE TRIGGER hosts_draining AFTER UPDATE OF draining ON hosts
    FOR EACH ROW WHEN (OLD.draining IS DISTINCT FROM NEW.draining)
    EXECUTE FUNCTION thresher_topology_changed();
CREATE TRIGGER shards_changed AFTER INSERT OR UPDATE OR DELETE ON shards
    FOR EACH ROW EXECUTE FUNCTION thresher_topology_changed();
CREATE TRIGGER partition_leases_transfer AFTER UPDATE OF transfer_to ON partition_leases
    FOR EACH ROW WHEN (OLD.transfer_to IS DISTINCT FROM NEW.transfer_to)
    EXECUTE FUNCTION thresher_leadership_changed();
-- A lease ended early (a clean shutdown's release) is a change of leadership; renewals only extend.
CREATE TRIGGER partition_leases_released AFTER UPDATE OF lease_until ON partition_leases
    FOR EACH ROW WHEN (NEW.lease_until < OLD.lease_until)
    EXECUTE FUNCTION thresher_leadership_changed();

-- When a partition was created: a standby takes a never-led partition only once it is two leases old,
-- so a home node starting a moment after its standby still leads its own partitions.
ALTER TABLE partitions ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

-- Since when a host has been heartbeating without a gap of a lease: a standby hands a partition back to
-- its home node only once the home node has been live for two leases, not to a node that keeps freezing.
ALTER TABLE hosts ADD COLUMN live_since timestamptz NOT NULL DEFAULT now();

-- A lease taken through a transfer is kept where the operator put it: its holder renews it even as a
-- standby beside a settled home node (no failback), until it is transferred again or its holder dies.
ALTER TABLE partition_leases ADD COLUMN pinned boolean NOT NULL DEFAULT false;
