-- Control database, version 15: one word for one partition's unit of work in a call. The word slot means a hash slot
-- (one of 16384); what was called a slot of a call is a shard run (docs/architecture.md, "Glossary"). The table of
-- published shard runs and the journal's index of a run in its call are renamed; rows, keys and data are kept.

ALTER TABLE shard_slots RENAME TO shard_runs;
ALTER TABLE shard_runs RENAME COLUMN slot_index TO run_index;
ALTER TABLE shard_runs RENAME CONSTRAINT shard_slots_pkey TO shard_runs_pkey;
ALTER TABLE shard_runs RENAME CONSTRAINT shard_slots_slot_index_check TO shard_runs_run_index_check;
ALTER INDEX shard_slots_by_published RENAME TO shard_runs_by_published;

ALTER TABLE journal RENAME COLUMN slot_index TO run_index;
