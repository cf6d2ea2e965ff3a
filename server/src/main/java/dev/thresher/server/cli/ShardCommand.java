package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.bindings.TopologyService;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.TopologyAdmin;
import java.util.Map;
import java.util.Optional;
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
    static final class List extends NodeAdminCommand {
        @CommandLine.Mixin
        ControlDatabaseOptions control;

        @Override
        void run(AdminClient node) throws Exception {
            if (control.given()) {
                try (TableAdmin admin = control.admin()) {
                    print(AdminClient.JSON.valueToTree(new TopologyAdmin(admin, Limits.DEFAULTS, System.out).shards()));
                }
            } else {
                print(node.get("/admin/shards", Map.of()));
            }
        }

        private static void print(JsonNode shards) {
            for (var shard : shards) {
                java.util.List<String> candidates = new java.util.ArrayList<>();
                shard.path("candidates").forEach(c -> candidates.add(c.path("host").asText()
                        + (c.path("home").asBoolean() ? " (home)" : "")));
                System.out.printf("%-4d %-20s %4d partitions  candidates %s%n", shard.path("id").asInt(),
                        shard.path("name").asText(), shard.path("partitions").asInt(),
                        "[" + String.join(", ", candidates) + "]");
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
            return t.addShard(by, url, Optional.ofNullable(name), dryRun);
        }

        @Override
        String path() {
            return "/admin/shards";
        }

        @Override
        Map<String, Object> fields() {
            return name == null ? Map.of("url", url) : Map.of("url", url, "name", name);
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

        @Override
        String path() {
            return "/admin/shards/" + segment(shard) + "/remove";
        }

        @Override
        Map<String, Object> fields() {
            return Map.of();
        }
    }
}
