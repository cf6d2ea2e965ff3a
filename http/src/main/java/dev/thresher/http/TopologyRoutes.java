package dev.thresher.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.TopologyService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The topology: the node's view of it, and its changes, each change answered with its audited change
 * ({@code changeId}, {@code command}, {@code dryRun}, {@code outcome}, {@code steps}); a body's {@code "dryRun": true}
 * plans without changing anything.
 *
 * <pre>
 * GET  /admin/topology                        the node's view of the topology, byte-stable JSON (sorted keys)
 * GET  /admin/topology/replicas               this node's leader replicas: each partition in memory or not, rows, bytes, lag
 * GET  /admin/topology/changes?limit=n        the audit, newest first (100 by default)
 * GET  /admin/topology/control                the topology as the control database holds it, as /admin/topology renders
 * GET  /admin/shards                          every shard database: id, name, partitions, candidates
 * POST /admin/partitions/{id}/split           {"at": slot}
 * POST /admin/partitions/{id}/move            {"to": "shard"}
 * POST /admin/partitions/{id}/leader          {"to": "node"}: a leader transfer
 * POST /admin/nodes/{id}/drain                and .../undrain
 * POST /admin/shards                          {"url", "name"}
 * POST /admin/shards/{id}/remove              {"dryRun": true} optional
 * </pre>
 *
 * A node without topology administration answers every method on the paths of changes 404. A change is recorded as
 * made by its body's {@code "by"} when it names someone (the command line sends {@code <user>@cli}), else as
 * {@code http}.
 */
final class TopologyRoutes {
    private final TopologyService topology;
    private final AdminWork admin;

    private TopologyRoutes(TopologyService topology, AdminWork admin) {
        this.topology = topology;
        this.admin = admin;
    }

    /**
     * @param view the node's view for {@code GET /admin/topology}, or null when not served
     * @param changes the topology changes, or null (as {@code admin}) when not served
     */
    static void register(RouteTable<Exchange.Route> routes, Supplier<String> view, TopologyService changes,
                         AdminWork admin) {
        if (changes == null || admin == null) {
            AdminWork.notServed(routes, "this node serves no topology administration", "/admin/topology/changes",
                    "/admin/topology/replicas", "/admin/topology/control", "/admin/partitions/{rest...}",
                    "/admin/nodes/{rest...}", "/admin/shards", "/admin/shards/{rest...}");
        } else {
            TopologyRoutes r = new TopologyRoutes(changes, admin);
            routes.add(HttpMethod.GET, "/admin/topology/replicas", x -> admin.run(x, HttpResponseStatus.OK, changes::replicas))
                    .add(HttpMethod.GET, "/admin/topology/changes", r::changes)
                    .add(HttpMethod.GET, "/admin/topology/control", x -> admin.runJson(x, HttpResponseStatus.OK,
                            changes::controlView))
                    .add(HttpMethod.GET, "/admin/shards", x -> admin.run(x, HttpResponseStatus.OK, changes::shards))
                    .add(HttpMethod.POST, "/admin/partitions/{id}/split", r.partition((id, d) -> changes.splitPartition(by(d),
                            id, d.path("at").isInt() ? OptionalInt.of(d.path("at").asInt()) : OptionalInt.empty(),
                            dryRun(d))))
                    .add(HttpMethod.POST, "/admin/partitions/{id}/move", r.partition((id, d) -> changes.movePartition(by(d),
                            id, d.path("to").asText(null), dryRun(d))))
                    .add(HttpMethod.POST, "/admin/partitions/{id}/leader", r.partition((id, d) -> changes.transferLeader(by(d),
                            id, AdminWork.text(d, "to"), dryRun(d))))
                    .add(HttpMethod.POST, "/admin/nodes/{id}/drain", r.change(x -> d -> changes.drainNode(by(d),
                            x.capture("id"), dryRun(d))))
                    .add(HttpMethod.POST, "/admin/nodes/{id}/undrain", r.change(x -> d -> changes.undrainNode(by(d),
                            x.capture("id"), dryRun(d))))
                    .add(HttpMethod.POST, "/admin/shards", r.change(x -> d -> changes.addShard(by(d), AdminWork.text(d, "url"),
                            Optional.ofNullable(d.path("name").isTextual() ? d.path("name").asText() : null), dryRun(d))))
                    .add(HttpMethod.POST, "/admin/shards/{id}/remove", r.change(x -> d -> changes.removeShard(by(d),
                            x.capture("id"), dryRun(d))));
        }
        if (view != null) {
            routes.add(HttpMethod.GET, "/admin/topology", x -> x.send(HttpResponseStatus.OK, view.get()));
        }
    }

    /** {@code GET /admin/topology/changes}: {@code limit=n} of the query, 100 by default. */
    private void changes(Exchange x) {
        int limit = 100;
        String uri = x.uri();
        String query = uri.contains("?") ? uri.substring(uri.indexOf('?') + 1) : "";
        for (String kv : query.split("&")) {
            if (kv.startsWith("limit=")) {
                try {
                    limit = Integer.parseInt(kv.substring(6));
                } catch (NumberFormatException e) {
                    x.fail(new ThresherException(ErrorCode.INVALID_ARGUMENTS, "limit is a number"));
                    return;
                }
            }
        }
        int n = limit;
        admin.run(x, HttpResponseStatus.OK, () -> topology.changes(n));
    }

    private static String by(JsonNode body) {
        return BindingRoutes.by(body);
    }

    private static boolean dryRun(JsonNode body) {
        return body.path("dryRun").asBoolean(false);
    }

    /** A change of the request's body (a JSON object, or none), made on the admin threads. */
    private Exchange.Route change(Function<Exchange, Function<JsonNode, Object>> change) {
        return x -> {
            Function<JsonNode, Object> work = change.apply(x);
            admin.withBody(x, HttpResponseStatus.OK, body -> work.apply(body.isBlank()
                    ? AdminWork.JSON.createObjectNode() : AdminWork.json(body)));
        };
    }

    /** A change of the partition the path names by its number. */
    private Exchange.Route partition(java.util.function.BiFunction<Integer, JsonNode, Object> change) {
        return change(x -> d -> {
            String name = x.capture("id");
            int id;
            try {
                id = Integer.parseInt(name);
            } catch (NumberFormatException e) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a partition id is a number, was '"
                        + Quoted.of(name) + "'");
            }
            return change.apply(id, d);
        });
    }
}
