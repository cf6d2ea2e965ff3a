-- Control database, version 10: what operators read of each slot's run (the journal views; docs/operations.md,
-- "Reading the journal").
--
-- A shard outcome is journaled with the slot it fills, the attempt that produced it and how long its partition
-- read took, by the statement that journals it already (no statement more on the call path). Rows journaled
-- before this version have them NULL. The journal rows of one call are found by its id.

ALTER TABLE journal
    ADD COLUMN slot_index   integer,
    ADD COLUMN attempt      integer,
    ADD COLUMN read_micros  bigint;

CREATE INDEX journal_by_call ON journal (call_id);
