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
 * The floor of any design that reads a call's rows out of PostgreSQL: each shard database sends every row
 * the binding's selector selects (the selector's own columns, one pgjdbc prepared query per shard, all shards
 * in parallel, numbers in binary once prepared), and the rows are grouped in a Java loop. No partition
 * ranges, no guest, no coordination: what is left is the rows leaving the database, which a Thresher call
 * pays on top of everything else, and which PostgreSQL's own GROUP BY never pays.
 */
final class PgRowsPeer implements Peer {
    private final List<String> shardUrls;
    private final ExecutorService fanout = Executors.newVirtualThreadPerTaskExecutor();

    PgRowsPeer(List<String> shardUrls) {
        this.shardUrls = List.copyOf(shardUrls);
    }

    @Override
    public String name() {
        return "pg-rows";
    }

    @Override
    public String description() {
        return "the selector's rows read out of each of the " + shardUrls.size()
                + " shard databases in parallel (one pgjdbc prepared SELECT per shard per call), grouped in Java: the cost"
                + " of rows leaving PostgreSQL, which every Thresher call pays";
    }

    /** The rows a binding of {@code shape} selects: column 1 the group (region, or order id), column 2 the amount. */
    static String rowsSql(Shape shape) {
        return (shape.buckets() > 0 ? "SELECT order_id, amount FROM orders" : "SELECT region, amount FROM orders")
                + (shape.negativeOnly() ? " WHERE amount < 0" : "");
    }

    @Override
    public Client open(Shape shape, int index) throws Exception {
        List<Connection> connections = new ArrayList<>();
        List<PreparedStatement> statements = new ArrayList<>();
        for (String url : shardUrls) {
            Connection c = DriverManager.getConnection(url, DevCluster.USER, DevCluster.PASSWORD);
            connections.add(c);
            statements.add(c.prepareStatement(rowsSql(shape)));
        }
        return new Client() {
            @Override
            public Object call() throws Exception {
                List<Future<Map<String, double[]>>> others = new ArrayList<>(statements.size() - 1);
                for (int i = 1; i < statements.size(); i++) {
                    PreparedStatement s = statements.get(i);
                    others.add(fanout.submit(() -> grouped(s, shape)));
                }
                Map<String, double[]> merged = grouped(statements.get(0), shape);
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

    /** Reads every selected row of one shard and groups it: {@code key -> {sum, count}}. */
    private static Map<String, double[]> grouped(PreparedStatement s, Shape shape) throws SQLException {
        Map<String, double[]> m = new HashMap<>();
        try (ResultSet rs = s.executeQuery()) {
            while (rs.next()) {
                String key = shape.buckets() > 0 ? Shape.bucketKey(rs.getLong(1) % shape.buckets()) : rs.getString(1);
                double[] t = m.computeIfAbsent(key, k -> new double[2]);
                t[0] += rs.getDouble(2);
                t[1] += 1;
            }
        }
        return m;
    }

    @Override
    public void close() {
        fanout.shutdownNow();
    }
}
