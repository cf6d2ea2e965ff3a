package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.server.admin.BindingAdmin;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code thresher deploy DIR}: the package read here, deployed through the node's {@code POST /admin/bindings}. */
@Command(name = "deploy", description = "Deploy a component package: DIR holds thresher.json (the manifest) and the"
        + " module it names; everything is checked before anything is stored.")
final class DeployCommand extends NodeAdminCommand {
    @Parameters(index = "0", description = "The package directory.")
    Path dir;

    @Override
    void run(AdminClient node) throws Exception {
        BindingAdmin.Package p = BindingAdmin.read(dir, dev.thresher.limits.Limits.DEFAULTS);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("manifest", new String(p.manifest(), StandardCharsets.UTF_8));
        body.put("module", Base64.getEncoder().encodeToString(p.module()));
        body.put("by", operator());
        JsonNode d = node.post("/admin/bindings", body);
        System.out.printf("%s %s version %d%n  package  %s%n  manifest %s%n",
                d.path("unchanged").asBoolean() ? "unchanged:" : "deployed", d.path("binding").asText(),
                d.path("version").asInt(), d.path("packageDigest").asText(), d.path("manifestDigest").asText(null));
    }
}
