package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.TopologyService;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * A topology change, made by a node's topology routes (or, with {@code --control-url}, on the control database from
 * this process): checked, planned only with {@code --dry-run}, audited as made by {@code <user>@cli}; prints the
 * change's steps, then the outcome.
 */
abstract class TopologyChangeCommand extends NodeAdminCommand {
    @Option(names = "--dry-run", description = "Check and plan the change; change nothing.")
    boolean dryRun;

    /** The route of the change ({@code POST}). */
    abstract String path();

    /** The change's own fields of the request's body. */
    abstract Map<String, Object> fields();

    @CommandLine.Mixin
    ControlDatabaseOptions control;

    /** The change as the control database's own admin makes it, for {@code --control-url}. */
    abstract TopologyService.Change change(TopologyAdmin t, String requestedBy);

    /**
     * With {@code --control-url}, the change made on the control database directly, in this process, its steps
     * printed as they happen: for when no node runs yet (registering the first shard databases); null to ask a node.
     */
    private TopologyService.Change direct(String requestedBy) {
        if (!control.given()) {
            return null;
        }
        try (TableAdmin admin = control.admin()) {
            return change(new TopologyAdmin(admin, Limits.DEFAULTS, System.out), requestedBy);
        }
    }

    @Override
    final void run(AdminClient node) throws Exception {
        String by = System.getProperty("user.name", "unknown") + "@cli";
        TopologyService.Change made = direct(by);
        if (made != null) {
            System.out.println((made.dryRun() ? "planned (dry run, nothing changed)" : made.outcome()) + ": change "
                    + made.changeId() + ", " + made.command());
            return;
        }
        Map<String, Object> body = new LinkedHashMap<>(fields());
        body.put("dryRun", dryRun);
        body.put("by", by);
        JsonNode c = node.post(path(), body);
        c.path("steps").forEach(s -> System.out.println(s.asText()));
        System.out.println((c.path("dryRun").asBoolean() ? "planned (dry run, nothing changed)" : c.path("outcome").asText())
                + ": change " + c.path("changeId").asLong() + ", " + c.path("command").asText());
    }

    static String segment(String s) {
        return AdminClient.segment(s);
    }
}
