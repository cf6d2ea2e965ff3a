package dev.thresher.bench;

import java.util.HashMap;
import java.util.Map;

/** The floor: one loop over the rows held in memory, grouping into a {@link HashMap}, on the client's thread. */
final class JavaLoopPeer implements Peer {
    private final Rows rows;

    JavaLoopPeer(Rows rows) {
        this.rows = rows;
    }

    @Override
    public String name() {
        return "java";
    }

    @Override
    public String description() {
        return "a plain Java loop over the " + rows.size() + " rows in arrays in this JVM, grouped into a HashMap (the floor)";
    }

    @Override
    public Client open(Shape shape, int index) {
        return new Client() {
            @Override
            public Object call() {
                return scan(rows, shape);
            }

            @SuppressWarnings("unchecked")
            @Override
            public Answer answer(Object raw) {
                return Answer.of((Map<String, double[]>) raw);
            }

            @Override
            public void close() {
            }
        };
    }

    static Map<String, double[]> scan(Rows rows, Shape shape) {
        long[] ids = rows.orderIds();
        String[] regions = rows.regions();
        double[] amounts = rows.amounts();
        int buckets = shape.buckets();
        boolean negativeOnly = shape.negativeOnly();
        Map<String, double[]> m = new HashMap<>();
        for (int i = 0; i < ids.length; i++) {
            double amount = amounts[i];
            if (negativeOnly && !(amount < 0)) {
                continue;
            }
            String key = buckets > 0 ? Shape.bucketKey(ids[i] % buckets) : regions[i];
            double[] t = m.get(key);
            if (t == null) {
                t = new double[2];
                m.put(key, t);
            }
            t[0] += amount;
            t[1] += 1;
        }
        return m;
    }
}
