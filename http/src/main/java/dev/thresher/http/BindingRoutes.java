package dev.thresher.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.BindingService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Binding administration and deploys:
 *
 * <pre>
 * GET  /admin/bindings                    each binding's current version
 * POST /admin/bindings                    deploys: {"manifest": {...}, "module": "&lt;base64&gt;"}; 201
 * GET  /admin/bindings/{name}             the current version with its manifest (as JSON, and as stored: manifestText)
 * GET  /admin/bindings/{name}/history     every version
 * POST /admin/bindings/{name}/rollback    {"to": n}
 * </pre>
 *
 * A deploy or rollback records who made it as its body's {@code "by"} when it names someone (the command line sends
 * {@code cli:<its user>}), else as {@code http}.
 *
 * A node without binding administration answers every method on these paths 404.
 */
final class BindingRoutes {
    private final BindingService bindings;
    private final AdminWork admin;

    private BindingRoutes(BindingService bindings, AdminWork admin) {
        this.bindings = bindings;
        this.admin = admin;
    }

    static void register(RouteTable<Exchange.Route> routes, BindingService bindings, AdminWork admin) {
        if (bindings == null || admin == null) {
            AdminWork.notServed(routes, "this node serves no binding administration", "/admin/bindings",
                    "/admin/bindings/{rest...}");
            return;
        }
        BindingRoutes r = new BindingRoutes(bindings, admin);
        routes.add(HttpMethod.GET, "/admin/bindings", r::list)
                .add(HttpMethod.POST, "/admin/bindings", r::deploy)
                .add(HttpMethod.GET, "/admin/bindings/{name}", r::show)
                .add(HttpMethod.GET, "/admin/bindings/{name}/history", r::history)
                .add(HttpMethod.POST, "/admin/bindings/{name}/rollback", r::rollback);
    }

    private void list(Exchange x) {
        admin.withBody(x, HttpResponseStatus.OK, body -> bindings.list(x.tenant()));
    }

    private void deploy(Exchange x) {
        admin.withBody(x, HttpResponseStatus.CREATED, body -> {
            JsonNode d = AdminWork.json(body);
            JsonNode manifest = d.get("manifest");
            if (manifest == null || !(manifest.isObject() || manifest.isTextual())) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"manifest\" (the manifest object) is missing");
            }
            byte[] module;
            try {
                module = java.util.Base64.getDecoder().decode(AdminWork.text(d, "module"));
            } catch (IllegalArgumentException e) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"module\" is not base64: " + e.getMessage());
            }
            byte[] manifestBytes = (manifest.isTextual() ? manifest.asText() : manifest.toString())
                    .getBytes(StandardCharsets.UTF_8);
            return bindings.deploy(x.tenant(), by(d), manifestBytes, module);
        });
    }

    /** Who a change is recorded as made by: the body's {@code "by"} when it names someone, else {@code http}. */
    static String by(JsonNode body) {
        JsonNode by = body.path("by");
        return by.isTextual() && !by.asText().isBlank() ? by.asText() : "http";
    }

    private void rollback(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> {
            JsonNode to = AdminWork.json(body).get("to");
            if (to == null || !to.isInt()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "field \"to\" (a version number) is missing");
            }
            return bindings.rollback(x.tenant(), name, to.asInt(), by(AdminWork.json(body)));
        });
    }

    private void history(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> bindings.history(x.tenant(), name));
    }

    private void show(Exchange x) {
        String name = x.capture("name");
        admin.withBody(x, HttpResponseStatus.OK, body -> {
            List<BindingService.Version> history = bindings.history(x.tenant(), name);
            BindingService.Version current = history.get(history.size() - 1);
            Map<String, Object> shown = new LinkedHashMap<>();
            shown.put("version", current);
            java.util.Optional<String> text = bindings.manifest(current.manifestDigest());
            shown.put("manifest", text.map(m -> {
                try {
                    return (Object) AdminWork.JSON.readTree(m);
                } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                    return m;
                }
            }).orElse(null));
            shown.put("manifestText", text.orElse(null));
            return shown;
        });
    }
}
