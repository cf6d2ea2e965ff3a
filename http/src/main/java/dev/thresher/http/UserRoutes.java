package dev.thresher.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.bindings.access.Scram;
import dev.thresher.bindings.access.UserService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Users, their tokens and grants ({@code thresher user}, {@code grant}, {@code revoke}):
 *
 * <pre>
 * GET    /admin/users[?tenant=t | ?all=true]     the users of the request's tenant (or of t, or of every tenant)
 * POST   /admin/users                            {"name", "verifier", "tenant", "admin", "by"}: adds one; 201
 * DELETE /admin/users/{name}                     removes one with its grants and tokens
 * POST   /admin/users/{name}/password            {"verifier"}
 * POST   /admin/users/{name}/tokens              {"token", "by"}: keeps a bearer token (as its digest)
 * DELETE /admin/users/{name}/tokens              revokes every token of the user: {"revoked": n}
 * POST   /admin/grants                           {"grant": "call on binding x", "user", "by"}
 * POST   /admin/grants/revoke                    {"grant", "user"}
 * </pre>
 *
 * A password travels as its SCRAM-SHA-256 verifier ({@code SCRAM-SHA-256$iterations:salt$storedKey:serverKey}), made
 * where the command runs, never as itself. An admin of the node's tenant (the admin token's) is the cluster's operator
 * and reaches users of every tenant, as {@code thresher user} on the control database does; an admin of another
 * tenant only its own tenant's. A node without table administration answers every method on these paths 404.
 */
final class UserRoutes {
    private final UserService users;
    private final AdminWork admin;
    private final String nodeTenant;

    private UserRoutes(UserService users, AdminWork admin, String nodeTenant) {
        this.users = users;
        this.admin = admin;
        this.nodeTenant = nodeTenant;
    }

    static void register(RouteTable<Exchange.Route> routes, UserService users, AdminWork admin, String nodeTenant) {
        if (users == null || admin == null) {
            AdminWork.notServed(routes, "this node serves no user administration", "/admin/users",
                    "/admin/users/{rest...}", "/admin/grants", "/admin/grants/{rest...}");
            return;
        }
        UserRoutes r = new UserRoutes(users, admin, nodeTenant);
        routes.add(HttpMethod.GET, "/admin/users", r::list)
                .add(HttpMethod.POST, "/admin/users", r::add)
                .add(HttpMethod.DELETE, "/admin/users/{name}", r.named((x, name, d) -> {
                    users.remove(r.scope(x), name);
                    return Map.of("removed", name);
                }))
                .add(HttpMethod.POST, "/admin/users/{name}/password", r.named((x, name, d) -> {
                    users.setPassword(r.scope(x), name, verifier(d));
                    return Map.of("password", name);
                }))
                .add(HttpMethod.POST, "/admin/users/{name}/tokens", r.named((x, name, d) -> {
                    users.addToken(r.scope(x), name, AdminWork.text(d, "token"), by(d));
                    return Map.of("token", name);
                }))
                .add(HttpMethod.DELETE, "/admin/users/{name}/tokens", r.named((x, name, d) ->
                        Map.of("revoked", users.revokeTokens(r.scope(x), name))))
                .add(HttpMethod.POST, "/admin/grants", r.grant(true))
                .add(HttpMethod.POST, "/admin/grants/revoke", r.grant(false));
    }

    /** Whom the request may reach: the operator (an admin of the node's tenant) every tenant, others their own. */
    private Optional<String> scope(Exchange x) {
        return x.tenant().equals(nodeTenant) ? Optional.empty() : Optional.of(x.tenant());
    }

    /** A tenant the request names: the operator's any, another admin's only its own. */
    private String tenant(Exchange x, String named) {
        if (named == null || named.equals(x.tenant())) {
            return x.tenant();
        }
        if (!x.tenant().equals(nodeTenant)) {
            throw new ThresherException(ErrorCode.PERMISSION_DENIED, "permission denied: an admin of tenant '"
                    + x.tenant() + "' reaches only its own tenant's users");
        }
        return named;
    }

    private void list(Exchange x) {
        QueryStringDecoder q = new QueryStringDecoder(x.uri(), StandardCharsets.UTF_8);
        List<String> tenant = q.parameters().getOrDefault("tenant", List.of());
        boolean all = q.parameters().getOrDefault("all", List.of()).contains("true");
        admin.run(x, HttpResponseStatus.OK, () -> users.list(all ? scope(x)
                : Optional.of(tenant(x, tenant.isEmpty() ? null : tenant.get(0)))));
    }

    private void add(Exchange x) {
        admin.withBody(x, HttpResponseStatus.CREATED, body -> {
            JsonNode d = AdminWork.json(body);
            String name = AdminWork.text(d, "name");
            String tenant = tenant(x, d.path("tenant").isTextual() ? d.path("tenant").asText() : null);
            return Map.of("added", name, "tenant", users.add(tenant, name, verifier(d), d.path("admin").asBoolean(false),
                    by(d)));
        });
    }

    private interface Work {
        Object apply(Exchange x, String name, JsonNode body);
    }

    /** A change of the user the path names, of the request's body (a JSON object, or none). */
    private Exchange.Route named(Work work) {
        return x -> {
            String name = x.capture("name");
            admin.withBody(x, HttpResponseStatus.OK, body -> work.apply(x, name, body.isBlank()
                    ? AdminWork.JSON.createObjectNode() : AdminWork.json(body)));
        };
    }

    private Exchange.Route grant(boolean grant) {
        return x -> admin.withBody(x, HttpResponseStatus.OK, body -> {
            JsonNode d = AdminWork.json(body);
            String user = AdminWork.text(d, "user");
            Grant g = grantOf(d);
            if (grant) {
                users.grant(scope(x), user, g, by(d));
                return Map.of("granted", g.text(), "user", user);
            }
            users.revoke(scope(x), user, g);
            return Map.of("revoked", g.text(), "user", user);
        });
    }

    /**
     * The grant a body names, as structured fields: {@code "privilege"} ({@code call}, {@code deploy} or {@code admin})
     * and, for a call grant of one binding, {@code "binding"} (without it, a call grant covers every binding).
     */
    static Grant grantOf(JsonNode body) {
        String word = AdminWork.text(body, "privilege");
        Privilege privilege = java.util.Arrays.stream(Privilege.values()).filter(p -> p.word().equals(word)).findFirst()
                .orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS, "privilege: call, deploy or admin,"
                        + " not '" + dev.thresher.errors.Quoted.of(word) + "'"));
        JsonNode binding = body.get("binding");
        if (binding == null || binding.isNull()) {
            return Grant.of(privilege);
        }
        if (privilege != Privilege.CALL || !binding.isTextual()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "binding: the name of the one binding a call grant"
                    + " covers (a text), for privilege call only");
        }
        return Grant.call(binding.asText());
    }

    private static Scram.Verifier verifier(JsonNode body) {
        try {
            return Scram.Verifier.parse(AdminWork.text(body, "verifier"));
        } catch (IllegalArgumentException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"verifier\" is not a SCRAM-SHA-256"
                    + " verifier: " + e.getMessage());
        }
    }

    /** Who the change is recorded as made by: the body's {@code "by"}, else {@code http}. */
    private static String by(JsonNode body) {
        return BindingRoutes.by(body);
    }
}
