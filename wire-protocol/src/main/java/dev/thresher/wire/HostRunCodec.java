package dev.thresher.wire;

import static dev.thresher.wire.WireBytes.readBool;
import static dev.thresher.wire.WireBytes.readCount;
import static dev.thresher.wire.WireBytes.readInt;
import static dev.thresher.wire.WireBytes.readLong;
import static dev.thresher.wire.WireBytes.readString;
import static dev.thresher.wire.WireBytes.writeBool;
import static dev.thresher.wire.WireBytes.writeString;

import dev.thresher.wire.WireMessage.CallStop;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;

/**
 * Payloads of the host-run family ({@code 0x02xx}) as laid out since protocol version 3: the
 * request ({@code 0x0205}), the reply ({@code 0x0206}) and the one-way call stop ({@code 0x0207}).
 * A later version that changes a layout adds a new type id and a new method here; these are never
 * edited.
 */
final class HostRunCodec {
    /** The smallest encoded {@link ShardRun}: runIndex, partitionId, epoch, an empty wireId, attempt. */
    static final int MIN_SHARD_RUN_BYTES = 4 + 4 + 8 + 4 + 4;
    /**
     * The smallest encoded {@link ShardRunOutcome}: runIndex, an empty wireId, errorCode, guestStarted,
     * an empty message, rowCount, emitCount, readMicros, guestMicros.
     */
    static final int MIN_SHARD_RUN_OUTCOME_BYTES = 4 + 4 + 4 + 1 + 4 + 4 + 4 + 8 + 8;

    private HostRunCodec() {}

    static void writeRequest(HostRequest m, ByteBuf out) {
        out.writeLong(m.requestId());
        writeString(out, m.callId());
        writeString(out, m.tenant());
        writeString(out, m.bindingName());
        writeString(out, m.componentDigest());
        out.writeInt(m.bindingVersion());
        out.writeLong(m.remainingBudgetMicros());
        writeString(out, m.argumentsJson());
        out.writeInt(m.runs().size());
        for (ShardRun s : m.runs()) {
            out.writeInt(s.runIndex());
            out.writeInt(s.partitionId());
            out.writeLong(s.epoch());
            writeString(out, s.wireId());
            out.writeInt(s.attempt());
        }
    }

    static HostRequest readRequest(ByteBuf in) {
        long requestId = readLong(in, "requestId");
        String callId = readString(in, "callId");
        String tenant = readString(in, "tenant");
        String bindingName = readString(in, "bindingName");
        String componentDigest = readString(in, "componentDigest");
        int bindingVersion = readInt(in, "bindingVersion");
        long remainingBudgetMicros = readLong(in, "remainingBudgetMicros");
        String argumentsJson = readString(in, "argumentsJson");
        int count = readCount(in, "slots", MIN_SHARD_RUN_BYTES);
        List<ShardRun> slots = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            slots.add(new ShardRun(
                    readInt(in, "runIndex"),
                    readInt(in, "partitionId"),
                    readLong(in, "epoch"),
                    readString(in, "wireId"),
                    readInt(in, "attempt")));
        }
        return new HostRequest(requestId, callId, tenant, bindingName, componentDigest, bindingVersion,
                remainingBudgetMicros, argumentsJson, slots);
    }

    static void writeReply(HostReply m, ByteBuf out) {
        out.writeLong(m.requestId());
        out.writeLong(m.publishMicros());
        out.writeInt(m.runs().size());
        for (ShardRunOutcome s : m.runs()) {
            out.writeInt(s.runIndex());
            writeString(out, s.wireId());
            out.writeInt(s.errorCode());
            writeBool(out, s.guestStarted());
            writeString(out, s.message());
            out.writeInt(s.rowCount());
            out.writeInt(s.emitCount());
            out.writeLong(s.readMicros());
            out.writeLong(s.guestMicros());
        }
    }

    static HostReply readReply(ByteBuf in) {
        long requestId = readLong(in, "requestId");
        long publishMicros = readLong(in, "publishMicros");
        int count = readCount(in, "slots", MIN_SHARD_RUN_OUTCOME_BYTES);
        List<ShardRunOutcome> slots = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            slots.add(new ShardRunOutcome(
                    readInt(in, "runIndex"),
                    readString(in, "wireId"),
                    readInt(in, "errorCode"),
                    readBool(in, "guestStarted"),
                    readString(in, "message"),
                    readInt(in, "rowCount"),
                    readInt(in, "emitCount"),
                    readLong(in, "readMicros"),
                    readLong(in, "guestMicros")));
        }
        return new HostReply(requestId, publishMicros, slots);
    }

    static void writeStop(CallStop m, ByteBuf out) {
        writeString(out, m.callId());
    }

    static CallStop readStop(ByteBuf in) {
        return new CallStop(readString(in, "callId"));
    }
}
