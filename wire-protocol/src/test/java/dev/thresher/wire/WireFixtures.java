package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.limits.Limits;
import dev.thresher.wire.WireMessage.CallStop;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
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
    /** The request of {@link WireMessage.HostRequest}'s javadoc example. */
    static final HostRequest REQUEST =
            new HostRequest(42, "c1", "t", "sum", "d1", 2, 1_500_000, "{}", List.of(new ShardRun(7, 3, 5, "w1", 1)));

    /** The reply of {@link WireMessage.HostReply}'s javadoc example, the answer to {@link #REQUEST}. */
    static final HostReply REPLY =
            new HostReply(42, 300, List.of(new ShardRunOutcome(7, "w1", 0, true, "", 4096, 1, 800, 27)));

    /** The stop of {@link WireMessage.CallStop}'s javadoc example, for the call of {@link #REQUEST}. */
    static final CallStop STOP = new CallStop("c1");

    /** A request of three slots, and the reply of {@code host-run-reply-slots} answers it. */
    static final HostRequest REQUEST_SLOTS = new HostRequest(43, "c2", "acme", "sum", "sha256:00ff", 5, 250_000,
            "{\"n\":3}", List.of(
                    new ShardRun(0, 0, 1, "w-0", 1),
                    new ShardRun(4, 12, 9, "w-4", 2),
                    new ShardRun(16383, Integer.MAX_VALUE, -1, "", 3)));

    static final HostReply REPLY_SLOTS = new HostReply(43, 1200, List.of(
            new ShardRunOutcome(0, "w-0", 0, true, "", 10, 2, 30, 40),
            new ShardRunOutcome(4, "w-4", 4001, true, "guest trapped: unreachable", 3, 0, 5, 6),
            new ShardRunOutcome(16383, "", 7001, false, "epoch 9 is stale", 0, 0, 0, 0)));

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
        m.put("hello-3-3", new Hello(3, 3, "node-a"));
        m.put("hello-ack-3", new HelloAck(3, "node-b"));
        m.put("host-run-request", REQUEST);
        m.put("host-run-request-slots", REQUEST_SLOTS);
        m.put("host-run-request-unicode", new HostRequest(-1, "call-\u00fc", "tenant-\uD83D\uDE00", "", "sha256:00ff",
                Integer.MAX_VALUE, 0, "{\"k\":\"\u00e9\"}",
                List.of(new ShardRun(Integer.MAX_VALUE, Integer.MAX_VALUE, Long.MIN_VALUE, "wire-\u20ac", Integer.MAX_VALUE))));
        m.put("host-run-reply", REPLY);
        m.put("host-run-reply-slots", REPLY_SLOTS);
        m.put("host-run-reply-not-started", new HostReply(44, 0, List.of(
                new ShardRunOutcome(1, "w1", 6001, false, "node node-b is shutting down", 0, 0, 0, 0),
                new ShardRunOutcome(2, "w2", 6001, false, "node node-b is shutting down", 0, 0, 0, 0))));
        m.put("host-run-reply-unicode", new HostReply(-1, Long.MAX_VALUE, List.of(
                new ShardRunOutcome(Integer.MAX_VALUE, "wire-\u20ac", 123456, true, "trap \u00e9 \uD83D\uDE00",
                        Integer.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE))));
        m.put("call-stop", STOP);
        m.put("call-stop-unicode", new CallStop("call-\u00fc-\uD83D\uDE00"));
        return m;
    }

    /** A vector of a retired layout: where it lives and the type id this build must refuse by name. */
    record Retired(int version, String name, int typeId) {
        @Override
        public String toString() {
            return "v" + version + "/" + name + String.format(" (0x%04x)", typeId);
        }
    }

    /**
     * Vectors of retired layouts ({@link MessageType#RETIRED}), {@code golden/wire/v<N>/<name>.hex}:
     * kept byte for byte, and refused by this build naming their type id.
     */
    static final List<Retired> RETIRED = List.of(
            new Retired(1, "shard-run-request", 0x0201),
            new Retired(1, "shard-run-request-unicode", 0x0201),
            new Retired(1, "shard-run-result", 0x0202),
            new Retired(1, "shard-run-result-empty", 0x0202),
            new Retired(1, "shard-run-result-non-finite", 0x0202),
            new Retired(1, "shard-run-failure", 0x0203),
            new Retired(1, "shard-run-failure-not-started", 0x0203),
            new Retired(2, "shard-run-request", 0x0204),
            new Retired(2, "shard-run-request-unicode", 0x0204));

    private WireFixtures() {}

    /** Limits with a small frame cap, for oversize tests. */
    static Limits smallFrames(int wireMaxFrameBytes) {
        return Limits.fromProperties(Map.of(
                "limits.wireMaxFrameBytes", Integer.toString(wireMaxFrameBytes),
                "limits.batchMaxBytes", Integer.toString(wireMaxFrameBytes)));
    }

    /** The reply a handler that publishes every slot would give. */
    static HostReply published(HostRequest request) {
        return new HostReply(request.requestId(), 1, request.runs().stream()
                .map(s -> new ShardRunOutcome(s.runIndex(), s.wireId(), 0, true, "", 10, 1, 2, 3))
                .toList());
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
}
