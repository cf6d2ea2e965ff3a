package dev.thresher.bench;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.config.SerializationConfig;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * An embedded Hazelcast cluster of {@value #MEMBERS} members in this JVM, on loopback only (bound to
 * 127.0.0.1, multicast and auto-detection off, TCP-IP join over the three members' own ports, phone-home
 * off), holding the rows in {@code IMap<Long, BenchOrder> orders} (compact values, one synchronous backup:
 * the default). The peers call it through one Hazelcast client over loopback TCP, as the other peers are
 * called over pgwire. Jet is on, for Hazelcast SQL.
 */
final class HazelcastCluster implements AutoCloseable {
    static final int MEMBERS = 3;
    static final String MAP = "orders";

    private final List<HazelcastInstance> members = new ArrayList<>();
    private HazelcastInstance client;
    private String sqlProblem;

    static {
        // Read by every member and client when it starts; set before any of them does.
        System.setProperty("hazelcast.phone.home.enabled", "false");
        System.setProperty("hazelcast.logging.type", "slf4j");
    }

    static HazelcastCluster start(Rows rows) throws IOException {
        HazelcastCluster h = new HazelcastCluster();
        try {
            h.startAll(rows);
            return h;
        } catch (RuntimeException | IOException e) {
            h.close();
            throw e;
        }
    }

    private void startAll(Rows rows) throws IOException {
        String clusterName = "thresher-bench-" + UUID.randomUUID().toString().substring(0, 8);
        List<Integer> ports = freePorts(MEMBERS);
        List<String> addresses = ports.stream().map(p -> "127.0.0.1:" + p).toList();
        for (int i = 0; i < MEMBERS; i++) {
            members.add(Hazelcast.newHazelcastInstance(memberConfig(clusterName, ports.get(i), addresses, i)));
        }
        ClientConfig cc = new ClientConfig();
        cc.setClusterName(clusterName);
        cc.setInstanceName("bench-client");
        cc.setProperty("hazelcast.phone.home.enabled", "false");
        cc.setProperty("hazelcast.logging.type", "slf4j");
        cc.getNetworkConfig().setAddresses(new ArrayList<>(addresses));
        serialization(cc.getSerializationConfig());
        client = HazelcastClient.newHazelcastClient(cc);
        load(rows);
        try {
            client.getSql().execute("CREATE OR REPLACE MAPPING " + MAP
                    + " (__key BIGINT, order_id BIGINT, region VARCHAR, amount DOUBLE) TYPE IMap OPTIONS ("
                    + "'keyFormat'='bigint', 'valueFormat'='compact', 'valueCompactTypeName'='" + BenchOrder.Serializer.TYPE_NAME
                    + "')").close();
        } catch (RuntimeException e) {
            sqlProblem = e.toString();
        }
    }

    private static Config memberConfig(String clusterName, int port, List<String> addresses, int index) {
        Config cfg = new Config();
        cfg.setClusterName(clusterName);
        cfg.setInstanceName("bench-member-" + (index + 1));
        cfg.setProperty("hazelcast.phone.home.enabled", "false");
        cfg.setProperty("hazelcast.logging.type", "slf4j");
        cfg.setProperty("hazelcast.shutdownhook.enabled", "false");
        cfg.setProperty("hazelcast.socket.bind.any", "false");
        cfg.setProperty("hazelcast.wait.seconds.before.join", "0");
        cfg.setProperty("hazelcast.max.wait.seconds.before.join", "0");
        NetworkConfig net = cfg.getNetworkConfig();
        net.setPort(port).setPortAutoIncrement(false);
        net.getInterfaces().setEnabled(true).addInterface("127.0.0.1");
        JoinConfig join = net.getJoin();
        join.getMulticastConfig().setEnabled(false);
        join.getAutoDetectionConfig().setEnabled(false);
        join.getTcpIpConfig().setEnabled(true).setMembers(new ArrayList<>(addresses));
        cfg.getJetConfig().setEnabled(true).setResourceUploadEnabled(false);
        serialization(cfg.getSerializationConfig());
        return cfg;
    }

    private static void serialization(SerializationConfig s) {
        s.getCompactSerializationConfig().addSerializer(new BenchOrder.Serializer());
        s.addDataSerializableFactory(GroupByAggregator.FACTORY_ID, new GroupByAggregator.Factory());
    }

    private void load(Rows rows) {
        IMap<Long, BenchOrder> map = orders();
        Map<Long, BenchOrder> batch = new HashMap<>();
        for (int i = 0; i < rows.size(); i++) {
            batch.put(rows.orderIds()[i], new BenchOrder(rows.orderIds()[i], rows.regions()[i], rows.amounts()[i]));
            if (batch.size() == 10_000) {
                map.putAll(batch);
                batch.clear();
            }
        }
        map.putAll(batch);
        if (map.size() != rows.size()) {
            throw new IllegalStateException("Hazelcast holds " + map.size() + " orders, expected " + rows.size());
        }
    }

    IMap<Long, BenchOrder> orders() {
        return client.getMap(MAP);
    }

    HazelcastInstance client() {
        return client;
    }

    /** Why Hazelcast SQL cannot be used, or null when it can. */
    String sqlProblem() {
        return sqlProblem;
    }

    static String version() {
        String v = HazelcastInstance.class.getPackage().getImplementationVersion();
        return v != null ? v : com.hazelcast.instance.BuildInfoProvider.getBuildInfo().getVersion();
    }

    private static List<Integer> freePorts(int n) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket();
                s.bind(new InetSocketAddress("127.0.0.1", 0));
                held.add(s);
                ports.add(s.getLocalPort());
            }
            return ports;
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
    }

    @Override
    public void close() {
        // Members shutting down one after the other warn about each other (connections refused, SQL state checks).
        BenchMain.setLevel("com.hazelcast", ch.qos.logback.classic.Level.ERROR);
        if (client != null) {
            try {
                client.shutdown();
            } catch (RuntimeException e) {
                System.err.println("hazelcast client: shutdown failed (" + e + ")");
            }
            client = null;
        }
        for (int i = members.size() - 1; i >= 0; i--) {
            HazelcastInstance member = members.get(i);
            try {
                member.shutdown();
            } catch (RuntimeException e) {
                // A member's graceful shutdown can throw while the others are going too (Jet's notice to members it
                // still lists, "Connecting to self!"): the measurements are done, so it is stopped outright instead.
                System.err.println("hazelcast member " + i + ": graceful shutdown failed (" + e + "); terminated");
                try {
                    member.getLifecycleService().terminate();
                } catch (RuntimeException again) {
                    System.err.println("hazelcast member " + i + ": terminate failed too (" + again + ")");
                }
            }
        }
        members.clear();
    }
}
