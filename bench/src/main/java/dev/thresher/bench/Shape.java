package dev.thresher.bench;

/**
 * What one call computes, written once per peer: the Thresher binding, the PostgreSQL and Hazelcast SQL
 * queries, and the grouping the Java loop and the Hazelcast aggregator apply. Every shape answers
 * {@code key -> (sum of amount, count of rows)}.
 *
 * @param name the shape's name in the report
 * @param binding the Thresher binding called with {@code CALL BINDING <binding>('{}')}
 * @param sql PostgreSQL's query: column 1 the group (text, or a bucket number when {@code buckets > 0}),
 *        column 2 {@code sum(amount)}, column 3 {@code count(*)}
 * @param hazelcastSql the same query in Hazelcast SQL over the mapping {@code orders}
 * @param buckets 0 to group by region; otherwise group by {@code order_id % buckets}, keys {@code b00, b01, ...}
 * @param negativeOnly only rows with {@code amount < 0} (there are none: the near-empty call)
 */
record Shape(String name, String binding, String sql, String hazelcastSql, int buckets, boolean negativeOnly) {
    static final String NEAR_EMPTY_BINDING = "bench_near_empty";
    static final String NEAR_EMPTY_SELECTOR = "SELECT region, amount FROM orders WHERE amount < 0";
    static final String CAPS_BINDING = "bench_caps";
    static final String CAPS_SELECTOR = "SELECT order_id, amount FROM orders";

    /** The sample component under a second binding whose selector matches no row. */
    static Shape nearEmpty() {
        return new Shape("near-empty", NEAR_EMPTY_BINDING,
                "SELECT region, sum(amount), count(*) FROM orders WHERE amount < 0 GROUP BY region",
                "SELECT region, SUM(amount), COUNT(*) FROM orders WHERE amount < 0 GROUP BY region", 0, true);
    }

    /** The sample binding, revenue and orders per region. */
    static Shape byRegion(String sampleBinding) {
        return new Shape("groupby", sampleBinding,
                "SELECT region, sum(amount), count(*) FROM orders GROUP BY region",
                "SELECT region, SUM(amount), COUNT(*) FROM orders GROUP BY region", 0, false);
    }

    /** Revenue and orders per bucket of order id, with as many buckets as fill the partial caps. */
    static Shape byBucket(int buckets) {
        return new Shape("caps", CAPS_BINDING,
                "SELECT order_id % " + buckets + ", sum(amount), count(*) FROM orders GROUP BY 1",
                "SELECT order_id % " + buckets + ", SUM(amount), COUNT(*) FROM orders GROUP BY order_id % " + buckets,
                buckets, false);
    }

    /** Buckets per partition that make every shard run emit up to the caps: 2 partials per bucket. */
    static int capsBuckets(int partitions, int emitsPerInvocation, int mergedEntries) {
        int perPartition = Math.min(emitsPerInvocation, mergedEntries / partitions) / 2;
        return Math.max(1, Math.min(32, perPartition));
    }

    /** The group key of bucket {@code b}: {@code b00} .. {@code b31}, so byte order is numeric order. */
    static String bucketKey(long b) {
        return b >= 0 && b < BUCKET_KEYS.length ? BUCKET_KEYS[(int) b] : "b" + b;
    }

    private static final String[] BUCKET_KEYS = new String[100];

    static {
        for (int i = 0; i < BUCKET_KEYS.length; i++) {
            BUCKET_KEYS[i] = i < 10 ? "b0" + i : "b" + i;
        }
    }
}
