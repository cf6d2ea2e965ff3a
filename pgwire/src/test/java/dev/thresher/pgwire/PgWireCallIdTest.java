package dev.thresher.pgwire;

import static dev.thresher.pgwire.BackendReader.types;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.CallOutcome;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.BackendReader.Message;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The call id a caller is told once its call is recorded (a NoticeResponse before the answer, and the
 * ErrorResponse's detail), {@code SET thresher.call_id_notice}, and {@code SHOW CALL 'id'}, on the real
 * pipeline over an {@link EmbeddedChannel} fed in random fragments.
 */
class PgWireCallIdTest {
    private static final Map<String, String> STARTUP = Map.of("user", "thresher", "database", "thresher");
    private static final String ID1 = "0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f";
    private static final String ID2 = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";

    /** Records every request; the test tells listeners and completes futures itself, in the order it wants. */
    static final class Calls implements CallService {
        final List<CallRequest> requests = new CopyOnWriteArrayList<>();
        final List<CompletableFuture<CallResult>> futures = new CopyOnWriteArrayList<>();

        @Override
        public CompletableFuture<CallResult> call(CallRequest request) {
            requests.add(request);
            CompletableFuture<CallResult> f = new CompletableFuture<>();
            futures.add(f);
            return f;
        }

        /** Tells call {@code n}'s listener {@code id} from another thread, as the coordinator does. */
        void recorded(int n, String id) {
            Thread t = Thread.ofPlatform().start(() -> requests.get(n).onRecorded().accept(id));
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    static final class Connection {
        final EmbeddedChannel channel = new EmbeddedChannel();
        final List<ByteBuf> fed = new ArrayList<>();
        final Random random;

        Connection(CallService calls, PgWireServer.Lookups lookups, long seed) {
            PgWireServer.configure(channel.pipeline(), new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher",
                    "s3cret", "acme", Limits.DEFAULTS), calls, lookups);
            random = new Random(seed);
            send(new FrontendBytes().startup(STARTUP));
            assertThat(types(receive())).endsWith("KZ");
        }

        void send(FrontendBytes bytes) {
            byte[] all = bytes.toByteArray();
            int at = 0;
            while (at < all.length && channel.isOpen()) {
                int n = Math.min(all.length - at, 1 + random.nextInt(40));
                ByteBuf fragment = Unpooled.copiedBuffer(all, at, n);
                fed.add(fragment);
                channel.writeInbound(fragment);
                channel.runPendingTasks();
                at += n;
            }
        }

        /** What was flushed so far. */
        List<Message> receive() {
            channel.runPendingTasks();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteBuf buf;
            while ((buf = channel.readOutbound()) != null) {
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                buf.release();
                out.writeBytes(bytes);
            }
            return BackendReader.read(out.toByteArray(), 0);
        }

        void assertNoLeaks() {
            channel.finishAndReleaseAll();
            assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).as("fed fragment refCnt").isZero());
        }
    }

    private static void assertNotice(Message m, String id) {
        assertThat(m.type()).isEqualTo('N');
        assertThat(m.errorFields()).containsEntry('S', "NOTICE").containsEntry('V', "NOTICE").containsEntry('C', "00000")
                .containsEntry('M', "call " + id + " recorded").containsEntry('D', id);
    }

    @Test
    void theIdIsNoticedAndFlushedAsSoonAsTheCallIsRecordedBeforeItsAnswer() {
        Calls calls = new Calls();
        Connection c = new Connection(calls, null, 1);
        c.send(new FrontendBytes().query("CALL BINDING x('{}')"));
        assertThat(c.receive()).isEmpty();

        calls.recorded(0, ID1);
        List<Message> notice = c.receive();
        assertThat(types(notice)).isEqualTo("N");
        assertNotice(notice.get(0), ID1);

        calls.futures.get(0).complete(new CallResult(ID1, "{\"a\":1}"));
        assertThat(types(c.receive())).isEqualTo("TDCZ");
        c.assertNoLeaks();
    }

    @Test
    void aNoticeNeverFollowsTheAnswerOfItsCall() {
        Calls calls = new Calls();
        Connection c = new Connection(calls, null, 2);
        c.send(new FrontendBytes().query("CALL BINDING x('{}')"));
        calls.futures.get(0).complete(new CallResult(ID1, "{}"));
        assertThat(types(c.receive())).isEqualTo("TDCZ");
        calls.recorded(0, ID1); // too late: the statement was answered
        assertThat(c.receive()).isEmpty();
        c.assertNoLeaks();
    }

    @Test
    void pipelinedExtendedCallsEachGetTheirNoticeBetweenTheirDescriptionAndTheirRow() {
        Calls calls = new Calls();
        Connection c = new Connection(calls, null, 3);
        FrontendBytes batch = new FrontendBytes();
        for (String args : List.of("{\"n\":1}", "{\"n\":2}")) {
            batch.parse("", "CALL BINDING x($1)", 0).bindText("", "", args).describe('P', "").execute("").sync();
        }
        // a named portal executed twice runs one call: one notice
        batch.parse("s", "CALL BINDING x($1)", 0).bindText("p", "s", "{}").execute("p").execute("p").sync();
        c.send(batch);
        assertThat(c.receive()).isEmpty();

        calls.recorded(0, ID1);
        List<Message> first = c.receive();
        assertThat(types(first)).isEqualTo("12TN"); // the notice flushes what was written before it
        assertNotice(first.get(3), ID1);
        calls.futures.get(0).complete(new CallResult(ID1, "1"));
        assertThat(types(c.receive())).isEqualTo("DCZ");

        calls.recorded(1, ID2);
        List<Message> second = c.receive();
        assertThat(types(second)).isEqualTo("12TN");
        assertNotice(second.get(3), ID2);
        calls.futures.get(1).complete(new CallResult(ID2, "2"));
        assertThat(types(c.receive())).isEqualTo("DCZ");

        calls.recorded(2, ID1);
        calls.futures.get(2).complete(new CallResult(ID1, "3"));
        assertThat(types(c.receive())).isEqualTo("12NDCCZ");
        assertThat(calls.requests).hasSize(3);
        c.assertNoLeaks();
    }

    @Test
    void aCallPlannedAgainIsNoticedAgainAndItsFailureNamesTheLastId() {
        Calls calls = new Calls();
        Connection c = new Connection(calls, null, 4);
        c.send(new FrontendBytes().query("CALL BINDING x('{}')"));
        calls.recorded(0, ID1);
        calls.recorded(0, ID2);
        calls.futures.get(0).completeExceptionally(new ThresherException(ErrorCode.GUEST_TRAP, "trapped"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("NNEZ");
        assertNotice(m.get(0), ID1);
        assertNotice(m.get(1), ID2);
        assertThat(m.get(2).sqlState()).isEqualTo("38000");
        assertThat(m.get(2).errorFields().get('D')).startsWith("thresher_code=4001 ").endsWith(" call_id=" + ID2);

        // a failure before anything was recorded names no call
        c.send(new FrontendBytes().query("CALL BINDING y('{}')"));
        calls.futures.get(1).completeExceptionally(new ThresherException(ErrorCode.UNKNOWN_BINDING, "no y"));
        m = c.receive();
        assertThat(types(m)).isEqualTo("EZ");
        assertThat(m.get(0).errorFields().get('D')).doesNotContain("call_id");

        // the extended protocol's error names it too
        c.send(new FrontendBytes().parse("", "CALL BINDING z($1)").bindText("", "", "{}").execute("").sync());
        calls.recorded(2, ID1);
        calls.futures.get(2).completeExceptionally(new ThresherException(ErrorCode.TARGET_STALE, "moved"));
        m = c.receive();
        assertThat(types(m)).isEqualTo("12NEZ");
        assertThat(m.get(3).errorFields().get('D')).endsWith(" call_id=" + ID1);
        c.assertNoLeaks();
    }

    @Test
    void theNoticeIsASessionSettingOnByDefault() {
        Calls calls = new Calls();
        Connection c = new Connection(calls, null, 5);
        c.send(new FrontendBytes().query("SHOW thresher.call_id_notice"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("TDCZ");
        assertThat(m.get(1).firstColumn()).isEqualTo("on");

        c.send(new FrontendBytes().query("SET thresher.call_id_notice = off; SHOW thresher.call_id_notice"));
        m = c.receive();
        assertThat(types(m)).isEqualTo("CTDCZ");
        assertThat(m.get(2).firstColumn()).isEqualTo("off");

        c.send(new FrontendBytes().query("CALL BINDING x('{}')"));
        calls.recorded(0, ID1);
        assertThat(c.receive()).as("no notice while off").isEmpty();
        calls.futures.get(0).completeExceptionally(new ThresherException(ErrorCode.GUEST_TRAP, "trapped"));
        m = c.receive();
        assertThat(types(m)).isEqualTo("EZ");
        assertThat(m.get(0).errorFields().get('D')).as("the error names the call all the same").endsWith(" call_id=" + ID1);

        c.send(new FrontendBytes().query("SET thresher.call_id_notice TO 'maybe'"));
        m = c.receive();
        assertThat(types(m)).isEqualTo("EZ");
        assertThat(m.get(0).sqlState()).isEqualTo("22023");
        assertThat(m.get(0).errorFields().get('M')).contains("thresher.call_id_notice").contains("maybe");

        c.send(new FrontendBytes().query("SET thresher.call_id_notice = DEFAULT; SHOW thresher.call_id_notice"));
        m = c.receive();
        assertThat(m.get(2).firstColumn()).isEqualTo("on");
        c.send(new FrontendBytes().query("SET thresher.call_id_notice = 0; CALL BINDING x('{}')"));
        calls.recorded(1, ID2);
        calls.futures.get(1).complete(new CallResult(ID2, "{}"));
        assertThat(types(c.receive())).isEqualTo("CTDCZ");
        c.assertNoLeaks();
    }

    private static PgWireServer.Lookups lookups(Map<UUID, CallOutcome> outcomes, List<String> tenants) {
        return new PgWireServer.Lookups((scope, id) -> {
            tenants.add(scope.tenant());
            if (id.toString().startsWith("ffffffff")) {
                throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: down");
            }
            return Optional.ofNullable(outcomes.get(id));
        }, Runnable::run);
    }

    @Test
    void showCallAnswersOneRowFromTheOutcomeStore() {
        UUID succeeded = UUID.fromString(ID1);
        UUID failed = UUID.fromString(ID2);
        Instant created = Instant.parse("2025-01-31T09:15:02.500Z");
        Map<UUID, CallOutcome> outcomes = Map.of(
                succeeded, new CallOutcome(succeeded, "revenue", "succeeded", null, null, "{\"eu\":1}", created,
                        Instant.parse("2025-01-31T09:15:03.123456Z"), Instant.parse("2025-01-31T09:15:32Z")),
                failed, new CallOutcome(failed, "revenue", "failed", 4001, "guest trapped", null, created,
                        created, created));
        List<String> tenants = new CopyOnWriteArrayList<>();
        Connection c = new Connection(new Calls(), lookups(outcomes, tenants), 6);

        c.send(new FrontendBytes().query("SHOW CALL '" + ID1 + "'"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("TDCZ");
        assertThat(columnNames(m.get(0))).containsExactly("call_id", "binding", "state", "error_code", "error_message",
                "result", "created_at", "finished_at", "deadline_at");
        assertThat(columnTypes(m.get(0))).containsExactly(25, 25, 25, 25, 25, 114, 25, 25, 25);
        assertThat(values(m.get(1))).containsExactly(ID1, "revenue", "succeeded", null, null, "{\"eu\":1}",
                "2025-01-31 09:15:02.5+00", "2025-01-31 09:15:03.123456+00", "2025-01-31 09:15:32+00");
        assertThat(m.get(2).strings()).containsExactly("SHOW");
        assertThat(tenants).containsExactly("acme");

        // extended protocol, upper-case id
        c.send(new FrontendBytes().parse("", "SHOW CALL '" + ID2.toUpperCase() + "'").bindText("", "")
                .describe('P', "").execute("").sync());
        m = c.receive();
        assertThat(types(m)).isEqualTo("12TDCZ");
        assertThat(values(m.get(3))).containsExactly(ID2, "revenue", "failed", "4001", "guest trapped", null,
                "2025-01-31 09:15:02.5+00", "2025-01-31 09:15:02.5+00", "2025-01-31 09:15:02.5+00");

        // several statements: the lookup pauses the script like a call does
        c.send(new FrontendBytes().query("SHOW CALL '" + ID1 + "'; SHOW thresher.call_id_notice"));
        assertThat(types(c.receive())).isEqualTo("TDCTDCZ");
        c.assertNoLeaks();
    }

    @Test
    void showCallOfAnUnknownOrMalformedIdIsATypedError() {
        List<String> tenants = new CopyOnWriteArrayList<>();
        Connection c = new Connection(new Calls(), lookups(Map.of(), tenants), 7);
        c.send(new FrontendBytes().query("SHOW CALL '" + ID1 + "'"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZ");
        assertThat(m.get(0).sqlState()).isEqualTo("42704");
        assertThat(m.get(0).errorFields().get('M')).contains(ID1).contains("does not exist");
        assertThat(m.get(0).errorFields().get('D')).startsWith("thresher_code=1015 ");

        c.send(new FrontendBytes().query("SHOW CALL 'not-a-uuid'"));
        m = c.receive();
        assertThat(types(m)).isEqualTo("EZ");
        assertThat(m.get(0).sqlState()).isEqualTo("22023");

        c.send(new FrontendBytes().query("SHOW CALL 'ffffffff-0000-4000-8000-000000000000'"));
        m = c.receive();
        assertThat(types(m)).isEqualTo("EZ");
        assertThat(m.get(0).sqlState()).isEqualTo("XX000");
        assertThat(tenants).containsExactly("acme", "acme");

        Connection without = new Connection(new Calls(), null, 8);
        without.send(new FrontendBytes().query("SHOW CALL '" + ID1 + "'"));
        m = without.receive();
        assertThat(types(m)).isEqualTo("EZ");
        assertThat(m.get(0).sqlState()).isEqualTo("0A000");
        c.assertNoLeaks();
        without.assertNoLeaks();
    }

    private static List<String> columnNames(Message rowDescription) {
        List<String> names = new ArrayList<>();
        ByteBuffer b = rowDescription.buffer();
        int n = b.getShort();
        for (int i = 0; i < n; i++) {
            names.add(cstring(b));
            b.position(b.position() + 18);
        }
        return names;
    }

    private static List<Integer> columnTypes(Message rowDescription) {
        List<Integer> types = new ArrayList<>();
        ByteBuffer b = rowDescription.buffer();
        int n = b.getShort();
        for (int i = 0; i < n; i++) {
            cstring(b);
            b.getInt();
            b.getShort();
            types.add(b.getInt());
            b.position(b.position() + 8);
        }
        return types;
    }

    private static String cstring(ByteBuffer b) {
        int start = b.position();
        while (b.get() != 0) {
            // to the terminator
        }
        return new String(b.array(), start, b.position() - start - 1, StandardCharsets.UTF_8);
    }

    private static List<String> values(Message dataRow) {
        List<String> values = new ArrayList<>();
        ByteBuffer b = dataRow.buffer();
        int n = b.getShort();
        for (int i = 0; i < n; i++) {
            int length = b.getInt();
            if (length < 0) {
                values.add(null);
            } else {
                values.add(new String(b.array(), b.position(), length, StandardCharsets.UTF_8));
                b.position(b.position() + length);
            }
        }
        return values;
    }
}
