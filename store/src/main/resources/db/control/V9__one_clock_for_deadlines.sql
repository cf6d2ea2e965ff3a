-- Control database, version 9: one clock for deadlines, and invocations that always end.
--
-- invocations.deadline_at is written by this database's clock (clock_timestamp() plus the call's time
-- left) and every node judges a call's deadline by it: a slot or result is published only while
-- clock_timestamp() has not passed it, and a leader starts no guest once its reading of this clock
-- says it has passed. An invocation still running some seconds past its deadline can no longer
-- publish anything; any node's reconciler then records it as failed.

-- Shard runs: the latest time, on this database's clock, at which the leader decided to start the guest.
ALTER TABLE journal ADD COLUMN guest_started_at timestamptz;

-- A slot's publication time on the same clock as the fence that allowed it.
ALTER TABLE shard_slots ALTER COLUMN published_at SET DEFAULT clock_timestamp();

-- What the reconciler looks for.
CREATE INDEX invocations_running_by_deadline ON invocations (deadline_at) WHERE state = 'running';
