package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Partial;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class WireCodecTest {

    static Stream<Arguments> goldenMessages() {
        return WireFixtures.GOLDEN.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("goldenMessages")
    void roundTripsEveryMessage(String name, WireMessage message) {
        WireFixtures.assertBitExact(WireFixtures.decode(WireFixtures.encode(message), WireCodec.MAX_VERSION), message);
    }

    @Test
    void roundTripsDoublesBitExactly() {
        long[] bits = {
            0x7ff8_0000_0000_0000L, // canonical quiet NaN
            Double.doubleToRawLongBits(WireFixtures.NAN_WITH_PAYLOAD),
            0xfff8_0000_0000_0001L, // negative quiet NaN with payload
            Double.doubleToRawLongBits(Double.POSITIVE_INFINITY),
            Double.doubleToRawLongBits(Double.NEGATIVE_INFINITY),
            Double.doubleToRawLongBits(-0.0),
            Double.doubleToRawLongBits(0.0),
            Double.doubleToRawLongBits(Double.MIN_VALUE),
            Double.doubleToRawLongBits(-Double.MAX_VALUE),
            Double.doubleToRawLongBits(Math.PI),
        };
        List<Partial> partials = new ArrayList<>();
        for (long b : bits) {
            partials.add(new Partial("k" + Long.toHexString(b), Double.longBitsToDouble(b)));
        }
        ShardRunResult result = new ShardRunResult(1, "w", 0, 0, 0, bits.length, 0, 0, partials);
        ShardRunResult decoded = (ShardRunResult) WireFixtures.decode(WireFixtures.encode(result), WireCodec.MAX_VERSION);
        for (int i = 0; i < bits.length; i++) {
            assertThat(Double.doubleToRawLongBits(decoded.partials().get(i).value()))
                    .as(Long.toHexString(bits[i]))
                    .isEqualTo(bits[i]);
        }
    }

    @Test
    void roundTripsRandomMessages() {
        Random random = new Random(7);
        for (int i = 0; i < 500; i++) {
            WireMessage m = randomMessage(random);
            WireFixtures.assertBitExact(WireFixtures.decode(WireFixtures.encode(m), WireCodec.MAX_VERSION), m);
        }
    }

    @Test
    void refusesUnknownTypeIds() {
        assertViolation(() -> decodeFrame("0999"), "unknown message type id 0x0999");
        assertViolation(() -> decodeFrame("0301" + "00000000"), "unknown message type id 0x0301");
    }

    @Test
    void refusesAnEmptyFrame() {
        assertViolation(() -> decodeFrame(""), "type id");
        assertViolation(() -> decodeFrame("01"), "type id");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("goldenMessages")
    void refusesEveryTruncationOfEveryMessage(String name, WireMessage message) {
        byte[] frame = WireFixtures.encode(message);
        for (int cut = 6; cut < frame.length; cut++) {
            byte[] truncated = Arrays.copyOfRange(frame, 4, cut);
            assertViolation(() -> decode(truncated, WireCodec.MAX_VERSION), "");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("goldenMessages")
    void refusesTrailingBytes(String name, WireMessage message) {
        byte[] frame = WireFixtures.encode(message);
        byte[] longer = Arrays.copyOfRange(frame, 4, frame.length + 1);
        assertViolation(() -> decode(longer, WireCodec.MAX_VERSION), "1 bytes after its payload");
    }

    @Test
    void refusesShardRunFramesBeforeTheHandshake() {
        byte[] frame = WireFixtures.encode(WireFixtures.REQUEST);
        assertViolation(() -> decode(Arrays.copyOfRange(frame, 4, frame.length), WireCodec.NO_VERSION),
                "before the handshake");
        assertThatThrownBy(() -> WireCodec.encode(WireFixtures.REQUEST, WireCodec.NO_VERSION, 1 << 20, Unpooled.buffer()))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION));
    }

    @Test
    void handshakeFramesAreReadableBeforeAVersionIsAgreed() {
        byte[] frame = WireFixtures.encode(new Hello(1, 3, "n"));
        assertThat(WireFixtures.decode(frame, WireCodec.NO_VERSION)).isEqualTo(new Hello(1, 3, "n"));
    }

    @Test
    void refusesAHostileListCountBeforeAllocating() {
        // a result whose partial count claims 2^31-1 elements in a frame of a few dozen bytes
        String header = "0202" + "0000000000000001" + "00000001" + "77" + "00000000" + "0000000000000000"
                + "00000000" + "00000000" + "0000000000000000" + "0000000000000000";
        assertViolation(() -> decodeFrame(header + "7fffffff"), "claims 2147483647 elements");
        assertViolation(() -> decodeFrame(header + "ffffffff"), "negative count");
        // a count the bytes can hold, but whose element is cut short, still fails as a truncation
        assertViolation(() -> decodeFrame(header + "00000001" + "00000005" + "0000000000000000"), "truncated");
    }

    @Test
    void refusesHostileStrings() {
        assertViolation(() -> decodeFrame("0102" + "00000001" + "ffffffff"), "negative length");
        assertViolation(() -> decodeFrame("0102" + "00000001" + "7fffffff" + "41"), "truncated");
        assertViolation(() -> decodeFrame("0102" + "00000001" + "00000002" + "c328"), "not valid UTF-8");
    }

    @Test
    void refusesBoolBytesOtherThanZeroAndOne() {
        String frame = "0203" + "0000000000000001" + "00000000" + "00000fa1" + "02" + "00000000";
        assertViolation(() -> decodeFrame(frame), "guestStarted is a bool but reads 0x2");
    }

    @Test
    void refusesValuesTheRecordsRefuse() {
        assertViolation(() -> decodeFrame("0101" + "00000002" + "00000001" + "00000000"), "bad version range");
        assertViolation(() -> decodeFrame("0102" + "00000000" + "00000000"), "version must be at least 1");
    }

    @Test
    void aRequestCannotBeSentOnAVersionOneConnection() {
        ByteBuf out = Unpooled.buffer();
        try {
            assertThatThrownBy(() -> WireCodec.encode(WireFixtures.REQUEST, 1, 1 << 20, out))
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION));
            assertThat(out.readableBytes()).isZero();
        } finally {
            out.release();
        }
    }

    @Test
    void refusesToEncodeAFrameAboveTheCapAndLeavesTheBufferAsItWas() {
        ByteBuf out = Unpooled.buffer();
        try {
            out.writeByte(0x55);
            ShardRunRequest big = new ShardRunRequest(1, "c", "w", "t", "b", "d", 1, 0, 0, 0, 0, 0, "x".repeat(100));
            assertThatThrownBy(() -> WireCodec.encode(big, WireCodec.MAX_VERSION, 100, out))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
                        assertThat(e.getMessage()).contains("limits.wireMaxFrameBytes=100");
                    });
            assertThat(out.readableBytes()).isEqualTo(1);
            // the cap counts the whole frame, length field included
            byte[] exact = WireFixtures.encode(big);
            WireCodec.encode(big, WireCodec.MAX_VERSION, exact.length, out);
            assertThat(out.readableBytes()).isEqualTo(1 + exact.length);
        } finally {
            out.release();
        }
    }

    @Test
    void recordsValidateTheirFields() {
        assertThatThrownBy(() -> new ShardRunRequest(1, null, "w", "t", "b", "d", 1, 0, 0, 0, 0, 0, "{}"))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new ShardRunRequest(1, "c", "w", "t", "b", "d", 1, 0, 0, 0, -1, 0, "{}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("remainingBudgetMicros");
        assertThatThrownBy(() -> new ShardRunResult(1, "w", 0, 0, -1, 0, 0, 0, List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rowCount");
        List<Partial> withNull = new ArrayList<>();
        withNull.add(null);
        assertThatThrownBy(() -> new ShardRunResult(1, "w", 0, 0, 0, 0, 0, 0, withNull))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new Hello(0, 1, "n")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new HelloAck(0, "n")).isInstanceOf(IllegalArgumentException.class);

        List<Partial> mutable = new ArrayList<>(List.of(new Partial("a", 1)));
        ShardRunResult r = new ShardRunResult(1, "w", 0, 0, 0, 0, 0, 0, mutable);
        mutable.clear();
        assertThat(r.partials()).hasSize(1);
        assertThatThrownBy(() -> r.partials().add(new Partial("b", 2))).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void typeIdsAreGroupedByFamilyAndUnique() {
        for (MessageType t : MessageType.values()) {
            assertThat(MessageType.ofId(t.id())).isSameAs(t);
            int family = t.id() >> 8;
            assertThat(family).isEqualTo(switch (t.family()) {
                case HANDSHAKE -> 0x01;
                case SHARD_RUN -> 0x02;
            });
        }
    }

    @Test
    void failureExposesItsErrorCode() {
        assertThat(new ShardRunFailure(1, "w", 7001, false, "m").code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(new ShardRunFailure(1, "w", 123456, false, "m").code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
    }

    private static WireMessage randomMessage(Random r) {
        return switch (r.nextInt(6)) {
            case 0 -> new Hello(1 + r.nextInt(3), 4 + r.nextInt(3), randomString(r));
            case 1 -> new HelloAck(1 + r.nextInt(100), randomString(r));
            case 2 -> new WireMessage.HelloReject(r.nextInt(), randomString(r));
            case 3 -> new ShardRunRequest(r.nextLong(), randomString(r), randomString(r), randomString(r),
                    randomString(r), randomString(r), 1 + r.nextInt(Integer.MAX_VALUE), r.nextInt(16384), r.nextInt(Integer.MAX_VALUE), r.nextLong(),
                    r.nextLong(Long.MAX_VALUE), r.nextInt(5), randomString(r));
            case 4 -> {
                List<Partial> partials = new ArrayList<>();
                int n = r.nextInt(20);
                for (int i = 0; i < n; i++) {
                    partials.add(new Partial(randomString(r), Double.longBitsToDouble(r.nextLong())));
                }
                yield new ShardRunResult(r.nextLong(), randomString(r), r.nextInt(1000), r.nextLong(),
                        r.nextInt(Integer.MAX_VALUE), r.nextInt(Integer.MAX_VALUE), r.nextLong(Long.MAX_VALUE),
                        r.nextLong(Long.MAX_VALUE), partials);
            }
            default -> new ShardRunFailure(r.nextLong(), randomString(r), r.nextInt(), r.nextBoolean(), randomString(r));
        };
    }

    private static String randomString(Random r) {
        StringBuilder sb = new StringBuilder();
        int n = r.nextInt(12);
        for (int i = 0; i < n; i++) {
            // whole code points only: an unpaired surrogate does not round-trip (written as '?')
            int cp;
            do {
                cp = r.nextInt(4) == 0 ? r.nextInt(0x110000) : 0x20 + r.nextInt(0x5f);
            } while (cp >= 0xd800 && cp <= 0xdfff);
            sb.appendCodePoint(cp);
        }
        return sb.toString();
    }

    private static WireMessage decodeFrame(String hexWithoutLength) {
        return decode(HexFormat.of().parseHex(hexWithoutLength), WireCodec.MAX_VERSION);
    }

    private static WireMessage decode(byte[] frameWithoutLength, int version) {
        ByteBuf buf = Unpooled.wrappedBuffer(frameWithoutLength);
        try {
            return WireCodec.decode(buf, version);
        } finally {
            buf.release();
        }
    }

    private static void assertViolation(ThrowingCallable call, String messagePart) {
        assertThatThrownBy(call).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION);
            assertThat(e.getMessage()).contains(messagePart);
        });
    }
}
