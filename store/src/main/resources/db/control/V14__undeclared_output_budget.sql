-- Control database, version 14: a binding version whose manifest declared no budgets.outputBytes was stored with
-- the largest bigint instead of NULL (the budget's "no limit" reading was written back as a value). Both mean the
-- node's limit applies; NULL is what every other undeclared budget holds.

UPDATE bindings SET budget_output_bytes = NULL WHERE budget_output_bytes = 9223372036854775807;
