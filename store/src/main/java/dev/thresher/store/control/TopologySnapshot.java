package dev.thresher.store.control;

import dev.thresher.topology.Host;
import dev.thresher.topology.Leadership;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Topology;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The cluster's topology as one snapshot of the control database ({@link TopologyStore#readTopology}): the
 * partitions, live and expired leases, the hosts (which are draining) and their candidacies, stamped with the
 * database clock.
 */
final class TopologySnapshot {
    private TopologySnapshot() {
    }

    /** Reads it in the caller's transaction, which this sets to repeatable read. */
    static Topology read(Connection c) throws SQLException {
        c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        Instant now;
        try (PreparedStatement ps = c.prepareStatement("SELECT now()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            now = rs.getTimestamp(1).toInstant();
        }
        List<Partition> partitions = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT partition_id, tenant, table_name, slot_lo, slot_hi, shard_id, epoch FROM partitions");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                partitions.add(new Partition(rs.getInt(1), rs.getString(2), rs.getString(3), rs.getInt(4),
                        rs.getInt(5), rs.getInt(6), rs.getLong(7)));
            }
        }
        List<Leadership> leaders = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT partition_id, host_id, epoch, lease_until FROM partition_leases");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                leaders.add(new Leadership(rs.getInt(1), rs.getString(2), rs.getLong(3), rs.getTimestamp(4).toInstant()));
            }
        }
        List<Host> hosts = new ArrayList<>();
        java.util.Set<String> draining = new java.util.HashSet<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT host_id, shard_id, wire_host, wire_port, draining FROM hosts");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                hosts.add(new Host(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getInt(4)));
                if (rs.getBoolean(5)) {
                    draining.add(rs.getString(1));
                }
            }
        }
        List<dev.thresher.topology.Candidate> candidates = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT host_id, shard_id, home FROM host_shards");
             ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                candidates.add(new dev.thresher.topology.Candidate(rs.getString(1), rs.getInt(2), rs.getBoolean(3)));
            }
        }
        return Topology.of(partitions, leaders, hosts, candidates, draining, now);
    }
}
