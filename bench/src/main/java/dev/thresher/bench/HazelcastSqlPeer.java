package dev.thresher.bench;

import com.hazelcast.sql.SqlResult;
import com.hazelcast.sql.SqlRow;
import com.hazelcast.sql.SqlService;
import java.util.HashMap;
import java.util.Map;

/** Hazelcast SQL (module {@code hazelcast-sql}, Jet) over the mapping of the same IMap, through the client. */
final class HazelcastSqlPeer implements Peer {
    private final HazelcastCluster hz;

    HazelcastSqlPeer(HazelcastCluster hz) {
        this.hz = hz;
    }

    @Override
    public String name() {
        return "hazelcast-sql";
    }

    @Override
    public String description() {
        return "Hazelcast SQL (hazelcast-sql " + HazelcastCluster.version()
                + ") `SELECT region, SUM(amount), COUNT(*) ... GROUP BY` over a compact mapping of the same IMap, through the client";
    }

    @Override
    public Client open(Shape shape, int index) {
        SqlService sql = hz.client().getSql();
        return new Client() {
            @Override
            public Object call() {
                Map<String, double[]> m = new HashMap<>();
                try (SqlResult r = sql.execute(shape.hazelcastSql())) {
                    for (SqlRow row : r) {
                        Object k = row.getObject(0);
                        String key = shape.buckets() > 0 ? Shape.bucketKey(((Number) k).longValue()) : (String) k;
                        Number sum = row.getObject(1);
                        Number count = row.getObject(2);
                        m.put(key, new double[] {sum.doubleValue(), count.doubleValue()});
                    }
                }
                return m;
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
}
