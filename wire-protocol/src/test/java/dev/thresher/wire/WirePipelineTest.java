package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints;
import dev.thresher.failpoints.Site;
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
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import java.io.ByteArrayOutputStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The codec handlers and both connection ends on {@link EmbeddedChannel}s: real bytes, random fragments, leak checks. */
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
            assertThat(decoded).containsExactlyElementsOf(expected);
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
    void retiredShardRunFramesFailByNameAndAreReleased() {
        for (WireFixtures.Retired vector : WireFixtures.RETIRED) {
            EmbeddedChannel ch = codecChannel(WireCodec.MAX_VERSION);
            ByteBuf frame = Unpooled.wrappedBuffer(WireFixtures.goldenBytes(vector.version(), vector.name()));
            assertThatThrownBy(() -> ch.writeInbound(frame))
                    .as("%s", vector)
                    .isInstanceOf(DecoderException.class)
                    .cause()
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION);
                        assertThat(e.getMessage()).contains(String.format("0x%04x is retired", vector.typeId()));
                    });
            ch.finishAndReleaseAll();
            assertThat(frame.refCnt()).as("%s", vector).isZero();
        }
    }

    @Test
    void truncatedPayloadFailsTypedAndReleasesTheFrame() {
        byte[] golden = WireFixtures.goldenBytes("host-run-reply-slots");
        // a length field that claims 3 bytes fewer than the message needs: the last i64 is cut (three slots, so
        // the count check still passes and the cut is found inside the last element)
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
        ByteBuf head = Unpooled.buffer().writeInt(1_000_000).writeShort(0x0205);
        assertThatThrownBy(() -> ch.writeInbound(head)).isInstanceOf(TooLongFrameException.class);
        ch.finishAndReleaseAll();
        assertThat(head.refCnt()).isZero();
    }

    @Test
    void serverAnswersTheHandshakeAndARequestByteForByte() {
        List<Long> received = new ArrayList<>();
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> {
            received.add(receivedNanos);
            assertThat(request).isEqualTo(WireFixtures.REQUEST);
            return CompletableFuture.completedFuture(WireFixtures.REPLY);
        });
        long before = System.nanoTime();
        List<ByteBuf> fed = new ArrayList<>();
        fed.add(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-3-3")));
        ch.writeInbound(fed.get(0));
        assertOutboundFrame(ch, "hello-ack-3");
        assertThat(WirePipeline.version(ch)).isEqualTo(3);

        fed.add(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("host-run-request")));
        ch.writeInbound(fed.get(1));
        ch.runPendingTasks();
        assertOutboundFrame(ch, "host-run-reply");
        assertThat(received).singleElement().satisfies(n -> assertThat(n - before).isNotNegative());
        assertThat(ch.isOpen()).isTrue();
        assertThat(ch.finish()).isFalse();
        assertAllReleased(fed);
    }

    @Test
    void serverAnswersARequestOfSeveralSlotsByteForByte() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> {
            assertThat(request).isEqualTo(WireFixtures.REQUEST_SLOTS);
            return CompletableFuture.completedFuture(WireFixtures.REPLY_SLOTS);
        });
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-3-3")));
        assertOutboundFrame(ch, "hello-ack-3");
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("host-run-request-slots")));
        ch.runPendingTasks();
        assertOutboundFrame(ch, "host-run-reply-slots");
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void serverClosesOnARequestBeforeTheHandshake() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> {
            throw new AssertionError("must not be called");
        });
        ByteBuf frame = Unpooled.wrappedBuffer(WireFixtures.goldenBytes("host-run-request"));
        ch.writeInbound(frame);
        assertThat(ch.isOpen()).isFalse();
        assertThat(frame.refCnt()).isZero();
        assertThat((Object) ch.readOutbound()).isNull();
    }

    @Test
    void serverClosesOnARetiredShardRunRequestAfterTheHandshake() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> {
            throw new AssertionError("must not be called");
        });
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-3-3")));
        assertOutboundFrame(ch, "hello-ack-3");
        ByteBuf frame = Unpooled.wrappedBuffer(WireFixtures.goldenBytes(2, "shard-run-request"));
        ch.writeInbound(frame);
        assertThat(ch.isOpen()).isFalse();
        assertThat(frame.refCnt()).isZero();
        assertThat((Object) ch.readOutbound()).isNull();
    }

    @Test
    void serverClosesOnAReplyFromItsClient() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-3-3")));
        assertOutboundFrame(ch, "hello-ack-3");
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("host-run-reply")));
        assertThat(ch.isOpen()).isFalse();
    }

    @Test
    void serverHandsACallStopToTheHandlerAndAnswersNothing() {
        List<String> stopped = new CopyOnWriteArrayList<>();
        EmbeddedChannel ch = serverChannel(stopRecorder(stopped));
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-3-3")));
        assertOutboundFrame(ch, "hello-ack-3");
        List<ByteBuf> fed = List.of(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("call-stop")),
                Unpooled.wrappedBuffer(WireFixtures.goldenBytes("call-stop-unicode")));
        fed.forEach(ch::writeInbound);
        ch.runPendingTasks();
        assertThat(stopped).containsExactly("c1", "call-\u00fc-\uD83D\uDE00");
        assertThat((Object) ch.readOutbound()).isNull();
        assertThat(ch.isOpen()).isTrue();
        assertAllReleased(fed);
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aCallStopIsHandedOnOnlyAfterTheRequestsThatArrivedBeforeIt() {
        List<String> events = new CopyOnWriteArrayList<>();
        ArrayDeque<Runnable> dispatched = new ArrayDeque<>();
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", MAX, new HostRunHandler() {
            @Override
            public CompletableFuture<HostReply> handle(HostRequest request, long receivedNanos) {
                events.add("handle " + request.requestId());
                return new CompletableFuture<>();
            }

            @Override
            public void stop(String callId) {
                events.add("stop " + callId);
            }
        }, dispatched::add, Failpoints.disabled());
        handshake(ch);
        HostRequest second = new HostRequest(2, "c1", "t", "sum", "d1", 2, 1_000, "{}",
                List.of(new ShardRun(9, 4, 5, "w2", 1)));
        ch.writeInbound(frame(WireFixtures.REQUEST));
        ch.writeInbound(frame(second));
        ch.writeInbound(frame(WireFixtures.STOP));
        // both requests wait for a dispatch thread; the stop waits for both
        assertThat(dispatched).hasSize(2);
        dispatched.removeLast().run();
        assertThat(events).containsExactly("handle 2");
        assertThat(dispatched).hasSize(1);
        dispatched.removeFirst().run();
        assertThat(events).containsExactly("handle 2", "handle 42");
        // the last request handed on released the stop, which goes to a dispatch thread of its own
        assertThat(dispatched).hasSize(1);
        dispatched.removeFirst().run();
        assertThat(events).containsExactly("handle 2", "handle 42", "stop c1");
        // with nothing in front of it, a stop is dispatched at once
        ch.writeInbound(frame(new CallStop("c2")));
        assertThat(dispatched).hasSize(1);
        dispatched.removeFirst().run();
        assertThat(events).endsWith("stop c2");
        assertThat((Object) ch.readOutbound()).isNull();
        ch.finishAndReleaseAll();
    }

    @Test
    void aCallStopWaitsForARequestTheFailpointEndedWithoutTheHandler() {
        Failpoints failpoints = Failpoints.enabled();
        failpoints.arm(Failpoint.WIRE_RECEIVE, 1, Failpoints.Action.fail(ErrorCode.TARGET_STALE));
        List<String> stopped = new CopyOnWriteArrayList<>();
        ArrayDeque<Runnable> dispatched = new ArrayDeque<>();
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", MAX, stopRecorder(stopped), dispatched::add, failpoints);
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.REQUEST));
        ch.writeInbound(frame(WireFixtures.STOP));
        assertThat(dispatched).hasSize(1);
        dispatched.removeFirst().run();
        ch.runPendingTasks();
        assertFailedEverySlot(readReply(ch), WireFixtures.REQUEST, ErrorCode.TARGET_STALE, false, "wire.receive");
        dispatched.removeFirst().run();
        assertThat(stopped).containsExactly("c1");
        ch.finishAndReleaseAll();
    }

    @Test
    void aStopThatThrowsIsLoggedAndTheConnectionStaysOpen() {
        EmbeddedChannel ch = serverChannel(new HostRunHandler() {
            @Override
            public CompletableFuture<HostReply> handle(HostRequest request, long receivedNanos) {
                return CompletableFuture.completedFuture(WireFixtures.published(request));
            }

            @Override
            public void stop(String callId) {
                throw new IllegalStateException("handler bug");
            }
        });
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.STOP));
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isTrue();
        ch.writeInbound(frame(WireFixtures.REQUEST));
        ch.runPendingTasks();
        assertThat(readReply(ch)).isEqualTo(WireFixtures.published(WireFixtures.REQUEST));
        ch.finishAndReleaseAll();
    }

    @Test
    void aHandlerWithoutStopIgnoresIt() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.STOP));
        ch.runPendingTasks();
        assertThat((Object) ch.readOutbound()).isNull();
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void serverDropsACallStopWhileShuttingDown() {
        Executor refusing = task -> {
            throw new RejectedExecutionException("shut down");
        };
        List<String> stopped = new CopyOnWriteArrayList<>();
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", MAX, stopRecorder(stopped), refusing, Failpoints.disabled());
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.STOP));
        ch.runPendingTasks();
        assertThat(stopped).isEmpty();
        assertThat((Object) ch.readOutbound()).isNull();
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void serverClosesOnACallStopBeforeTheHandshake() {
        List<String> stopped = new CopyOnWriteArrayList<>();
        EmbeddedChannel ch = serverChannel(stopRecorder(stopped));
        ByteBuf frame = Unpooled.wrappedBuffer(WireFixtures.goldenBytes("call-stop"));
        ch.writeInbound(frame);
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isFalse();
        assertThat(frame.refCnt()).isZero();
        assertThat(stopped).isEmpty();
        assertThat((Object) ch.readOutbound()).isNull();
    }

    @Test
    void clientClosesOnACallStopFromItsServer() {
        EmbeddedChannel ch = clientChannel();
        assertOutboundFrame(ch, "hello-3-3");
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-ack-3")));
        assertThat(ch.isOpen()).isTrue();
        ByteBuf frame = Unpooled.wrappedBuffer(WireFixtures.goldenBytes("call-stop"));
        ch.writeInbound(frame);
        assertThat(ch.isOpen()).isFalse();
        assertThat(frame.refCnt()).isZero();
    }

    /** A handler that never answers a request and records the stops. */
    private static HostRunHandler stopRecorder(List<String> stopped) {
        return new HostRunHandler() {
            @Override
            public CompletableFuture<HostReply> handle(HostRequest request, long receivedNanos) {
                return new CompletableFuture<>();
            }

            @Override
            public void stop(String callId) {
                stopped.add(callId);
            }
        };
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
        ch.writeInbound(frame(new Hello(4, 5, "future-node")));
        HelloReject reject = readReject(ch);
        assertThat(reject.errorCode()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION.code());
        assertThat(reject.message()).contains("[4, 5]").contains("[3, 3]");
        assertThat(ch.isOpen()).isFalse();
    }

    @Test
    void serverRejectsAPeerThatSpeaksOnlyVersionTwo() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-2-2")));
        HelloReject reject = readReject(ch);
        assertThat(reject.errorCode()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION.code());
        assertThat(reject.message()).contains("[2, 2]").contains("[3, 3]");
        assertThat(ch.isOpen()).isFalse();
    }

    @Test
    void serverRejectsAPeerThatSpeaksOnlyVersionOne() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello")));
        HelloReject reject = readReject(ch);
        assertThat(reject.message()).contains("[1, 1]").contains("[3, 3]");
        assertThat(ch.isOpen()).isFalse();
    }

    @Test
    void serverPicksTheHighestCommonVersion() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> new CompletableFuture<>());
        ch.writeInbound(frame(new Hello(1, 9, "newer-node")));
        ByteBuf out = ch.readOutbound();
        assertThat(WireFixtures.decode(ByteBufUtil.getBytes(out), WireCodec.NO_VERSION)).isEqualTo(new HelloAck(3, "node-b"));
        out.release();
        ch.finishAndReleaseAll();
    }

    @Test
    void clientOpensWithAHelloOfVersionThreeAndRefusesAnAckOfVersionTwo() {
        EmbeddedChannel ch = clientChannel();
        assertOutboundFrame(ch, "hello-3-3");
        ch.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-ack-2")));
        assertThat(ch.isOpen()).isFalse();

        EmbeddedChannel ok = clientChannel();
        assertOutboundFrame(ok, "hello-3-3");
        ok.writeInbound(Unpooled.wrappedBuffer(WireFixtures.goldenBytes("hello-ack-3")));
        assertThat(ok.isOpen()).isTrue();
        assertThat(WirePipeline.version(ok)).isEqualTo(3);
        ok.finishAndReleaseAll();
    }

    @Test
    void serverTurnsHandlerOutcomesIntoReplies() {
        HostRequest r = WireFixtures.REQUEST_SLOTS;
        assertFailedEverySlot(ServerConnection.replyFor(r, null,
                new CompletionException(new ThresherException(ErrorCode.TARGET_STALE, "stale"))),
                r, ErrorCode.TARGET_STALE, false, "stale");
        assertFailedEverySlot(ServerConnection.replyFor(r, null, new ThresherException(ErrorCode.GUEST_TRAP, "trap")),
                r, ErrorCode.GUEST_TRAP, true, "trap");
        assertFailedEverySlot(ServerConnection.replyFor(r, null, new IllegalStateException("boom")),
                r, ErrorCode.INTERNAL_ERROR, true, "boom");

        HostReply mine = WireFixtures.REPLY_SLOTS;
        assertThat(ServerConnection.replyFor(r, mine, null)).isSameAs(mine);

        List<ShardRunOutcome> outcomes = mine.runs();
        List<Object> misfits = List.of(
                new HostReply(99, 0, outcomes),                                   // another request's id
                new HostReply(43, 0, outcomes.subList(0, 2)),                     // a slot missing
                new HostReply(43, 0, List.of(outcomes.get(1), outcomes.get(0), outcomes.get(2))), // out of order
                new HostReply(43, 0, List.of(outcomes.get(0), outcomes.get(1), outcomes.get(2), outcomes.get(2))),
                new HostReply(43, 0, List.of(outcomes.get(0), outcomes.get(1),
                        new ShardRunOutcome(16383, "other", 0, true, "", 0, 0, 0, 0))),   // another wire id
                new HostReply(43, 0, List.of(outcomes.get(0), outcomes.get(1),
                        new ShardRunOutcome(16382, "", 0, true, "", 0, 0, 0, 0))),        // another slot index
                new HelloAck(1, "x"),                                                 // another message
                "not even a message");
        for (Object misfit : misfits) {
            assertFailedEverySlot(ServerConnection.replyFor(r, misfit, null), r, ErrorCode.INTERNAL_ERROR, true,
                    "the host-run handler answered with");
        }
        assertFailedEverySlot(ServerConnection.replyFor(r, null, null), r, ErrorCode.INTERNAL_ERROR, true, "no reply");
    }

    @Test
    void serverAnswersAFutureCompletedWithSomethingElse() {
        EmbeddedChannel ch = serverChannel((request, receivedNanos) -> {
            @SuppressWarnings({"unchecked", "rawtypes"})
            CompletableFuture<HostReply> polluted = (CompletableFuture) CompletableFuture.completedFuture("oops");
            return polluted;
        });
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.REQUEST));
        ch.runPendingTasks();
        HostReply reply = readReply(ch);
        assertFailedEverySlot(reply, WireFixtures.REQUEST, ErrorCode.INTERNAL_ERROR, true, "String");
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void serverReplacesAnOversizedReplyWithATypedFailure() {
        AtomicLong calls = new AtomicLong();
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", 256, (request, n) -> {
            calls.incrementAndGet();
            ShardRun slot = request.runs().getFirst();
            return CompletableFuture.completedFuture(new HostReply(request.requestId(), 0, List.of(
                    new ShardRunOutcome(slot.runIndex(), slot.wireId(), 4001, true, "x".repeat(300), 0, 0, 0, 0))));
        }, Runnable::run, Failpoints.disabled());
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.REQUEST));
        ch.runPendingTasks();
        HostReply reply = readReply(ch);
        assertThat(calls).hasValue(1);
        assertFailedEverySlot(reply, WireFixtures.REQUEST, ErrorCode.PAYLOAD_TOO_LARGE, true, "limits.wireMaxFrameBytes=256");
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void serverClosesTheConnectionWhenEvenTheReplacementReplyIsTooLarge() {
        // five slots fit in a request of 256 bytes, but five failed outcomes carrying the encoder's message do not
        List<ShardRun> slots = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            slots.add(new ShardRun(i, i, 1, "w", 1));
        }
        HostRequest request = new HostRequest(9, "c", "t", "b", "d", 1, 1000, "{}", slots);
        assertThat(WireFixtures.encode(request).length).isLessThanOrEqualTo(256);
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", 256, (r, n) -> CompletableFuture.completedFuture(
                new HostReply(r.requestId(), 0, r.runs().stream()
                        .map(s -> new ShardRunOutcome(s.runIndex(), s.wireId(), 0, true, "y".repeat(100), 0, 0, 0, 0))
                        .toList())), Runnable::run, Failpoints.disabled());
        handshake(ch);
        ch.writeInbound(frame(request));
        ch.runPendingTasks();
        assertThat((Object) ch.readOutbound()).isNull();
        assertThat(ch.isOpen()).isFalse();
    }

    @Test
    void serverRefusesEverySlotWhileShuttingDown() {
        Executor refusing = task -> {
            throw new RejectedExecutionException("shut down");
        };
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", MAX, (r, n) -> {
            throw new AssertionError("must not be called");
        }, refusing, Failpoints.disabled());
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.REQUEST_SLOTS));
        ch.runPendingTasks();
        assertFailedEverySlot(readReply(ch), WireFixtures.REQUEST_SLOTS, ErrorCode.CELL_UNAVAILABLE, false,
                "node node-b is shutting down");
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void wireReceiveIsHitOncePerSlotInSlotOrder() {
        Failpoints failpoints = Failpoints.enabled();
        List<Site> sites = new CopyOnWriteArrayList<>();
        failpoints.arm(Failpoint.WIRE_RECEIVE, site -> sites.add(site) && false, -1, Failpoints.Action.drop());
        AtomicLong calls = new AtomicLong();
        EmbeddedChannel ch = serverChannel((r, n) -> {
            calls.incrementAndGet();
            return CompletableFuture.completedFuture(WireFixtures.REPLY_SLOTS);
        }, failpoints);
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.REQUEST_SLOTS));
        ch.runPendingTasks();
        assertThat(readReply(ch)).isEqualTo(WireFixtures.REPLY_SLOTS);
        assertThat(calls).hasValue(1);
        assertThat(failpoints.hits(Failpoint.WIRE_RECEIVE)).isEqualTo(3);
        assertThat(sites).containsExactly(
                new Site("node-b", 0, 0, "w-0"),
                new Site("node-b", 12, 4, "w-4"),
                new Site("node-b", Integer.MAX_VALUE, 16383, ""));
        ch.finishAndReleaseAll();
    }

    @Test
    void aWireReceiveFailureOnOneSlotFailsTheWholeRequestUnstarted() {
        Failpoints failpoints = Failpoints.enabled();
        failpoints.arm(Failpoint.WIRE_RECEIVE, site -> site.runIndex() == 4, 1,
                Failpoints.Action.fail(ErrorCode.TARGET_STALE));
        EmbeddedChannel ch = serverChannel((r, n) -> {
            throw new AssertionError("must not be called");
        }, failpoints);
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.REQUEST_SLOTS));
        ch.runPendingTasks();
        assertFailedEverySlot(readReply(ch), WireFixtures.REQUEST_SLOTS, ErrorCode.TARGET_STALE, false,
                "failpoint wire.receive fired");
        // the slot after the failing one is not reached
        assertThat(failpoints.hits(Failpoint.WIRE_RECEIVE)).isEqualTo(2);
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void aWireReceiveDropOnOneSlotClosesTheConnection() {
        Failpoints failpoints = Failpoints.enabled();
        failpoints.arm(Failpoint.WIRE_RECEIVE, site -> site.runIndex() == 16383, 1, Failpoints.Action.drop());
        EmbeddedChannel ch = serverChannel((r, n) -> {
            throw new AssertionError("must not be called");
        }, failpoints);
        handshake(ch);
        ch.writeInbound(frame(WireFixtures.REQUEST_SLOTS));
        ch.runPendingTasks();
        assertThat((Object) ch.readOutbound()).isNull();
        assertThat(ch.isOpen()).isFalse();
        assertThat(failpoints.hits(Failpoint.WIRE_RECEIVE)).isEqualTo(3);
    }

    private static void assertFailedEverySlot(HostReply reply, HostRequest request, ErrorCode code,
            boolean guestStarted, String messagePart) {
        assertThat(reply.requestId()).isEqualTo(request.requestId());
        assertThat(reply.runs()).extracting(ShardRunOutcome::runIndex)
                .containsExactlyElementsOf(request.runs().stream().map(ShardRun::runIndex).toList());
        assertThat(reply.runs()).extracting(ShardRunOutcome::wireId)
                .containsExactlyElementsOf(request.runs().stream().map(ShardRun::wireId).toList());
        assertThat(reply.runs()).allSatisfy(o -> {
            assertThat(o.code()).isEqualTo(code);
            assertThat(o.guestStarted()).isEqualTo(guestStarted);
            assertThat(o.message()).contains(messagePart);
            assertThat(o.published()).isFalse();
        });
    }

    private static EmbeddedChannel codecChannel(int version) {
        EmbeddedChannel ch = new EmbeddedChannel();
        WirePipeline.addCodec(ch.pipeline(), MAX);
        WirePipeline.agree(ch, version);
        return ch;
    }

    private static EmbeddedChannel serverChannel(HostRunHandler handler) {
        return serverChannel(handler, Failpoints.disabled());
    }

    private static EmbeddedChannel serverChannel(HostRunHandler handler, Failpoints failpoints) {
        EmbeddedChannel ch = new EmbeddedChannel();
        ServerConnection.configure(ch.pipeline(), "node-b", MAX, handler, Runnable::run, failpoints);
        return ch;
    }

    /** A client end as a connection installs it, active at once: its Hello is the first outbound frame. */
    private static EmbeddedChannel clientChannel() {
        ClientConnection client = new ClientConnection("peer", 1, "node-a", MAX, 60_000, c -> {});
        return new EmbeddedChannel(new WirePipeline.FrameDecoder(MAX), new WirePipeline.MessageDecoder(),
                new WirePipeline.MessageEncoder(MAX), client);
    }

    private static void handshake(EmbeddedChannel ch) {
        ch.writeInbound(frame(new Hello(3, 3, "a")));
        ((ByteBuf) ch.readOutbound()).release();
        assertThat(WirePipeline.version(ch)).isEqualTo(3);
    }

    private static HostReply readReply(EmbeddedChannel ch) {
        ByteBuf out = ch.readOutbound();
        assertThat(out).as("a reply was written").isNotNull();
        try {
            return (HostReply) WireFixtures.decode(ByteBufUtil.getBytes(out), WireCodec.MAX_VERSION);
        } finally {
            out.release();
        }
    }

    private static HelloReject readReject(EmbeddedChannel ch) {
        ByteBuf out = ch.readOutbound();
        try {
            return (HelloReject) WireFixtures.decode(ByteBufUtil.getBytes(out), WireCodec.NO_VERSION);
        } finally {
            out.release();
        }
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
