-- Control database, version 3: a shard's partials are stored once, in its journal entry.
-- A published slot names its journal entry by (tenant, wire_id); the coordinator reads the
-- partials from there when it judges the slots before reduce.
ALTER TABLE shard_slots DROP COLUMN partials;
