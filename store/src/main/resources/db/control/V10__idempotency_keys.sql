-- Control database, version 10: outer HTTP requests journaled by their Idempotency-Key.
--
-- A request carrying an Idempotency-Key claims (tenant, key) with a fingerprint of the request. The
-- claim's owner runs it and records the outer response; a repeat with the same key and fingerprint
-- gets that response back without running anything, one with another fingerprint is refused, and one
-- arriving while the owner runs waits for its response. An owner that died leaves its claim until
-- claimed_until (its deadline plus a grace, after which nothing of its call can be published); the
-- next request then takes the claim over, and the call it had recorded (call_id) tells whether that
-- call's result was published. Rows expire with the coordination retention.
CREATE TABLE idempotency_keys (
    tenant        text        NOT NULL,
    key           text        NOT NULL,
    fingerprint   bytea       NOT NULL,
    state         text        NOT NULL CHECK (state IN ('running', 'done')),
    owner         uuid        NOT NULL,
    call_id       uuid,
    status        int,
    response      text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_until timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant, key),
    CHECK (state = 'running' OR (status IS NOT NULL AND response IS NOT NULL))
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
