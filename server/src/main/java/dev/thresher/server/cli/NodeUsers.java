package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Scram;
import dev.thresher.bindings.access.UserService;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@link UserService} through a node's {@code /admin/users} and {@code /admin/grants} routes. The node decides whose
 * users a request reaches (the operator's admin token: every tenant's), so the {@code tenant} of a change by name is
 * not sent; a tenant to add to or list is, when given.
 */
final class NodeUsers implements UserService {
    private final AdminClient node;

    NodeUsers(AdminClient node) {
        this.node = node;
    }

    private interface Request {
        JsonNode send() throws IOException, InterruptedException;
    }

    private static JsonNode call(Request r) {
        try {
            return r.send();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static String path(String name) {
        return "/admin/users/" + AdminClient.segment(name);
    }

    @Override
    public String add(String tenant, String name, Scram.Verifier verifier, boolean admin, String by) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("name", name);
        body.put("verifier", verifier.text());
        if (tenant != null) {
            body.put("tenant", tenant);
        }
        body.put("admin", admin);
        body.put("by", by);
        return call(() -> node.post("/admin/users", body)).path("tenant").asText();
    }

    @Override
    public void remove(Optional<String> tenant, String name) {
        call(() -> node.delete(path(name)));
    }

    @Override
    public List<User> list(Optional<String> tenant) {
        Map<String, String> query = new LinkedHashMap<>();
        if (tenant.isPresent()) {
            query.put("tenant", tenant.get());
        } else {
            query.put("all", "true");
        }
        List<User> users = new ArrayList<>();
        for (JsonNode u : call(() -> node.get("/admin/users", query))) {
            List<String> grants = new ArrayList<>();
            u.path("grants").forEach(g -> grants.add(g.asText()));
            users.add(new User(u.path("name").asText(), u.path("tenant").asText(), grants, u.path("tokens").asInt()));
        }
        return users;
    }

    @Override
    public void setPassword(Optional<String> tenant, String name, Scram.Verifier verifier) {
        call(() -> node.post(path(name) + "/password", Map.of("verifier", verifier.text())));
    }

    @Override
    public void addToken(Optional<String> tenant, String name, String token, String by) {
        call(() -> node.post(path(name) + "/tokens", Map.of("token", token, "by", by)));
    }

    @Override
    public int revokeTokens(Optional<String> tenant, String name) {
        return call(() -> node.delete(path(name) + "/tokens")).path("revoked").asInt();
    }

    @Override
    public void grant(Optional<String> tenant, String user, Grant grant, String by) {
        Map<String, String> body = new java.util.HashMap<>(grantBody(user, grant));
        body.put("by", by);
        call(() -> node.post("/admin/grants", body));
    }

    /** A grant as the route takes it: its privilege's word and, for a call grant of one binding, the binding. */
    private static Map<String, String> grantBody(String user, Grant grant) {
        Map<String, String> body = new java.util.HashMap<>(Map.of("user", user, "privilege", grant.privilege().word()));
        grant.binding().ifPresent(b -> body.put("binding", b));
        return body;
    }

    @Override
    public void revoke(Optional<String> tenant, String user, Grant grant) {
        call(() -> node.post("/admin/grants/revoke", grantBody(user, grant)));
    }
}
