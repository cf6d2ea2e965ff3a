-- Control database, version 10: HTTP handler bindings. A binding is of one kind for its whole life:
--   call   a distributed call: a component with run and reduce over a fixed selector, called with
--          CALL BINDING and POST /v1/bindings/<name>/call;
--   http   an HTTP handler: a component with handle, serving the routes its manifest declares
--          (manifest.http.routes, kept with the manifest) under /v1/http/<name>/ on every node; it has no
--          selector, and makes at most limits.nestedCallsPerRequest distributed calls per request.

ALTER TABLE bindings
    ADD COLUMN kind text NOT NULL DEFAULT 'call' CHECK (kind IN ('call', 'http')),
    ALTER COLUMN selector_sql DROP NOT NULL,
    ADD CONSTRAINT bindings_selector_of_calls_only CHECK ((kind = 'call') = (selector_sql IS NOT NULL));
