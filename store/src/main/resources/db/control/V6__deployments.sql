-- Control database, version 6: deployments. A binding version pins a package (the module, by the SHA-256
-- of its bytes) and the manifest it was deployed with (by the SHA-256 of the manifest's bytes), records the
-- guest ABI version its run export is typed for, who deployed it, and why when it is not a plain deploy
-- ("rollback to version 3"). Versions from before deployments existed have no manifest.

CREATE TABLE manifests (
    digest      text PRIMARY KEY CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    manifest    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE bindings
    ADD COLUMN manifest_digest  text REFERENCES manifests,
    ADD COLUMN abi_version      integer CHECK (abi_version IN (1, 2)),
    ADD COLUMN deployed_by      text NOT NULL DEFAULT 'catalog',
    ADD COLUMN note             text;
