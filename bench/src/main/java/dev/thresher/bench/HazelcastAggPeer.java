package dev.thresher.bench;

import com.hazelcast.map.IMap;
import com.hazelcast.query.Predicate;
import com.hazelcast.query.Predicates;
import java.util.Map;

/** Hazelcast's IMap aggregation with {@link GroupByAggregator}, called through the cluster's client. */
final class HazelcastAggPeer implements Peer {
    private final HazelcastCluster hz;

    HazelcastAggPeer(HazelcastCluster hz) {
        this.hz = hz;
    }

    @Override
    public String name() {
        return "hazelcast-agg";
    }

    @Override
    public String description() {
        return "Hazelcast " + HazelcastCluster.version() + ", " + HazelcastCluster.MEMBERS
                + " embedded members: `IMap.aggregate` with a group-by aggregator (IdentifiedDataSerializable) over compact values,"
                + " through a Hazelcast client over loopback";
    }

    @Override
    public Client open(Shape shape, int index) {
        IMap<Long, BenchOrder> map = hz.orders();
        Predicate<Long, BenchOrder> negative = Predicates.lessThan("amount", 0.0);
        return new Client() {
            @Override
            public Object call() {
                GroupByAggregator agg = new GroupByAggregator(shape.buckets());
                return shape.negativeOnly() ? map.aggregate(agg, negative) : map.aggregate(agg);
            }

            @Override
            public Answer answer(Object raw) {
                return Answer.of(((GroupByAggregator.GroupCounts) raw).groups());
            }

            @Override
            public void close() {
            }
        };
    }
}
