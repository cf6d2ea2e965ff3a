package dev.thresher.server.cli;

import dev.thresher.bindings.TopologyService;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import picocli.CommandLine.Option;

/** A topology change: checked, planned only with {@code --dry-run}, audited; prints each step, then the outcome. */
abstract class TopologyChangeCommand extends AdminCommand {
    @Option(names = "--dry-run", description = "Check and plan the change; change nothing.")
    boolean dryRun;

    abstract TopologyService.Change change(TopologyAdmin t, String requestedBy);

    @Override
    final void run(TableAdmin admin) {
        TopologyService.Change c = change(new TopologyAdmin(admin, dev.thresher.limits.Limits.DEFAULTS, System.out),
                System.getProperty("user.name", "unknown") + "@cli");
        System.out.println((c.dryRun() ? "planned (dry run, nothing changed)" : c.outcome()) + ": change "
                + c.changeId() + ", " + c.command());
    }
}
