package dev.thresher.server.cli;

import java.util.Map;
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
    static final class Show extends NodeAdminCommand {
        @Override
        void run(AdminClient node) throws Exception {
            System.out.print(node.getText("/admin/topology/control"));
        }
    }

    @Command(name = "changes", description = "The audit of topology changes, newest first: who, when, what, outcome.")
    static final class Changes extends NodeAdminCommand {
        @Option(names = "--limit", defaultValue = "20", description = "How many (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--steps", description = "Each change's steps too.")
        boolean steps;

        @Override
        void run(AdminClient node) throws Exception {
            for (var c : node.get("/admin/topology/changes", Map.of("limit", Integer.toString(limit)))) {
                System.out.printf("%6d  %s  %-10s %-20s %s%n", c.path("changeId").asLong(), c.path("requestedAt").asText(),
                        c.path("outcome").asText(), c.path("requestedBy").asText(), c.path("command").asText());
                if (steps) {
                    c.path("steps").forEach(s -> System.out.println("        " + s.asText()));
                }
            }
        }
    }
}
