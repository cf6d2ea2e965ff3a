package dev.thresher.tests;

import dev.thresher.server.dev.DevCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * The real three-node cluster on embedded PostgreSQL, started once per test JVM and shared by the
 * whole-system tests; ports are ephemeral so a developer's {@code ./thresher dev} can keep running.
 */
final class Cluster {
    private static DevCluster cluster;

    /** Limits whose nodes keep leader replicas (off by default): 256 MiB per node. */
    static final dev.thresher.limits.Limits REPLICAS = dev.thresher.limits.Limits.fromProperties(
            Map.of("limits.replicaMemoryBytes", Long.toString(256L << 20)));
    private static dev.thresher.server.admin.TableAdmin admin;

    private Cluster() {}

    static synchronized DevCluster get() throws Exception {
        if (cluster == null) {
            Path dir = Files.createTempDirectory("thresher-it-");
            cluster = DevCluster.start(DevCluster.Options.defaults(dir).withPgwirePort(0));
            Runtime.getRuntime().addShutdownHook(new Thread(cluster::close, "it-cluster-stop"));
        }
        return cluster;
    }

    /**
     * A second three-node cluster like {@link #get()}'s, whose nodes keep leader replicas ({@link #REPLICAS}). The
     * caller closes it when done, so its streams do not load the machine under the tests that follow.
     */
    static DevCluster startReplicated() throws Exception {
        Path dir = Files.createTempDirectory("thresher-it-replicas-");
        return DevCluster.start(DevCluster.Options.defaults(dir).withPgwirePort(0).withLimits(REPLICAS));
    }

    /** A pgwire session on node {@code nodeIndex} of {@code c}. */
    static Connection connect(DevCluster c, int nodeIndex) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        return DriverManager.getConnection("jdbc:postgresql://" + c.nodes().get(nodeIndex).pgwireAddress() + "/thresher", p);
    }

    /** Deploys and rolls back on the cluster as its admin commands do; one control-database pool shared by the tests. */
    static synchronized dev.thresher.server.admin.BindingAdmin bindings() throws Exception {
        return new dev.thresher.server.admin.BindingAdmin(tables(), dev.thresher.limits.Limits.DEFAULTS);
    }

    /** The tests' table admin of the shared cluster (its pools), opened once. */
    static synchronized dev.thresher.server.admin.TableAdmin tables() throws Exception {
        if (admin == null) {
            DevCluster c = get();
            admin = new dev.thresher.server.admin.TableAdmin(c.controlUrl(), DevCluster.USER, DevCluster.PASSWORD,
                    new java.io.PrintStream(java.io.PrintStream.nullOutputStream()));
            Runtime.getRuntime().addShutdownHook(new Thread(admin::close, "it-admin-close"));
        }
        return admin;
    }

    static Connection connect(int nodeIndex) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        return DriverManager.getConnection("jdbc:postgresql://" + get().nodes().get(nodeIndex).pgwireAddress() + "/thresher", p);
    }

    /** Revenue by region straight from the shard databases: the SQL reference a call must equal. */
    static Map<String, double[]> sqlReference() throws Exception {
        return sqlReference(get());
    }

    /** Revenue by region straight from the shard databases of {@code c} (three of them). */
    static Map<String, double[]> sqlReference(DevCluster c) {
        Map<String, double[]> total = new TreeMap<>();
        for (int shard = 1; shard <= c.options().shards(); shard++) {
            try (Connection conn = DriverManager.getConnection(c.shardUrl(shard), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = conn.createStatement();
                 ResultSet rs = s.executeQuery("SELECT region, sum(amount), count(*) FROM orders GROUP BY region")) {
                while (rs.next()) {
                    double[] t = total.computeIfAbsent(rs.getString(1), k -> new double[2]);
                    t[0] += rs.getDouble(2);
                    t[1] += rs.getLong(3);
                }
            } catch (SQLException e) {
                throw new AssertionError("shard " + shard + " unreadable", e);
            }
        }
        return total;
    }

    /** What differs between a result of the sample binding and the SQL reference, or null. */
    static String differs(com.fasterxml.jackson.databind.JsonNode result, Map<String, double[]> reference) {
        if (result.size() != reference.size()) {
            return "regions " + result.size() + " != " + reference.size();
        }
        for (var e : reference.entrySet()) {
            com.fasterxml.jackson.databind.JsonNode r = result.get(e.getKey());
            if (r == null) {
                return "missing region " + e.getKey();
            }
            if (r.get("count").asLong() != (long) e.getValue()[1]) {
                return e.getKey() + " count " + r.get("count") + " != " + (long) e.getValue()[1];
            }
            double sum = r.get("sum").asDouble();
            if (Math.abs(sum - e.getValue()[0]) > Math.abs(e.getValue()[0]) * 1e-9) {
                return e.getKey() + " sum " + sum + " != " + e.getValue()[0];
            }
        }
        return null;
    }
}
