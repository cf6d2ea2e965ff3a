package dev.thresher.server.cli;

import dev.thresher.bindings.TopologyService;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import dev.thresher.server.node.TopologyView;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

@Command(name = "topology", description = "The topology: show, and the audit of changes.",
        subcommands = {TopologyCommand.Show.class, TopologyCommand.Changes.class})
final class TopologyCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    @Command(name = "show", description = "The topology as the control database holds it: byte-stable JSON (sorted"
            + " keys), the same document a node serves at GET /admin/topology, so the two can be compared with diff.")
    static final class Show extends AdminCommand {
        @Override
        void run(TableAdmin admin) {
            var control = admin.control();
            long version = control.readTopologyVersion();
            System.out.print(TopologyView.render(version, control.readTopology()));
        }
    }

    @Command(name = "changes", description = "The audit of topology changes, newest first: who, when, what, outcome.")
    static final class Changes extends AdminCommand {
        @Option(names = "--limit", defaultValue = "20", description = "How many (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--steps", description = "Each change's steps too.")
        boolean steps;

        @Override
        void run(TableAdmin admin) {
            for (TopologyService.Change c : new TopologyAdmin(admin, dev.thresher.limits.Limits.DEFAULTS, System.out).changes(limit)) {
                System.out.printf("%6d  %s  %-10s %-20s %s%n", c.changeId(), c.requestedAt(), c.outcome(),
                        c.requestedBy(), c.command());
                if (steps) {
                    c.steps().forEach(s -> System.out.println("        " + s));
                }
            }
        }
    }
}
