package dev.thresher.server.admin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.thresher.topology.Host;
import dev.thresher.topology.Leadership;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The topology as one JSON document, byte-stable — keys sorted, partitions and hosts in id order, no time of
 * reading — so the views of two nodes (or a node's and the control database's) can be compared with
 * {@code diff}: same version and same bytes, or a difference that is the divergence. Served as
 * {@code GET /admin/topology} (the node's own cache) and printed by {@code thresher topology show} (the control
 * database).
 *
 * <pre>
 * {"hosts": [{"draining", "id", "shard", "standby": [shard...], "wire"}...],
 *  "partitions": [{"candidates": [host...], "epoch", "id", "leader": {"epoch", "host"} | null, "shard",
 *                  "slots": [lo, hi], "table", "tenant"}...],
 *  "version": n}
 * </pre>
 *
 * Lease expiry times are left out: they move with every renewal, and would make equal views differ.
 */
public final class TopologyView {
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .enable(SerializationFeature.INDENT_OUTPUT)
            .build();

    private TopologyView() {
    }

    public static String render(long version, Topology t) {
        Map<String, Object> root = new TreeMap<>();
        root.put("version", version);
        List<Map<String, Object>> hosts = new ArrayList<>();
        for (Host h : t.hosts().values().stream().sorted(Comparator.comparing(Host::hostId)).toList()) {
            Map<String, Object> m = new TreeMap<>();
            m.put("id", h.hostId());
            m.put("shard", h.shardId());
            m.put("wire", h.wireHost() + ":" + h.wirePort());
            m.put("standby", t.shardsOf(h.hostId()).stream().filter(s -> s != h.shardId()).sorted().toList());
            m.put("draining", t.draining().contains(h.hostId()));
            hosts.add(m);
        }
        root.put("hosts", hosts);
        List<Map<String, Object>> partitions = new ArrayList<>();
        for (Partition p : t.partitions()) {
            Map<String, Object> m = new TreeMap<>();
            m.put("id", p.id());
            m.put("tenant", p.tenant());
            m.put("table", p.table());
            m.put("slots", List.of(p.slotLo(), p.slotHi()));
            m.put("shard", p.shardId());
            m.put("epoch", p.epoch());
            m.put("candidates", t.candidatesOf(p.shardId()).stream().map(dev.thresher.topology.Candidate::hostId).toList());
            Leadership l = t.leaders().get(p.id());
            if (l == null) {
                m.put("leader", null);
            } else {
                Map<String, Object> lm = new TreeMap<>();
                lm.put("host", l.hostId());
                lm.put("epoch", l.epoch());
                m.put("leader", lm);
            }
            partitions.add(m);
        }
        root.put("partitions", partitions);
        try {
            return JSON.writeValueAsString(root) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
