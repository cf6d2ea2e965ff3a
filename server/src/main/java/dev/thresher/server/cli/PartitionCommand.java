package dev.thresher.server.cli;

import dev.thresher.bindings.TopologyService;
import dev.thresher.server.admin.TopologyAdmin;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

@Command(name = "partition", description = "Move or split a partition.",
        subcommands = {PartitionCommand.Split.class, PartitionCommand.Move.class})
final class PartitionCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    @Command(name = "split", description = "Split a partition in two on its shard (no row moves): the new partition"
            + " starts at --at (default: the middle slot); both move to a new epoch, led by the same node.")
    static final class Split extends TopologyChangeCommand {
        @Parameters(index = "0", description = "The partition's id.")
        int partition;

        @Option(names = "--at", description = "The first slot of the new partition.")
        Integer at;

        @Override
        TopologyService.Change change(TopologyAdmin t, String by) {
            return t.splitPartition(by, partition, at == null ? java.util.OptionalInt.empty()
                    : java.util.OptionalInt.of(at), dryRun);
        }

        @Override
        String path() {
            return "/admin/partitions/" + partition + "/split";
        }

        @Override
        Map<String, Object> fields() {
            return at == null ? Map.of() : Map.of("at", at);
        }
    }

    @Command(name = "move", description = "Move a partition to another shard database: copy, verify (count and"
            + " checksum), cut over to a new epoch, remove the source rows. Asked again, an interrupted move resumes.")
    static final class Move extends TopologyChangeCommand {
        @Parameters(index = "0", description = "The partition's id.")
        int partition;

        @Option(names = "--to", required = true, description = "The target shard's id or name.")
        String to;

        @Override
        TopologyService.Change change(TopologyAdmin t, String by) {
            return t.movePartition(by, partition, to, dryRun);
        }

        @Override
        String path() {
            return "/admin/partitions/" + partition + "/move";
        }

        @Override
        Map<String, Object> fields() {
            return Map.of("to", to);
        }
    }
}
