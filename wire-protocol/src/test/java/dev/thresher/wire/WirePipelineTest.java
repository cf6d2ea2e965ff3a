package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Partial;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The codec handlers and the server end on {@link EmbeddedChannel}s: real bytes, random fragments, leak checks. */
class WirePipelineTest {
    private static final int MAX = 1 << 20;

    @Test
    void decodesFramesFedInRandomFragmentsWithoutLeaking() {
        ByteArrayOutputStream stream = new ByteArrayOutputStream();
        List<WireMessage> expected = new ArrayList<>();
        for (var e : WireFixtures.GOLDEN.entrySet()) {
            stream.writeBytes(WireFixtures.goldenBytes(e.getKey()));
            expected.add(e.getValue());
        }
        byte[] all = stream.toByteArray();
        for (int seed = 0; seed < 200; seed++) {
            Random random = new Random(seed);
            EmbeddedChannel ch = codecChannel(WireCodec.MAX_VERSION);
            List<ByteBuf> fed = new ArrayList<>();
            int at = 0;
            while (at < all.length) {
                int n = Math.min(all.length - at, 1 + random.nextInt(seed % 2 == 0 ? 8 : 80));
                ByteBuf fragment = Unpooled.copiedBuffer(all, at, n);
                fed.add(fragment);
                ch.writeInbound(fragment);
                at += n;
            }
            List<WireMessage> decoded = new ArrayList<>();
            for (Object m; (m = ch.readInbound()) != null; ) {
                decoded.add((WireMessage) m);
            }
            assertThat(ch.finish()).isFalse();
            assertThat(decoded).hasSize(expected.size());
            for (int i = 0; i < expected.size(); i++) {
                WireFixtures.assertBitExact(decoded.get(i), expected.get(i));
            }
            assertAllReleased(fed);
        }
    }

