package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.wire.WireMessage.CallStop;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HostReply;
import dev.thresher.wire.WireMessage.HostRequest;
import dev.thresher.wire.WireMessage.ShardRunOutcome;
import dev.thresher.wire.WireMessage.ShardRun;
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
    /**
     * The fields of a request before its slot list: requestId 1, callId, tenant, bindingName and
     * componentDigest empty, bindingVersion 1, remainingBudgetMicros 0, argumentsJson empty.
     */
    private static final String REQUEST_HEAD = requestHead("00000001");
    /** The fields of a reply before its slot list: requestId 1, publishMicros 0. */
    private static final String REPLY_HEAD = "0206" + "0000000000000001" + "0000000000000000";

    static Stream<Arguments> goldenMessages() {
        return WireFixtures.GOLDEN.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("goldenMessages")
    void roundTripsEveryMessage(String name, WireMessage message) {
        assertThat(WireFixtures.decode(WireFixtures.encode(message), WireCodec.MAX_VERSION)).isEqualTo(message);
    }

    @Test
    void roundTripsRandomMessages() {
        Random random = new Random(7);
        for (int i = 0; i < 500; i++) {
            WireMessage m = randomMessage(random);
            assertThat(WireFixtures.decode(WireFixtures.encode(m), WireCodec.MAX_VERSION)).isEqualTo(m);
        }
    }

    @Test
    void roundTripsAHostRunOfManySlots() {
        List<ShardRun> slots = new ArrayList<>();
        List<ShardRunOutcome> outcomes = new ArrayList<>();
        for (int i = 0; i < 16_384; i++) {
            slots.add(new ShardRun(i, i, i, "w" + i, 1));
            outcomes.add(new ShardRunOutcome(i, "w" + i, i % 3 == 0 ? 0 : 4001, i % 2 == 0, i % 3 == 0 ? "" : "trap",
                    i, 1, i, i));
        }
        HostRequest request = new HostRequest(1, "c", "t", "b", "d", 1, 10, "{}", slots);
        HostReply reply = new HostReply(1, 5, outcomes);
        assertThat(WireFixtures.decode(WireFixtures.encode(request), WireCodec.MAX_VERSION)).isEqualTo(request);
        assertThat(WireFixtures.decode(WireFixtures.encode(reply), WireCodec.MAX_VERSION)).isEqualTo(reply);
    }

    @Test
    void refusesUnknownTypeIds() {
        assertViolation(() -> decodeFrame("0999"), "unknown message type id 0x0999");
        assertViolation(() -> decodeFrame("0301" + "00000000"), "unknown message type id 0x0301");
        assertViolation(() -> decodeFrame("0208" + "00000000"), "unknown message type id 0x0208");
    }

    @Test
    void refusesRetiredTypeIdsByNameWhateverFollows() {
        for (int id : MessageType.RETIRED.keySet()) {
            String named = String.format("message type id 0x%04x is retired", id);
            assertViolation(() -> decodeFrame(String.format("%04x", id)), named);
            assertViolation(() -> decodeFrame(String.format("%04x", id) + "0000000000000001"), named);
        }
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
    void callStopIsItsCallIdAlone() {
        assertThat(decodeFrame("0207" + "00000000")).isEqualTo(new CallStop(""));
        assertThat(WireFixtures.encode(new CallStop(""))).hasSize(10);
        assertThat(WireFixtures.encode(WireFixtures.STOP)).hasSize(12);
        // 4 + 2 + 4 + the call id's UTF-8 bytes: "\u00fc" is 2 bytes, U+1F600 is 4
        assertThat(WireFixtures.encode(new CallStop("call-\u00fc-\uD83D\uDE00"))).hasSize(10 + 12);
        assertThat(MessageType.of(WireFixtures.STOP)).isEqualTo(MessageType.CALL_STOP);
        assertThat(MessageType.CALL_STOP.id()).isEqualTo(0x0207);
        assertThat(MessageType.CALL_STOP.family()).isEqualTo(MessageType.Family.HOST_RUN);
    }

    @Test
    void refusesHostRunFramesBeforeTheHandshake() {
        for (WireMessage m : List.<WireMessage>of(WireFixtures.REQUEST, WireFixtures.REPLY, WireFixtures.STOP)) {
            byte[] frame = WireFixtures.encode(m);
            assertViolation(() -> decode(Arrays.copyOfRange(frame, 4, frame.length), WireCodec.NO_VERSION),
                    "before the handshake");
            assertThatThrownBy(() -> WireCodec.encode(m, WireCodec.NO_VERSION, 1 << 20, Unpooled.buffer()))
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION));
        }
    }

    @Test
    void handshakeFramesAreReadableBeforeAVersionIsAgreed() {
        byte[] frame = WireFixtures.encode(new Hello(1, 3, "n"));
        assertThat(WireFixtures.decode(frame, WireCodec.NO_VERSION)).isEqualTo(new Hello(1, 3, "n"));
    }

    @Test
    void thisBuildSpeaksVersionThreeOnly() {
        assertThat(WireCodec.MIN_VERSION).isEqualTo(3);
        assertThat(WireCodec.MAX_VERSION).isEqualTo(3);
        assertThat(MessageType.HOST_RUN_REQUEST.sinceVersion()).isEqualTo(3);
        assertThat(MessageType.HOST_RUN_REPLY.sinceVersion()).isEqualTo(3);
        assertThat(MessageType.CALL_STOP.sinceVersion()).isEqualTo(3);
    }

    @Test
    void refusesAHostileListCountBeforeAllocating() {
        // a reply whose slot count claims 2^31-1 elements in a frame of a few dozen bytes
        assertViolation(() -> decodeFrame(REPLY_HEAD + "7fffffff"), "claims 2147483647 elements");
        assertViolation(() -> decodeFrame(REPLY_HEAD + "ffffffff"), "negative count");
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "7fffffff"), "claims 2147483647 elements");
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "80000000"), "negative count");
        // a count the bytes can hold, but whose element is cut short, still fails as a truncation
        assertViolation(() -> decodeFrame(REPLY_HEAD + "00000001" + "00000005" + "00000040" + "00".repeat(37)),
                "truncated");
    }

    @Test
    void theCountCheckUsesTheSmallestElement() {
        // slots with empty strings are exactly the minimum sizes: n of them decode, one byte fewer is refused by count
        String slotRun = "00000000" + "00000000" + "0000000000000000" + "00000000" + "00000001";
        assertThat(slotRun.length() / 2).isEqualTo(HostRunCodec.MIN_SHARD_RUN_BYTES);
        String twoRuns = slotRun + slotRun.replaceFirst("^00000000", "00000001");
        assertThat(decodeFrame(REQUEST_HEAD + "00000002" + twoRuns))
                .isEqualTo(new HostRequest(1, "", "", "", "", 1, 0, "", List.of(
                        new ShardRun(0, 0, 0, "", 1), new ShardRun(1, 0, 0, "", 1))));
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "00000002" + twoRuns.substring(2)), "claims 2 elements");

        String outcome = "00000000" + "00000000" + "00000000" + "00" + "00000000" + "00000000" + "00000000"
                + "0000000000000000" + "0000000000000000";
        assertThat(outcome.length() / 2).isEqualTo(HostRunCodec.MIN_SHARD_RUN_OUTCOME_BYTES);
        assertThat(decodeFrame(REPLY_HEAD + "00000002" + outcome + outcome))
                .isEqualTo(new HostReply(1, 0, List.of(new ShardRunOutcome(0, "", 0, false, "", 0, 0, 0, 0),
                        new ShardRunOutcome(0, "", 0, false, "", 0, 0, 0, 0))));
        assertViolation(() -> decodeFrame(REPLY_HEAD + "00000002" + outcome + outcome.substring(2)),
                "claims 2 elements");
    }

    @Test
    void refusesHostileStrings() {
        assertViolation(() -> decodeFrame("0102" + "00000001" + "ffffffff"), "negative length");
        assertViolation(() -> decodeFrame("0102" + "00000001" + "7fffffff" + "41"), "truncated");
        assertViolation(() -> decodeFrame("0102" + "00000001" + "00000002" + "c328"), "not valid UTF-8");
        // a slot's wire id that is not UTF-8
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "00000001" + "00000000" + "00000000" + "0000000000000000"
                + "00000001" + "ff" + "00000001"), "wireId is not valid UTF-8");
        assertViolation(() -> decodeFrame("0207" + "ffffffff"), "callId has negative length");
        assertViolation(() -> decodeFrame("0207" + "00000002" + "63"), "truncated");
        assertViolation(() -> decodeFrame("0207" + "00000001" + "ff"), "callId is not valid UTF-8");
    }

    @Test
    void refusesBoolBytesOtherThanZeroAndOne() {
        String frame = REPLY_HEAD + "00000001" + "00000000" + "00000000" + "00000fa1" + "02" + "00000000"
                + "00000000" + "00000000" + "0000000000000000" + "0000000000000000";
        assertViolation(() -> decodeFrame(frame), "guestStarted is a bool but reads 0x2");
    }

    @Test
    void refusesValuesTheRecordsRefuse() {
        assertViolation(() -> decodeFrame("0101" + "00000002" + "00000001" + "00000000"), "bad version range");
        assertViolation(() -> decodeFrame("0102" + "00000000" + "00000000"), "version must be at least 1");
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "00000000"), "at least one shard run");
        String slot0 = "00000000" + "00000000" + "0000000000000000" + "00000000" + "00000001";
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "00000002" + slot0 + slot0), "strictly increasing runIndex order");
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "00000001" + slot0.replaceFirst("00000001$", "00000000")),
                "attempt must be at least 1");
        assertViolation(() -> decodeFrame(REQUEST_HEAD + "00000001" + slot0.replaceFirst("^00000000", "ffffffff")),
                "runIndex must not be negative");
        assertViolation(() -> decodeFrame(requestHead("00000000") + "00000001" + slot0),
                "bindingVersion must be at least 1");
        assertViolation(() -> decodeFrame("0206" + "0000000000000001" + "ffffffffffffffff" + "00000000"),
                "publishMicros must not be negative");
    }

    @Test
    void aHostRunCannotCrossAConnectionAtAnEarlierVersion() {
        for (int version = 1; version < 3; version++) {
            for (WireMessage m : List.<WireMessage>of(WireFixtures.REQUEST, WireFixtures.REPLY, WireFixtures.STOP)) {
                ByteBuf out = Unpooled.buffer();
                try {
                    int v = version;
                    assertThatThrownBy(() -> WireCodec.encode(m, v, 1 << 20, out))
                            .isInstanceOfSatisfying(ThresherException.class,
                                    e -> assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION));
                    assertThat(out.readableBytes()).isZero();
                    byte[] frame = WireFixtures.encode(m);
                    assertViolation(() -> decode(Arrays.copyOfRange(frame, 4, frame.length), v),
                            "does not exist at protocol version " + v);
                } finally {
                    out.release();
                }
            }
        }
    }

    @Test
    void refusesToEncodeAFrameAboveTheCapAndLeavesTheBufferAsItWas() {
        ByteBuf out = Unpooled.buffer();
        try {
            out.writeByte(0x55);
            HostRequest big = new HostRequest(1, "c", "t", "b", "d", 1, 0, "x".repeat(100),
                    List.of(new ShardRun(0, 0, 0, "w", 1)));
            assertThatThrownBy(() -> WireCodec.encode(big, WireCodec.MAX_VERSION, 100, out))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
                        assertThat(e.getMessage()).contains("limits.wireMaxFrameBytes=100");
                    });
            assertThat(out.readableBytes()).isEqualTo(1);
            // the cap counts the whole frame, length field included
            byte[] exact = WireFixtures.encode(big);
            assertThatThrownBy(() -> WireCodec.encode(big, WireCodec.MAX_VERSION, exact.length - 1, out))
                    .isInstanceOf(ThresherException.class);
            WireCodec.encode(big, WireCodec.MAX_VERSION, exact.length, out);
            assertThat(out.readableBytes()).isEqualTo(1 + exact.length);
        } finally {
            out.release();
        }
    }

    @Test
    void recordsValidateTheirFields() {
        List<ShardRun> one = List.of(new ShardRun(0, 0, 0, "w", 1));
        assertThatThrownBy(() -> new HostRequest(1, null, "t", "b", "d", 1, 0, "{}", one))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new HostRequest(1, "c", "t", "b", "d", 1, -1, "{}", one))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("remainingBudgetMicros");
        assertThatThrownBy(() -> new HostRequest(1, "c", "t", "b", "d", 0, 0, "{}", one))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bindingVersion");
        assertThatThrownBy(() -> new HostRequest(1, "c", "t", "b", "d", 1, 0, "{}", List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one shard run");
        assertThatThrownBy(() -> new HostRequest(1, "c", "t", "b", "d", 1, 0, "{}",
                List.of(new ShardRun(2, 0, 0, "a", 1), new ShardRun(1, 0, 0, "b", 1))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("strictly increasing");
        assertThatThrownBy(() -> new ShardRun(0, -1, 0, "w", 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("partitionId");
        assertThatThrownBy(() -> new ShardRunOutcome(0, "w", 0, true, "", -1, 0, 0, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rowCount");
        assertThatThrownBy(() -> new ShardRunOutcome(0, "w", 0, true, null, 0, 0, 0, 0))
                .isInstanceOf(NullPointerException.class);
        List<ShardRunOutcome> withNull = new ArrayList<>();
        withNull.add(null);
        assertThatThrownBy(() -> new HostReply(1, 0, withNull)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new Hello(0, 1, "n")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new HelloAck(0, "n")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new CallStop(null)).isInstanceOf(NullPointerException.class);

        List<ShardRun> mutable = new ArrayList<>(one);
        HostRequest r = new HostRequest(1, "c", "t", "b", "d", 1, 0, "{}", mutable);
        mutable.clear();
        assertThat(r.runs()).hasSize(1);
        assertThatThrownBy(() -> r.runs().add(new ShardRun(5, 0, 0, "x", 1)))
                .isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void typeIdsAreGroupedByFamilyAndUnique() {
        for (MessageType t : MessageType.values()) {
            assertThat(MessageType.ofId(t.id())).isSameAs(t);
            assertThat(MessageType.RETIRED).doesNotContainKey(t.id());
            int family = t.id() >> 8;
            assertThat(family).isEqualTo(switch (t.family()) {
                case HANDSHAKE -> 0x01;
                case HOST_RUN -> 0x02;
            });
        }
        assertThat(MessageType.RETIRED).containsOnlyKeys(0x0201, 0x0202, 0x0203, 0x0204);
    }

    @Test
    void outcomesExposeTheirErrorCode() {
        assertThat(new ShardRunOutcome(1, "w", 7001, false, "m", 0, 0, 0, 0).code()).isEqualTo(ErrorCode.TARGET_STALE);
        assertThat(new ShardRunOutcome(1, "w", 123456, false, "m", 0, 0, 0, 0).code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
        assertThat(new ShardRunOutcome(1, "w", 0, true, "", 0, 0, 0, 0).published()).isTrue();
        assertThat(new ShardRunOutcome(1, "w", 4001, true, "trap", 0, 0, 0, 0).published()).isFalse();
    }

    @Test
    void aFailedReplyFailsEverySlotOfTheRequest() {
        HostRequest r = WireFixtures.REQUEST_SLOTS;
        HostReply failed = HostReply.failed(r, new ThresherException(ErrorCode.CELL_UNAVAILABLE, "stopping"), false);
        assertThat(failed.requestId()).isEqualTo(r.requestId());
        assertThat(failed.runs()).extracting(ShardRunOutcome::runIndex).containsExactly(0, 4, 16383);
        assertThat(failed.runs()).extracting(ShardRunOutcome::wireId).containsExactly("w-0", "w-4", "");
        assertThat(failed.runs()).allSatisfy(o -> {
            assertThat(o.code()).isEqualTo(ErrorCode.CELL_UNAVAILABLE);
            assertThat(o.guestStarted()).isFalse();
            assertThat(o.message()).isEqualTo("stopping");
        });
        assertThat(WireFixtures.decode(WireFixtures.encode(failed), WireCodec.MAX_VERSION)).isEqualTo(failed);
    }

    private static WireMessage randomMessage(Random r) {
        return switch (r.nextInt(6)) {
            case 0 -> new Hello(1 + r.nextInt(3), 4 + r.nextInt(3), randomString(r));
            case 1 -> new HelloAck(1 + r.nextInt(100), randomString(r));
            case 2 -> new WireMessage.HelloReject(r.nextInt(), randomString(r));
            case 5 -> new CallStop(randomString(r));
            case 3 -> {
                List<ShardRun> slots = new ArrayList<>();
                int n = 1 + r.nextInt(20);
                int runIndex = r.nextInt(100);
                for (int i = 0; i < n; i++) {
                    slots.add(new ShardRun(runIndex, r.nextInt(Integer.MAX_VALUE), r.nextLong(), randomString(r),
                            1 + r.nextInt(5)));
                    runIndex += 1 + r.nextInt(1000);
                }
                yield new HostRequest(r.nextLong(), randomString(r), randomString(r), randomString(r),
                        randomString(r), 1 + r.nextInt(Integer.MAX_VALUE), r.nextLong(Long.MAX_VALUE), randomString(r),
                        slots);
            }
            default -> {
                List<ShardRunOutcome> slots = new ArrayList<>();
                int n = r.nextInt(20);
                for (int i = 0; i < n; i++) {
                    slots.add(new ShardRunOutcome(r.nextInt(), randomString(r), r.nextBoolean() ? 0 : r.nextInt(),
                            r.nextBoolean(), randomString(r), r.nextInt(Integer.MAX_VALUE), r.nextInt(Integer.MAX_VALUE),
                            r.nextLong(Long.MAX_VALUE), r.nextLong(Long.MAX_VALUE)));
                }
                yield new HostReply(r.nextLong(), r.nextLong(Long.MAX_VALUE), slots);
            }
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

    private static String requestHead(String bindingVersion) {
        return "0205" + "0000000000000001" + "00000000" + "00000000" + "00000000" + "00000000" + bindingVersion
                + "0000000000000000" + "00000000";
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
