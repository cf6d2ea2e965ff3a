package dev.thresher.wire;

import static dev.thresher.wire.WireBytes.readBool;
import static dev.thresher.wire.WireBytes.readCount;
import static dev.thresher.wire.WireBytes.readDouble;
import static dev.thresher.wire.WireBytes.readInt;
import static dev.thresher.wire.WireBytes.readLong;
import static dev.thresher.wire.WireBytes.readString;
import static dev.thresher.wire.WireBytes.writeBool;
import static dev.thresher.wire.WireBytes.writeDouble;
import static dev.thresher.wire.WireBytes.writeString;

import dev.thresher.bindings.Partial;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;

/**
 * Payloads of the shard-run family ({@code 0x02xx}): the request as laid out since version 2
 * ({@code 0x0204}), the result and the failure as laid out since version 1. A later version that
 * changes a layout adds a new type id and a new method here; these are never edited.
 */
final class ShardRunCodec {
    /** The smallest encoded partial: an empty key (4-byte length) and a value (8 bytes). */
    private static final int MIN_PARTIAL_BYTES = 4 + 8;

    private ShardRunCodec() {}

    static void writeRequest(ShardRunRequest m, ByteBuf out) {
        out.writeLong(m.requestId());
        writeString(out, m.callId());
        writeString(out, m.wireId());
        writeString(out, m.tenant());
        writeString(out, m.bindingName());
        writeString(out, m.componentDigest());
        out.writeInt(m.bindingVersion());
        out.writeInt(m.slotIndex());
        out.writeInt(m.partitionId());
        out.writeLong(m.epoch());
        out.writeLong(m.remainingBudgetMicros());
        out.writeInt(m.attempt());
        writeString(out, m.argumentsJson());
    }

    static ShardRunRequest readRequest(ByteBuf in) {
        return new ShardRunRequest(
                readLong(in, "requestId"),
                readString(in, "callId"),
                readString(in, "wireId"),
                readString(in, "tenant"),
                readString(in, "bindingName"),
                readString(in, "componentDigest"),
                readInt(in, "bindingVersion"),
                readInt(in, "slotIndex"),
                readInt(in, "partitionId"),
                readLong(in, "epoch"),
                readLong(in, "remainingBudgetMicros"),
                readInt(in, "attempt"),
                readString(in, "argumentsJson"));
    }

    static void writeResult(ShardRunResult m, ByteBuf out) {
        out.writeLong(m.requestId());
        writeString(out, m.wireId());
        out.writeInt(m.partitionId());
        out.writeLong(m.epoch());
        out.writeInt(m.rowCount());
        out.writeInt(m.emitCount());
        out.writeLong(m.readMicros());
        out.writeLong(m.guestMicros());
        out.writeInt(m.partials().size());
        for (Partial p : m.partials()) {
            writeString(out, p.key());
            writeDouble(out, p.value());
        }
    }

    static ShardRunResult readResult(ByteBuf in) {
        long requestId = readLong(in, "requestId");
        String wireId = readString(in, "wireId");
        int partitionId = readInt(in, "partitionId");
        long epoch = readLong(in, "epoch");
        int rowCount = readInt(in, "rowCount");
        int emitCount = readInt(in, "emitCount");
        long readMicros = readLong(in, "readMicros");
        long guestMicros = readLong(in, "guestMicros");
        int count = readCount(in, "partials", MIN_PARTIAL_BYTES);
        List<Partial> partials = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            partials.add(new Partial(readString(in, "partial key"), readDouble(in, "partial value")));
        }
        return new ShardRunResult(requestId, wireId, partitionId, epoch, rowCount, emitCount, readMicros, guestMicros,
                partials);
    }

    static void writeFailure(ShardRunFailure m, ByteBuf out) {
        out.writeLong(m.requestId());
        writeString(out, m.wireId());
        out.writeInt(m.errorCode());
        writeBool(out, m.guestStarted());
        writeString(out, m.message());
    }

    static ShardRunFailure readFailure(ByteBuf in) {
        return new ShardRunFailure(
                readLong(in, "requestId"),
                readString(in, "wireId"),
                readInt(in, "errorCode"),
                readBool(in, "guestStarted"),
                readString(in, "message"));
    }
}
