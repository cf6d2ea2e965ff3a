package dev.thresher.server.cli;

import dev.thresher.bindings.TopologyService;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

@Command(name = "shard", description = "Shard databases: list, add, remove.",
        subcommands = {ShardCommand.List.class, ShardCommand.Add.class, ShardCommand.Remove.class})
final class ShardCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    @Command(name = "list", description = "Each shard database: id, name, partitions, candidate nodes.")
    static final class List extends AdminCommand {
        @Override
        void run(TableAdmin admin) {
            var t = admin.control().readTopology();
            for (var e : admin.shardNames().entrySet()) {
                int id = e.getKey();
                long partitions = t.partitions().stream().filter(p -> p.shardId() == id).count();
                System.out.printf("%-4d %-20s %4d partitions  candidates %s%n", id, e.getValue(), partitions,
                        t.candidatesOf(id).stream().map(c -> c.hostId() + (c.home() ? " (home)" : ""))
                                .collect(java.util.stream.Collectors.joining(", ", "[", "]")));
            }
        }
    }

    @Command(name = "add", description = "Register a shard database (checked reachable and writable first).")
    static final class Add extends TopologyChangeCommand {
        @Parameters(index = "0", description = "Its JDBC URL (jdbc:postgresql://host:port/db).")
        String url;

        @Option(names = "--name", description = "Its name (default shard-<id>).")
        String name;

        @Override
        TopologyService.Change change(TopologyAdmin t, String by) {
            return t.addShard(by, url, java.util.Optional.ofNullable(name), dryRun);
        }
    }

    @Command(name = "remove", description = "Remove a shard database (refused while it holds partitions or is a"
            + " node's home shard).")
    static final class Remove extends TopologyChangeCommand {
        @Parameters(index = "0", description = "The shard's id or name.")
        String shard;

        @Override
        TopologyService.Change change(TopologyAdmin t, String by) {
            return t.removeShard(by, shard, dryRun);
        }
    }
}
