package dev.thresher.bench;

import com.hazelcast.aggregation.Aggregator;
import com.hazelcast.nio.ObjectDataInput;
import com.hazelcast.nio.ObjectDataOutput;
import com.hazelcast.nio.serialization.DataSerializableFactory;
import com.hazelcast.nio.serialization.IdentifiedDataSerializable;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/**
 * An IMap aggregation that groups by key: {@code key -> (sum of amount, count)}, the key being the region or,
 * with {@code buckets > 0}, the bucket {@code order_id % buckets}. Members accumulate their partitions'
 * entries, the calling member combines the members' aggregators, the client gets a {@link GroupCounts}.
 * Both travel as {@link IdentifiedDataSerializable} (factory {@value #FACTORY_ID}), so Hazelcast never
 * falls back to Java serialization for them.
 */
final class GroupByAggregator implements Aggregator<Map.Entry<Long, BenchOrder>, GroupByAggregator.GroupCounts>,
        IdentifiedDataSerializable {
    static final int FACTORY_ID = 0x7452;
    static final int AGGREGATOR_CLASS_ID = 1;
    static final int COUNTS_CLASS_ID = 2;

    private int buckets;
    private final Map<String, double[]> groups = new HashMap<>();

    /** For deserialization. */
    GroupByAggregator() {
    }

    GroupByAggregator(int buckets) {
        this.buckets = buckets;
    }

    @Override
    public void accumulate(Map.Entry<Long, BenchOrder> entry) {
        BenchOrder o = entry.getValue();
        String key = buckets > 0 ? Shape.bucketKey(o.orderId() % buckets) : o.region();
        double[] t = groups.get(key);
        if (t == null) {
            t = new double[2];
            groups.put(key, t);
        }
        t[0] += o.amount();
        t[1] += 1;
    }

    @Override
    @SuppressWarnings("rawtypes") // Aggregator.combine's own signature
    public void combine(Aggregator aggregator) {
        ((GroupByAggregator) aggregator).groups.forEach((k, v) -> {
            double[] t = groups.get(k);
            if (t == null) {
                groups.put(k, v.clone());
            } else {
                t[0] += v[0];
                t[1] += v[1];
            }
        });
    }

    @Override
    public GroupCounts aggregate() {
        return new GroupCounts(groups);
    }

    @Override
    public void writeData(ObjectDataOutput out) throws IOException {
        out.writeInt(buckets);
        GroupCounts.write(out, groups);
    }

    @Override
    public void readData(ObjectDataInput in) throws IOException {
        buckets = in.readInt();
        GroupCounts.read(in, groups);
    }

    @Override
    public int getFactoryId() {
        return FACTORY_ID;
    }

    @Override
    public int getClassId() {
        return AGGREGATOR_CLASS_ID;
    }

    /** The aggregation's answer: {@code key -> {sum, count}}. */
    static final class GroupCounts implements IdentifiedDataSerializable {
        private final Map<String, double[]> groups = new HashMap<>();

        GroupCounts() {
        }

        GroupCounts(Map<String, double[]> groups) {
            this.groups.putAll(groups);
        }

        Map<String, double[]> groups() {
            return groups;
        }

        static void write(ObjectDataOutput out, Map<String, double[]> groups) throws IOException {
            out.writeInt(groups.size());
            for (Map.Entry<String, double[]> e : groups.entrySet()) {
                out.writeString(e.getKey());
                out.writeDouble(e.getValue()[0]);
                out.writeDouble(e.getValue()[1]);
            }
        }

        static void read(ObjectDataInput in, Map<String, double[]> groups) throws IOException {
            int n = in.readInt();
            for (int i = 0; i < n; i++) {
                groups.put(in.readString(), new double[] {in.readDouble(), in.readDouble()});
            }
        }

        @Override
        public void writeData(ObjectDataOutput out) throws IOException {
            write(out, groups);
        }

        @Override
        public void readData(ObjectDataInput in) throws IOException {
            read(in, groups);
        }

        @Override
        public int getFactoryId() {
            return FACTORY_ID;
        }

        @Override
        public int getClassId() {
            return COUNTS_CLASS_ID;
        }
    }

    static final class Factory implements DataSerializableFactory {
        @Override
        public IdentifiedDataSerializable create(int classId) {
            return switch (classId) {
                case AGGREGATOR_CLASS_ID -> new GroupByAggregator();
                case COUNTS_CLASS_ID -> new GroupCounts();
                default -> throw new IllegalArgumentException("unknown class id " + classId);
            };
        }
    }
}
