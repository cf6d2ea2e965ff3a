-- Control database, version 7: budgets. A binding version pins what its guest may use, as its manifest
-- declared it ("budgets"); NULL is not declared: the node's limit applies. Copied from the version a
-- rollback returns to, like the package and the manifest.

ALTER TABLE bindings
    ADD COLUMN budget_run_ms        bigint CHECK (budget_run_ms > 0),
    ADD COLUMN budget_memory_bytes  bigint CHECK (budget_memory_bytes > 0),
    ADD COLUMN budget_input_bytes   bigint CHECK (budget_input_bytes > 0),
    ADD COLUMN budget_output_bytes  bigint CHECK (budget_output_bytes > 0),
    ADD COLUMN budget_emits         bigint CHECK (budget_emits > 0),
    ADD COLUMN budget_module_bytes  bigint CHECK (budget_module_bytes > 0);
