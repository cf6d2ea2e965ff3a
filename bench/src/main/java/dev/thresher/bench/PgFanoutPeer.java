package dev.thresher.bench;

import dev.thresher.server.dev.DevCluster;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * PostgreSQL's own GROUP BY over the shard databases Thresher reads, in parallel: each client holds one
 * connection and one prepared query per shard; a call runs every shard's query at once (the first on the
 * client's thread, the others on virtual threads) and merges the groups in Java.
 */
final class PgFanoutPeer implements Peer {
    private final List<String> shardUrls;
    private final ExecutorService fanout = Executors.newVirtualThreadPerTaskExecutor();

    PgFanoutPeer(List<String> shardUrls) {
        this.shardUrls = List.copyOf(shardUrls);
    }

    @Override
    public String name() {
        return "pg-fanout";
    }

    @Override
    public String description() {
        return "PostgreSQL GROUP BY on each of the " + shardUrls.size()
                + " shard databases in parallel (one pgjdbc prepared query per shard per call), merged in Java";
    }

    @Override
    public Client open(Shape shape, int index) throws Exception {
        List<Connection> connections = new ArrayList<>();
        List<PreparedStatement> statements = new ArrayList<>();
        for (String url : shardUrls) {
            Connection c = DriverManager.getConnection(url, DevCluster.USER, DevCluster.PASSWORD);
            connections.add(c);
            statements.add(c.prepareStatement(shape.sql()));
        }
        return new Client() {
            @Override
            public Object call() throws Exception {
                List<Future<Map<String, double[]>>> others = new ArrayList<>(statements.size() - 1);
                for (int i = 1; i < statements.size(); i++) {
                    PreparedStatement s = statements.get(i);
                    others.add(fanout.submit(() -> groups(s, shape)));
                }
                Map<String, double[]> merged = groups(statements.get(0), shape);
                for (Future<Map<String, double[]>> f : others) {
                    f.get().forEach((k, v) -> {
                        double[] t = merged.get(k);
                        if (t == null) {
                            merged.put(k, v);
                        } else {
                            t[0] += v[0];
                            t[1] += v[1];
                        }
                    });
                }
                return merged;
            }

            @SuppressWarnings("unchecked")
            @Override
            public Answer answer(Object raw) {
                return Answer.of((Map<String, double[]>) raw);
            }

            @Override
            public void close() throws SQLException {
                for (Connection c : connections) {
                    c.close();
                }
            }
        };
    }

    /** Runs one prepared GROUP BY: {@code key -> {sum, count}}. */
    static Map<String, double[]> groups(PreparedStatement s, Shape shape) throws SQLException {
        Map<String, double[]> m = new HashMap<>();
        try (ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                String key = shape.buckets() > 0 ? Shape.bucketKey(rs.getLong(1)) : rs.getString(1);
                m.put(key, new double[] {rs.getDouble(2), rs.getLong(3)});
            }
        }
        return m;
    }

    @Override
    public void close() {
        fanout.shutdownNow();
    }
}
