package dev.thresher.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.TableService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Table administration, answered with the tables as JSON:
 *
 * <pre>
 * GET    /admin/tables                         the tenant's tables
 * POST   /admin/tables                         creates one: {"name", "key", "columns", "partitions", "shards"}; 201
 * GET    /admin/tables/{name}                  one table
 * DELETE /admin/tables/{name}                  drops it: {"dropped": name}
 * POST   /admin/tables/{name}/migrations       alters it: {"addColumn": "name type"} or {"dropColumn": "name"}
 * POST   /admin/tables/{name}/migrate          applies pending and failed migrations again
 * POST   /admin/tables/{name}/rows[?header=true]  loads the body, a CSV file (RFC 4180, UTF-8), as thresher load does:
 *                                              {"rows", "rowsByShard", "millis"}
 * POST   /admin/tables/{name}/batches          reads it as a leader would for {"selector", "abiVersion"}:
 *                                              {"partitions": [{"partition", "rows", "batches" (base64), "error"}]}
 * </pre>
 *
 * A node without table administration answers every method on these paths 404. A load's body is read as it arrives
 * ({@link UploadRequests}), so a file of any size passes through a bounded buffer; it is all or nothing like every
 * load.
 */
final class TableRoutes {
    private final TableService tables;
    private final AdminWork admin;

    private TableRoutes(TableService tables, AdminWork admin) {
        this.tables = tables;
        this.admin = admin;
    }

    static void register(RouteTable<Exchange.Route> routes, TableService tables, AdminWork admin) {
        if (tables == null || admin == null) {
            AdminWork.notServed(routes, "this node serves no table administration", "/admin/tables",
                    "/admin/tables/{rest...}");
            return;
        }
        TableRoutes r = new TableRoutes(tables, admin);
        routes.add(HttpMethod.GET, "/admin/tables", r::list)
                .add(HttpMethod.POST, "/admin/tables", r::create)
                .add(HttpMethod.GET, "/admin/tables/{name}", r::show)
                .add(HttpMethod.DELETE, "/admin/tables/{name}", r::drop)
                .add(HttpMethod.POST, "/admin/tables/{name}/migrations", r::alter)
                .add(HttpMethod.POST, "/admin/tables/{name}/migrate", r::migrate)
                .add(HttpMethod.POST, "/admin/tables/{name}/rows", r::load)
                .add(HttpMethod.POST, "/admin/tables/{name}/batches", r::batches);
    }

    /** Whether a request's body is read as it arrives rather than whole: a load's ({@code POST .../rows}). */
    static boolean uploads(HttpMethod method, String path) {
        if (!method.equals(HttpMethod.POST) || !path.startsWith("/admin/tables/") || !path.endsWith("/rows")
                || path.length() <= "/admin/tables//rows".length()) {
            return false;
        }
        // the length check leaves a name of at least one character between the prefix and the suffix
        return path.substring("/admin/tables/".length(), path.length() - "/rows".length()).indexOf('/') < 0;
    }

    private void list(Exchange x) {
        admin.withBody(x, HttpResponseStatus.OK, body -> tables.list(x.tenant()));
    }

    private void create(Exchange x) {
        admin.withBody(x, HttpResponseStatus.CREATED, body -> {
            JsonNode spec = AdminWork.json(body);
            List<Integer> shards = new ArrayList<>();
            spec.path("shards").forEach(n -> shards.add(n.asInt()));
            return tables.create(x.tenant(), new TableService.TableSpec(AdminWork.text(spec, "name"),
                    AdminWork.text(spec, "key"), AdminWork.text(spec, "columns"), spec.path("partitions").asInt(16),
                    shards));
        });
    }

    private void show(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> tables.show(x.tenant(), name));
    }

    private void drop(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> {
            tables.drop(x.tenant(), name);
            return Map.of("dropped", name);
        });
    }

    private void alter(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> {
            JsonNode change = AdminWork.json(body);
            if (change.hasNonNull("addColumn") == change.hasNonNull("dropColumn")) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                        "a migration is {\"addColumn\": \"name type\"} or {\"dropColumn\": \"name\"}");
            }
            return tables.alter(x.tenant(), name, change.hasNonNull("addColumn")
                    ? new TableService.Change.AddColumn(change.get("addColumn").asText())
                    : new TableService.Change.DropColumn(change.get("dropColumn").asText()));
        });
    }

    private void load(Exchange x) {
        String name = x.capture("name");
        java.io.InputStream csv = x.upload().orElse(null);
        if (csv == null) {
            x.fail(new ThresherException(ErrorCode.INTERNAL_ERROR, "a load's body did not arrive as an upload"));
            return;
        }
        List<String> header = new io.netty.handler.codec.http.QueryStringDecoder(x.uri(),
                java.nio.charset.StandardCharsets.UTF_8).parameters().getOrDefault("header", List.of("false"));
        if (header.size() != 1 || !(header.get(0).equals("true") || header.get(0).equals("false"))) {
            x.fail(new ThresherException(ErrorCode.INVALID_ARGUMENTS, "header is true or false, once"));
            return;
        }
        admin.run(x, HttpResponseStatus.OK, () -> {
            try (csv) {
                return tables.load(x.tenant(), name, header.get(0).equals("true"), csv);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e); // closing a buffer throws nothing
            }
        });
    }

    private void batches(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> {
            JsonNode read = AdminWork.json(body);
            if (!read.path("abiVersion").isInt()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"abiVersion\" (1 or 2) is missing");
            }
            List<Map<String, Object>> partitions = new ArrayList<>();
            for (TableService.PartitionBatches p : tables.readBatches(x.tenant(), name, AdminWork.text(read, "selector"),
                    read.get("abiVersion").asInt())) {
                Map<String, Object> one = new java.util.LinkedHashMap<>();
                one.put("partition", p.partition());
                one.put("rows", p.rows());
                one.put("batches", p.batches()); // each as base64
                if (p.failure() != null) {
                    one.put("error", Map.of("code", p.failure().code().code(), "name", p.failure().code().name(),
                            "message", p.failure().getMessage()));
                }
                partitions.add(one);
            }
            return Map.of("partitions", partitions);
        });
    }

    private void migrate(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> tables.migrate(x.tenant(), name));
    }
}
