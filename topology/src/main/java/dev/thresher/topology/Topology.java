package dev.thresher.topology;

import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * One consistent read of the topology: partitions, leaders, hosts, the shard databases each host is a
 * candidate for and the hosts draining, as of {@code readAt} (the control database's clock).
 */
public record Topology(List<Partition> partitions, Map<Integer, Leadership> leaders, Map<String, Host> hosts,
                       Instant readAt, List<Candidate> candidates, java.util.Set<String> draining) {
    public Topology {
        partitions = partitions.stream().sorted(Comparator.comparingInt(Partition::id)).toList();
        leaders = Map.copyOf(leaders);
        hosts = Map.copyOf(hosts);
        candidates = candidates.stream().sorted(Comparator.comparingInt(Candidate::shardId)
                .thenComparing(c -> !c.home()).thenComparing(Candidate::hostId)).toList();
        draining = java.util.Set.copyOf(draining);
    }

    /** A topology whose hosts are each the one (home) candidate of their own shard, none draining. */
    public Topology(List<Partition> partitions, Map<Integer, Leadership> leaders, Map<String, Host> hosts,
                    Instant readAt) {
        this(partitions, leaders, hosts, readAt,
                hosts.values().stream().map(h -> new Candidate(h.hostId(), h.shardId(), true)).toList(),
                java.util.Set.of());
    }

    public static Topology of(List<Partition> partitions, List<Leadership> leaders, List<Host> hosts,
                              List<Candidate> candidates, java.util.Set<String> draining, Instant readAt) {
        return new Topology(partitions,
                leaders.stream().collect(Collectors.toMap(Leadership::partitionId, Function.identity())),
                hosts.stream().collect(Collectors.toMap(Host::hostId, Function.identity())), readAt, candidates,
                draining);
    }

    /** The candidates of a shard database, home candidates first. */
    public List<Candidate> candidatesOf(int shardId) {
        return candidates.stream().filter(c -> c.shardId() == shardId).toList();
    }

    /** The shard databases a host is a candidate for, its home shard first. */
    public List<Integer> shardsOf(String hostId) {
        return candidates.stream().filter(c -> c.hostId().equals(hostId))
                .sorted(Comparator.comparing((Candidate c) -> !c.home()).thenComparingInt(Candidate::shardId))
                .map(Candidate::shardId).toList();
    }

    public static Topology of(List<Partition> partitions, List<Leadership> leaders, List<Host> hosts, Instant readAt) {
        return new Topology(partitions,
                leaders.stream().collect(Collectors.toMap(Leadership::partitionId, Function.identity())),
                hosts.stream().collect(Collectors.toMap(Host::hostId, Function.identity())), readAt);
    }

    /** The partitions of one table, in slot order. */
    public List<Partition> partitionsOf(String tenant, String table) {
        return partitions.stream()
                .filter(p -> p.tenant().equals(tenant) && p.table().equals(table))
                .sorted(Comparator.comparingInt(Partition::slotLo))
                .toList();
    }

    public Optional<Partition> partition(int id) {
        return partitions.stream().filter(p -> p.id() == id).findFirst();
    }

    /** The live leader of a partition under its current epoch, if any. */
    public Optional<Host> leaderOf(Partition p) {
        Leadership l = leaders.get(p.id());
        if (l == null || l.epoch() != p.epoch() || !l.leaseUntil().isAfter(readAt)) {
            return Optional.empty();
        }
        return Optional.ofNullable(hosts.get(l.hostId()));
    }
}
