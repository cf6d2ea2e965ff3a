-- Control database, version 4: the topology version and the catalog notification channel.
--
-- Nodes cache bindings and the topology (ControlCache). Triggers here tell them, through
-- pg_notify('thresher_catalog', payload), that what they cached changed; the payload says what:
--   binding:<tenant>/<name>   a version of that binding was added (or removed)
--   bindings                  some binding changed, name too long for a payload or table truncated
--   topology                  partitions, hosts' placement or addresses, or leadership changed
-- Notifications are an optimisation: a node that missed one converges by its poll
-- (limits.topologyPollMs). This part is PostgreSQL-specific (PL/pgSQL and LISTEN/NOTIFY); an
-- engine without them can drop these triggers and run on the poll alone.
--
-- NOTIFY is transactional: it is sent when the transaction commits, and identical payloads of
-- one transaction are sent once, so a statement that takes a hundred leases notifies once.

-- One row: bumped by every change to partitions and by every change to a host that moves it
-- (insert, delete, shard_id, wire_host, wire_port), never by heartbeats or lease renewals.
CREATE TABLE topology_version (
    version  bigint NOT NULL
);
CREATE UNIQUE INDEX topology_version_one_row ON topology_version ((true));
INSERT INTO topology_version (version) VALUES (1);

CREATE FUNCTION thresher_topology_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE topology_version SET version = version + 1;
    PERFORM pg_notify('thresher_catalog', 'topology');
    RETURN NULL;
END
$$;

CREATE FUNCTION thresher_leadership_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('thresher_catalog', 'topology');
    RETURN NULL;
END
$$;

CREATE FUNCTION thresher_binding_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        payload := 'binding:' || NEW.tenant || '/' || NEW.name;
    ELSIF TG_OP = 'DELETE' THEN
        payload := 'binding:' || OLD.tenant || '/' || OLD.name;
    ELSE
        payload := 'bindings';
    END IF;
    -- A payload must stay under 8000 bytes; a name that long invalidates every cached binding.
    IF octet_length(payload) > 7900 THEN
        payload := 'bindings';
    END IF;
    PERFORM pg_notify('thresher_catalog', payload);
    RETURN NULL;
END
$$;

CREATE TRIGGER partitions_changed AFTER INSERT OR UPDATE OR DELETE ON partitions
    FOR EACH ROW EXECUTE FUNCTION thresher_topology_changed();
CREATE TRIGGER partitions_truncated AFTER TRUNCATE ON partitions
    FOR EACH STATEMENT EXECUTE FUNCTION thresher_topology_changed();

CREATE TRIGGER hosts_added_or_removed AFTER INSERT OR DELETE ON hosts
    FOR EACH ROW EXECUTE FUNCTION thresher_topology_changed();
-- registerHost's upsert sets every column: only a real change of placement or address counts.
CREATE TRIGGER hosts_moved AFTER UPDATE OF shard_id, wire_host, wire_port ON hosts
    FOR EACH ROW
    WHEN (OLD.shard_id IS DISTINCT FROM NEW.shard_id
          OR OLD.wire_host IS DISTINCT FROM NEW.wire_host
          OR OLD.wire_port IS DISTINCT FROM NEW.wire_port)
    EXECUTE FUNCTION thresher_topology_changed();
CREATE TRIGGER hosts_truncated AFTER TRUNCATE ON hosts
    FOR EACH STATEMENT EXECUTE FUNCTION thresher_topology_changed();

CREATE TRIGGER partition_leases_taken_or_released AFTER INSERT OR DELETE ON partition_leases
    FOR EACH ROW EXECUTE FUNCTION thresher_leadership_changed();
-- acquireLeadership renews by updating lease_until of every lease the host holds, every third of
-- the lease: a renewal by the same host under the same epoch is not a change of leadership.
CREATE TRIGGER partition_leases_changed_hands AFTER UPDATE ON partition_leases
    FOR EACH ROW
    WHEN (OLD.host_id IS DISTINCT FROM NEW.host_id OR OLD.epoch IS DISTINCT FROM NEW.epoch)
    EXECUTE FUNCTION thresher_leadership_changed();
CREATE TRIGGER partition_leases_truncated AFTER TRUNCATE ON partition_leases
    FOR EACH STATEMENT EXECUTE FUNCTION thresher_leadership_changed();

CREATE TRIGGER bindings_changed AFTER INSERT OR DELETE ON bindings
    FOR EACH ROW EXECUTE FUNCTION thresher_binding_changed();
CREATE TRIGGER bindings_truncated AFTER TRUNCATE ON bindings
    FOR EACH STATEMENT EXECUTE FUNCTION thresher_binding_changed();
