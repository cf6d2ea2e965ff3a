-- Control database, version 13: users, their grants and their HTTP bearer tokens.
--   users         who may log in (pgwire: SCRAM-SHA-256 against scram_verifier, PostgreSQL's
--                 SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> form) and the tenant
--                 everything they do happens in; user names are unique across tenants, as logins
--   user_grants   what a user may do in its tenant: call (one binding, or '*' for all), deploy, admin
--   user_tokens   HTTP bearer tokens, by their SHA-256 (the token itself is shown once, never kept)
-- Nodes keep all three in memory (they are read at every login and every call) and reload them when
-- told on the catalog channel ('access') or by their poll.

CREATE TABLE users (
    name            text PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 63),
    tenant          text NOT NULL REFERENCES tenants (tenant),
    scram_verifier  text NOT NULL CHECK (scram_verifier LIKE 'SCRAM-SHA-256$%'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      text NOT NULL
);

CREATE TABLE user_grants (
    user_name   text NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    privilege   text NOT NULL CHECK (privilege IN ('call', 'deploy', 'admin')),
    binding     text NOT NULL DEFAULT '' CHECK ((privilege = 'call') = (binding <> '')),
    granted_at  timestamptz NOT NULL DEFAULT now(),
    granted_by  text NOT NULL,
    PRIMARY KEY (user_name, privilege, binding)
);

CREATE TABLE user_tokens (
    token_sha256  bytea PRIMARY KEY CHECK (octet_length(token_sha256) = 32),
    user_name     text NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    created_by    text NOT NULL
);
CREATE INDEX user_tokens_by_user ON user_tokens (user_name);

CREATE FUNCTION thresher_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('thresher_catalog', 'access');
    RETURN NULL;
END
$$;

CREATE TRIGGER users_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION thresher_access_changed();
CREATE TRIGGER user_grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_grants
    FOR EACH STATEMENT EXECUTE FUNCTION thresher_access_changed();
CREATE TRIGGER user_tokens_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION thresher_access_changed();