    @Test
    void encodesWholeFrames() {
        EmbeddedChannel ch = codecChannel(WireCodec.MAX_VERSION);
        for (var e : WireFixtures.GOLDEN.entrySet()) {
            assertThat(ch.writeOutbound(e.getValue())).isTrue();
            ByteBuf out = ch.readOutbound();
            assertThat(ByteBufUtil.hexDump(out)).isEqualTo(HexFormat.of().formatHex(WireFixtures.goldenBytes(e.getKey())));
            out.release();
        }
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void unknownTypeIdFailsTypedAndReleasesTheFrame() {
        EmbeddedChannel ch = codecChannel(WireCodec.MAX_VERSION);
        ByteBuf frame = Unpooled.wrappedBuffer(HexFormat.of().parseHex("00000006" + "0999" + "01020304"));
        assertThatThrownBy(() -> ch.writeInbound(frame))
                .isInstanceOf(DecoderException.class)
                .cause()
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION));
        ch.finishAndReleaseAll();
        assertThat(frame.refCnt()).isZero();
    }

    @Test
    void truncatedPayloadFailsTypedAndReleasesTheFrame() {
        byte[] golden = WireFixtures.goldenBytes("shard-run-result");
        // a length field that claims 3 bytes fewer than the message needs: the last double is cut
        ByteBuf frame = Unpooled.buffer();
        frame.writeInt(golden.length - 4 - 3);
        frame.writeBytes(golden, 4, golden.length - 4 - 3);
        EmbeddedChannel ch = codecChannel(WireCodec.MAX_VERSION);
        assertThatThrownBy(() -> ch.writeInbound(frame))
                .hasCauseInstanceOf(ThresherException.class)
                .hasMessageContaining("truncated");
        ch.finishAndReleaseAll();
        assertThat(frame.refCnt()).isZero();
    }

    @Test
    void oversizedFrameFailsFastWithoutBufferingIt() {
        EmbeddedChannel ch = new EmbeddedChannel();
        WirePipeline.addCodec(ch.pipeline(), 64);
        ByteBuf head = Unpooled.buffer().writeInt(1_000_000).writeShort(0x0201);
        assertThatThrownBy(() -> ch.writeInbound(head)).isInstanceOf(TooLongFrameException.class);
        ch.finishAndReleaseAll();
        assertThat(head.refCnt()).isZero();
    }

    @Test
    void serverAnswersTheHandshakeAndARequestByteForByte() {
        List<Long> received = new ArrayList<>();
        WireMessage result = WireFixtures.GOLDEN.get("shard-run-result");
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> {
            received.add(receivedNanos);
            assertThat(request).isEqualTo(WireFixtures.REQUEST);
            return CompletableFuture.completedFuture(result);
        });
        long before = System.nanoTime();
        List<ByteBuf> fed = new ArrayList<>();
        fed.add(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-2-2")));
        ch.writeInbound(fed.get(0));
        assertOutboundFrame(ch, "hello-ack-2");
        assertThat(WirePipeline.version(ch)).isEqualTo(2);

        fed.add(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("shard-run-request")));
        ch.writeInbound(fed.get(1));
        ch.runPendingTasks();
        assertOutboundFrame(ch, "shard-run-result");
        assertThat(received).singleElement().satisfies(n -> assertThat(n - before).isNotNegative());
        assertThat(ch.isOpen()).isTrue();
        assertThat(ch.finish()).isFalse();
        assertAllReleased(fed);
    }

    @Test
    void serverClosesOnARequestBeforeTheHandshake() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> {
            throw new AssertionError("must not be called");
        });
        ByteBuf frame = Unpooled.wrappedBuffer(WireFixtures.goldenBytes("shard-run-request"));
        ch.writeInbound(frame);
        assertThat(ch.isOpen()).isFalse();
        assertThat(frame.refCnt()).isZero();
        assertThat((Object) ch.readOutbound()).isNull();
    }

    @Test
    void serverClosesOnUnknownTypeIdAndOnOversizedFrames() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ByteBuf unknown = Unpooled.wrappedBuffer(HexFormat.of().parseHex("00000002" + "7777"));
        ch.writeInbound(unknown);
        assertThat(ch.isOpen()).isFalse();
        assertThat(unknown.refCnt()).isZero();

        EmbeddedChannel small = new EmbeddedChannel();
        ServerConnection.configure(small.pipeline(), "node-b", 64, (r, n) -> new CompletableFuture<>(), Runnable::run,
                Failpoints.disabled());
        ByteBuf big = Unpooled.buffer().writeInt(65).writeShort(0x0101).writeZero(20);
        small.writeInbound(big);
        assertThat(small.isOpen()).isFalse();
        assertThat(big.refCnt()).isZero();
    }

    @Test
    void serverClosesOnANegativeLengthField() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ByteBuf corrupt = Unpooled.wrappedBuffer(HexFormat.of().parseHex("ffffffff" + "0101"));
        ch.writeInbound(corrupt);
        assertThat(ch.isOpen()).isFalse();
        assertThat(corrupt.refCnt()).isZero();
    }

    @Test
    void serverRejectsAHelloWithNoCommonVersionAndCloses() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ch.writeInbound(frame(new Hello(3, 4, "future-node")));
        ByteBuf out = ch.readOutbound();
        HelloReject reject = (HelloReject) WireFixtures.decode(ByteBufUtil.getBytes(out), WireCodec.NO_VERSION);
        out.release();
        assertThat(reject.errorCode()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION.code());
        assertThat(reject.message()).contains("[3, 4]").contains("[2, 2]");
        assertThat(ch.isOpen()).isFalse();
    }

    @Test
    void serverRejectsAPeerThatSpeaksOnlyVersionOne() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello")));
        ByteBuf out = ch.readOutbound();
        HelloReject reject = (HelloReject) WireFixtures.decode(ByteBufUtil.getBytes(out), WireCodec.NO_VERSION);
        out.release();
        assertThat(reject.message()).contains("[1, 1]").contains("[2, 2]");
        assertThat(ch.isOpen()).isFalse();
    }

    @Test
    void serverPicksTheHighestCommonVersion() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ch.writeInbound(frame(new Hello(1, 9, "newer-node")));
        ByteBuf out = ch.readOutbound();
        assertThat(WireFixtures.decode(ByteBufUtil.getBytes(out), WireCodec.NO_VERSION)).isEqualTo(new HelloAck(2, "node-b"));
        out.release();
        ch.finishAndReleaseAll();
    }

    @Test
    void serverTurnsHandlerOutcomesIntoReplies() {
        ShardRunRequest r = WireFixtures.REQUEST;
        assertThat(ServerConnection.replyFor(r, null,
                new java.util.concurrent.CompletionException(new ThresherException(ErrorCode.TARGET_STALE, "stale"))))
                .isEqualTo(new ShardRunFailure(42, "w1", ErrorCode.TARGET_STALE.code(), false, "stale"));
        assertThat(ServerConnection.replyFor(r, null, new ThresherException(ErrorCode.GUEST_TRAP, "trap")))
                .isEqualTo(new ShardRunFailure(42, "w1", ErrorCode.GUEST_TRAP.code(), true, "trap"));
        assertThat(ServerConnection.replyFor(r, null, new IllegalStateException("boom")))
                .isInstanceOfSatisfying(ShardRunFailure.class, f -> {
                    assertThat(f.code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
                    assertThat(f.guestStarted()).isTrue();
                    assertThat(f.message()).contains("boom");
                });
        ShardRunResult other = new ShardRunResult(99, "w1", 0, 0, 0, 0, 0, 0, List.of(new Partial("a", 1)));
        assertThat(ServerConnection.replyFor(r, other, null))
                .isInstanceOfSatisfying(ShardRunFailure.class, f -> assertThat(f.code()).isEqualTo(ErrorCode.INTERNAL_ERROR));
        assertThat(ServerConnection.replyFor(r, new HelloAck(1, "x"), null))
                .isInstanceOfSatisfying(ShardRunFailure.class, f -> assertThat(f.code()).isEqualTo(ErrorCode.INTERNAL_ERROR));
        assertThat(ServerConnection.replyFor(r, null, null))
                .isInstanceOfSatisfying(ShardRunFailure.class, f -> assertThat(f.code()).isEqualTo(ErrorCode.INTERNAL_ERROR));
        ShardRunResult mine = new ShardRunResult(42, "w1", 0, 0, 0, 0, 0, 0, List.of());
        assertThat(ServerConnection.replyFor(r, mine, null)).isSameAs(mine);
    }

    @Test
    void serverReplacesAnOversizedReplyWithATypedFailure() {
        AtomicLong calls = new AtomicLong();
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", 256, (request, n) -> {
            calls.incrementAndGet();
            List<Partial> many = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                many.add(new Partial("key-" + i, i));
            }
            return CompletableFuture.completedFuture(
                    new ShardRunResult(request.requestId(), request.wireId(), 0, 0, 0, 100, 0, 0, many));
        }, Runnable::run, Failpoints.disabled());
        ch.writeInbound(frame(new Hello(2, 2, "a")));
        ((ByteBuf) ch.readOutbound()).release();
        ch.writeInbound(frame(WireFixtures.REQUEST));
        ch.runPendingTasks();
        ByteBuf out = ch.readOutbound();
        ShardRunFailure failure = (ShardRunFailure) WireFixtures.decode(ByteBufUtil.getBytes(out), WireCodec.MAX_VERSION);
        out.release();
        assertThat(calls).hasValue(1);
        assertThat(failure.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
        assertThat(failure.guestStarted()).isTrue();
        assertThat(failure.requestId()).isEqualTo(42);
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    private static EmbeddedChannel codecChannel(int version) {
        EmbeddedChannel ch = new EmbeddedChannel();
        WirePipeline.addCodec(ch.pipeline(), MAX);
        WirePipeline.agree(ch, version);
        return ch;
    }

    private static EmbeddedChannel serverChannel(ShardRunHandler handler) {
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", MAX, handler, Runnable::run, Failpoints.disabled());
        return ch;
    }

    private static ByteBuf frame(WireMessage m) {
        return Unpooled.wrappedBuffer(WireFixtures.encode(m));
    }

    private static void assertOutboundFrame(EmbeddedChannel ch, String golden) {
        ByteBuf out = ch.readOutbound();
        assertThat(out).as("a %s frame was written", golden).isNotNull();
        try {
            assertThat(ByteBufUtil.hexDump(out)).isEqualTo(HexFormat.of().formatHex(WireFixtures.goldenBytes(golden)));
        } finally {
            out.release();
        }
    }

    private static void assertAllReleased(List<ByteBuf> buffers) {
        for (ByteBuf b : buffers) {
            assertThat(b.refCnt()).as("refCnt of an input buffer").isZero();
        }
    }
}
