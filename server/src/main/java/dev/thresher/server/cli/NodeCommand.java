package dev.thresher.server.cli;

import dev.thresher.bindings.TopologyService;
import dev.thresher.server.admin.TopologyAdmin;
import dev.thresher.server.dev.ParentWatch;
import dev.thresher.server.node.Node;
import dev.thresher.server.node.NodeConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "node", description = "Run one node against external PostgreSQL databases (-c FILE), or drain one.",
        subcommands = {NodeCommand.Drain.class, NodeCommand.Undrain.class})
final class NodeCommand implements Callable<Integer> {
    @Option(names = {"-c", "--config"}, description = "A properties file (see docs/operations.md).")
    Path config;

    /** Set by {@code thresher dev --processes}: a node process does not outlive the dev process that started it. */
    @Option(names = "--exit-with", hidden = true, description = "Stop (cleanly) when the process with this pid ends.")
    Long exitWith;

    @Command(name = "drain", description = "Stop a node leading partitions: its leases pass to the other candidates of"
            + " their shards (refused when a partition would have none); waits until they did.")
    static final class Drain extends TopologyChangeCommand {
        @Parameters(index = "0", description = "The node's id.")
        String nodeId;

        @Override
        TopologyService.Change change(TopologyAdmin t, String by) {
            return t.drainNode(by, nodeId, dryRun);
        }

        @Override
        String path() {
            return "/admin/nodes/" + segment(nodeId) + "/drain";
        }

        @Override
        Map<String, Object> fields() {
            return Map.of();
        }
    }

    @Command(name = "undrain", description = "Let a drained node lead again; its home shard's partitions return to it"
            + " once it has been live for two leases.")
    static final class Undrain extends TopologyChangeCommand {
        @Parameters(index = "0", description = "The node's id.")
        String nodeId;

        @Override
        TopologyService.Change change(TopologyAdmin t, String by) {
            return t.undrainNode(by, nodeId, dryRun);
        }

        @Override
        String path() {
            return "/admin/nodes/" + segment(nodeId) + "/undrain";
        }

        @Override
        Map<String, Object> fields() {
            return Map.of();
        }
    }

    @Override
    public Integer call() throws Exception {
        if (config == null) {
            System.err.println("thresher node: run one with -c FILE, or: thresher node drain|undrain ID");
            return 2;
        }
        Properties props = new Properties();
        try (InputStream in = Files.newInputStream(config)) {
            props.load(in);
        } catch (IOException e) {
            System.err.println("cannot read " + config + ": " + e.getMessage());
            return 2;
        }
        Map<String, String> map = new HashMap<>();
        props.stringPropertyNames().forEach(k -> map.put(k, props.getProperty(k)));
        NodeConfig nodeConfig;
        try {
            nodeConfig = NodeConfig.fromPropertiesAndEnvironment(map, System.getenv());
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            return 2;
        }
        if (exitWith != null) {
            ParentWatch.exitWith(exitWith);
        }
        Node node = Node.start(nodeConfig);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            node.close();
            stopped.countDown();
        }, "node-shutdown"));
        stopped.await();
        return 0;
    }
}
