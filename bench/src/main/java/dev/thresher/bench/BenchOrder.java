package dev.thresher.bench;

import com.hazelcast.nio.serialization.compact.CompactReader;
import com.hazelcast.nio.serialization.compact.CompactSerializer;
import com.hazelcast.nio.serialization.compact.CompactWriter;

/**
 * One order as the Hazelcast peers hold it: the value of {@code IMap<Long, BenchOrder> orders}, stored with
 * the compact serializer below (schema {@value Serializer#TYPE_NAME}: {@code order_id int64, region string,
 * amount float64}), never with Java serialization. Hazelcast SQL reads the same fields.
 */
record BenchOrder(long orderId, String region, double amount) {

    static final class Serializer implements CompactSerializer<BenchOrder> {
        static final String TYPE_NAME = "BenchOrder";

        @Override
        public BenchOrder read(CompactReader in) {
            return new BenchOrder(in.readInt64("order_id"), in.readString("region"), in.readFloat64("amount"));
        }

        @Override
        public void write(CompactWriter out, BenchOrder o) {
            out.writeInt64("order_id", o.orderId());
            out.writeString("region", o.region());
            out.writeFloat64("amount", o.amount());
        }

        @Override
        public String getTypeName() {
            return TYPE_NAME;
        }

        @Override
        public Class<BenchOrder> getCompactClass() {
            return BenchOrder.class;
        }
    }
}
