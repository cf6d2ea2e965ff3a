package dev.thresher.bench;

import java.util.HashMap;
import java.util.Map;

/**
 * The sample rows, column by column, as read back from the shard databases: what the Java loop scans and
 * what Hazelcast is loaded with. Region strings are shared (one instance per region).
 */
record Rows(long[] orderIds, String[] regions, double[] amounts) {
    int size() {
        return orderIds.length;
    }

    static final class Builder {
        private long[] ids = new long[1024];
        private String[] regions = new String[1024];
        private double[] amounts = new double[1024];
        private int n;
        private final Map<String, String> interned = new HashMap<>();

        void add(long id, String region, double amount) {
            if (n == ids.length) {
                ids = java.util.Arrays.copyOf(ids, n * 2);
                regions = java.util.Arrays.copyOf(regions, n * 2);
                amounts = java.util.Arrays.copyOf(amounts, n * 2);
            }
            ids[n] = id;
            regions[n] = interned.computeIfAbsent(region, r -> r);
            amounts[n] = amount;
            n++;
        }

        Rows build() {
            return new Rows(java.util.Arrays.copyOf(ids, n), java.util.Arrays.copyOf(regions, n), java.util.Arrays.copyOf(amounts, n));
        }
    }
}
