package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.Selector;
import dev.thresher.topology.Host;
import dev.thresher.topology.Leadership;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Topologies and bindings for the coordinator's pure tests. */
final class Plans {
    static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");
    static final Binding BINDING = new Binding("t", "b", 1, "sha256:" + "ab".repeat(32),
            Selector.parse("SELECT region, amount FROM orders"));

    private Plans() {}

    /** {@code n} partitions of orders over 3 hosts, each led live under its epoch. */
    static Topology topology(int n) {
        List<Partition> partitions = new ArrayList<>();
        List<Leadership> leaders = new ArrayList<>();
        List<Host> hosts = List.of(new Host("h1", 1, "127.0.0.1", 1001), new Host("h2", 2, "127.0.0.1", 1002),
                new Host("h3", 3, "127.0.0.1", 1003));
        int width = 16384 / n;
        for (int i = 0; i < n; i++) {
            int lo = i * width;
            int hi = i == n - 1 ? 16383 : lo + width - 1;
            // Ids deliberately not in slot order, so slot order is visibly the planner's choice.
            Partition p = new Partition(100 - i, "t", "orders", lo, hi, i % 3 + 1, 7);
            partitions.add(p);
            leaders.add(new Leadership(p.id(), "h" + (i % 3 + 1), 7, NOW.plusSeconds(30)));
        }
        return Topology.of(partitions, leaders, hosts, NOW);
    }
}
