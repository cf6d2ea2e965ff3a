package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.Partial;
import dev.thresher.limits.Limits;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Fixed messages of the golden vectors and helpers shared by the wire tests. */
final class WireFixtures {
    static final double NAN_WITH_PAYLOAD = Double.longBitsToDouble(0x7ff8_dead_0000_0001L);

    static final ShardRunRequest REQUEST = new ShardRunRequest(42, "c1", "w1", "t", "sum", "d1", 2, 7, 3, 5, 1_500_000, 1, "{}");

    /**
     * Golden vector name to the message it encodes, in the layout this build speaks. The file is
     * {@code golden/wire/v<N>/<name>.hex}, N the protocol version that introduced the message's
     * layout ({@link MessageType#sinceVersion}). Only ever added to: a released vector is never
     * edited or removed.
     */
    static final Map<String, WireMessage> GOLDEN = golden();

    private static Map<String, WireMessage> golden() {
        Map<String, WireMessage> m = new LinkedHashMap<>();
        m.put("hello", new Hello(1, 1, "node-a"));
        m.put("hello-ack", new HelloAck(1, "node-b"));
        m.put("hello-reject", new HelloReject(1009, "no common version"));
        m.put("hello-2-2", new Hello(2, 2, "node-a"));
        m.put("hello-ack-2", new HelloAck(2, "node-b"));
        m.put("shard-run-request", REQUEST);
        m.put("shard-run-request-unicode", new ShardRunRequest(-1, "call-ü", "wire-\u20ac", "tenant-\uD83D\uDE00", "",
                "sha256:00ff", Integer.MAX_VALUE, 16383, 2_147_483_647, Long.MIN_VALUE, 0, 0, "{\"k\":\"\u00e9\"}"));
        m.put("shard-run-result", new ShardRunResult(42, "w1", 3, 5, 4096, 1, 800, 27, List.of(new Partial("sum", 1.5))));
        m.put("shard-run-result-empty", new ShardRunResult(43, "w2", 0, 0, 0, 0, 0, 0, List.of()));
        m.put("shard-run-result-non-finite", new ShardRunResult(44, "w3", 1, 2, 3, 5, 6, 7, List.of(
                new Partial("nan", Double.NaN),
                new Partial("+inf", Double.POSITIVE_INFINITY),
                new Partial("-inf", Double.NEGATIVE_INFINITY),
                new Partial("-zero", -0.0),
                new Partial("min", Double.MIN_VALUE))));
        m.put("shard-run-failure", new ShardRunFailure(42, "w1", 4001, true, "trap"));
        m.put("shard-run-failure-not-started", new ShardRunFailure(45, "w4", 7001, false, "epoch 5 is stale"));
        return m;
    }

    private WireFixtures() {}

    /** Limits with a small frame cap, for oversize tests. */
    static Limits smallFrames(int wireMaxFrameBytes) {
        return Limits.fromProperties(Map.of(
                "limits.wireMaxFrameBytes", Integer.toString(wireMaxFrameBytes),
                "limits.batchMaxBytes", Integer.toString(wireMaxFrameBytes)));
    }

    static byte[] encode(WireMessage message) {
        ByteBuf buf = Unpooled.buffer();
        try {
            WireCodec.encode(message, WireCodec.MAX_VERSION, Limits.DEFAULTS.wireMaxFrameBytes(), buf);
            return ByteBufUtil.getBytes(buf);
        } finally {
            buf.release();
        }
    }

    /** Decodes a whole frame (length field included), checking the length field first. */
    static WireMessage decode(byte[] frame, int version) {
        ByteBuf buf = Unpooled.wrappedBuffer(frame);
        try {
            assertThat(buf.readInt()).as("length field").isEqualTo(frame.length - 4);
            return WireCodec.decode(buf, version);
        } finally {
            buf.release();
        }
    }

    /**
     * Vectors of retired layouts ({@link MessageType#RETIRED}), {@code golden/wire/v<N>/<name>.hex}
     * by name: kept byte for byte, and refused by this build.
     */
    static final Map<String, Integer> RETIRED = Map.of(
            "shard-run-request", 1,
            "shard-run-request-unicode", 1);

    /** The bytes of a current vector. */
    static byte[] goldenBytes(String name) {
        WireMessage message = GOLDEN.get(name);
        return goldenBytes(message == null ? 0 : MessageType.of(message).sinceVersion(), name);
    }

    /** The bytes of the vector {@code golden/wire/v<version>/<name>.hex}, or null when there is none. */
    static byte[] goldenBytes(int version, String name) {
        String path = "/golden/wire/v" + version + "/" + name + ".hex";
        try (InputStream in = WireFixtures.class.getResourceAsStream(path)) {
            if (in == null) {
                return null;
            }
            String text = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
            StringBuilder hex = new StringBuilder();
            for (String line : text.split("\n")) {
                if (!line.startsWith("#")) {
                    hex.append(line.replaceAll("\\s", ""));
                }
            }
            return HexFormat.of().parseHex(hex);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Compares messages with doubles by their raw bits (record equality treats all NaNs alike). */
    static void assertBitExact(WireMessage actual, WireMessage expected) {
        assertThat(actual).isEqualTo(expected);
        if (expected instanceof ShardRunResult e && actual instanceof ShardRunResult a) {
            for (int i = 0; i < e.partials().size(); i++) {
                assertThat(Double.doubleToRawLongBits(a.partials().get(i).value()))
                        .as("raw bits of partial %d", i)
                        .isEqualTo(Double.doubleToRawLongBits(e.partials().get(i).value()));
            }
        }
    }
}
