package dev.thresher.server.cli;

import dev.thresher.bindings.TopologyService;
import dev.thresher.server.admin.TopologyAdmin;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

@Command(name = "leader", description = "Partition leadership: transfer.", subcommands = {LeaderCommand.Transfer.class})
final class LeaderCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    @Command(name = "transfer", description = "Hand a partition's leadership to another live candidate of its shard;"
            + " waits until it leads.")
    static final class Transfer extends TopologyChangeCommand {
        @Parameters(index = "0", description = "The partition's id.")
        int partition;

        @Option(names = "--to", required = true, description = "The node to lead it.")
        String to;

        @Override
        TopologyService.Change change(TopologyAdmin t, String by) {
            return t.transferLeader(by, partition, to, dryRun);
        }

        @Override
        String path() {
            return "/admin/partitions/" + partition + "/leader";
        }

        @Override
        Map<String, Object> fields() {
            return Map.of("to", to);
        }
    }
}
