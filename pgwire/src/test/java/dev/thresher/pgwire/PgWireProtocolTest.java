package dev.thresher.pgwire;

import static dev.thresher.pgwire.BackendReader.types;
import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The server's pipeline on an {@link EmbeddedChannel}, fed client bytes in random fragments. */
class PgWireProtocolTest {
    private static final Map<String, String> STARTUP = Map.of("user", "thresher", "database", "thresher",
            "application_name", "protocol-test");
    private static final String RESULT = "{\"total\":42}";

    /** A call service that records requests and answers through a function of the request. */
    static final class Calls implements CallService {
        final List<CallRequest> requests = new CopyOnWriteArrayList<>();
        final List<CompletableFuture<CallResult>> futures = new CopyOnWriteArrayList<>();
        private final Function<CallRequest, CompletableFuture<CallResult>> answer;

        Calls(Function<CallRequest, CompletableFuture<CallResult>> answer) {
            this.answer = answer;
        }

        static Calls returning(String json) {
            return new Calls(r -> CompletableFuture.completedFuture(new CallResult("call-1", json)));
        }

        static Calls pending() {
            return new Calls(r -> new CompletableFuture<>());
        }

        @Override
        public CompletableFuture<CallResult> call(CallRequest request) {
            requests.add(request);
            CompletableFuture<CallResult> f = answer.apply(request);
            futures.add(f);
            return f;
        }
    }

    /** One connection: an embedded channel, the fragments fed into it, and what it wrote back. */
    static final class Connection {
        final EmbeddedChannel channel = new EmbeddedChannel();
        final List<ByteBuf> fed = new ArrayList<>();
        final Random random;

        Connection(PgWireConfig config, CallService calls, long seed) {
            PgWireServer.configure(channel.pipeline(), config, calls);
            random = new Random(seed);
        }

        /** Feeds the bytes in random fragments of 1 to 40 bytes, running the event loop's tasks between them. */
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

        List<Message> receive() {
            return receive(0);
        }

        List<Message> receive(int leadingSingleBytes) {
            channel.runPendingTasks();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteBuf buf;
            while ((buf = channel.readOutbound()) != null) {
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                buf.release();
                out.writeBytes(bytes);
            }
            channel.readInbound(); // nothing may pass the handler
            return BackendReader.read(out.toByteArray(), leadingSingleBytes);
        }

        void assertNoLeaks() {
            channel.finishAndReleaseAll();
            assertThat(fed).allSatisfy(b -> assertThat(b.refCnt()).as("fed fragment refCnt").isZero());
        }
    }

    private static PgWireConfig config(AuthMode mode, Limits limits) {
        return new PgWireConfig("127.0.0.1", 0, mode, "thresher", "s3cret", "acme", limits);
    }

    private static PgWireConfig trust() {
        return config(AuthMode.TRUST, Limits.DEFAULTS);
    }

    private static Connection connected(PgWireConfig config, CallService calls, long seed) {
        Connection c = new Connection(config, calls, seed);
        c.send(new FrontendBytes().startup(STARTUP));
        List<Message> hello = c.receive();
        assertThat(types(hello)).isEqualTo("R" + "S".repeat(13) + "KZ");
        return c;
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void startupSimpleQueryAndTerminateInRandomFragments(long seed) {
        Calls calls = Calls.returning(RESULT);
        Connection c = new Connection(trust(), calls, seed);
        c.send(new FrontendBytes().sslRequest().gssEncRequest().startup(STARTUP)
                .query("CALL BINDING total_sales('{\"region\": ''eu''}')").terminate());
        List<Message> messages = c.receive(2);

        assertThat(types(messages)).isEqualTo("NNR" + "S".repeat(13) + "KZTDCZ");
        assertThat(messages.get(2).buffer().getInt()).isZero(); // AuthenticationOk
        List<List<String>> statuses = messages.subList(3, 16).stream().map(Message::strings).toList();
        assertThat(statuses).contains(List.of("server_version", PgSession.SERVER_VERSION),
                List.of("client_encoding", "UTF8"), List.of("server_encoding", "UTF8"), List.of("DateStyle", "ISO, MDY"),
                List.of("integer_datetimes", "on"), List.of("standard_conforming_strings", "on"),
                List.of("TimeZone", "UTC"), List.of("application_name", "protocol-test"),
                List.of("default_transaction_read_only", "off"), List.of("in_hot_standby", "off"));
        assertThat(messages.get(17).body()).containsExactly('I');
        Message row = messages.get(18);
        assertThat(new String(row.body(), 2, 6, StandardCharsets.UTF_8)).isEqualTo("result");
        assertThat(row.buffer().position(2 + 7 + 6).getInt()).isEqualTo(114); // type OID json
        assertThat(messages.get(19).firstColumn()).isEqualTo(RESULT);
        assertThat(messages.get(20).strings()).containsExactly("CALL");

        assertThat(calls.requests).usingRecursiveFieldByFieldElementComparatorIgnoringFields("onRecorded") // a listener per call
                .containsExactly(CallRequest.of("acme", "thresher", "total_sales", "{\"region\": 'eu'}"));
        assertThat(c.channel.isOpen()).isFalse();
        c.assertNoLeaks();
    }

    @Test
    void passwordAuthenticationAcceptsTheRightPassword() {
        Connection c = new Connection(config(AuthMode.PASSWORD, Limits.DEFAULTS), Calls.returning(RESULT), 11);
        c.send(new FrontendBytes().startup(STARTUP));
        List<Message> ask = c.receive();
        assertThat(types(ask)).isEqualTo("R");
        assertThat(ask.get(0).buffer().getInt()).isEqualTo(3);
        c.send(new FrontendBytes().password("s3cret").query("CALL BINDING x('{}')"));
        assertThat(types(c.receive())).isEqualTo("R" + "S".repeat(13) + "KZ" + "TDCZ");
        c.assertNoLeaks();
    }

    @ParameterizedTest
    @ValueSource(strings = {"wrong", ""})
    void passwordAuthenticationRejectsAWrongPasswordAndCloses(String password) {
        Calls calls = Calls.returning(RESULT);
        Connection c = new Connection(config(AuthMode.PASSWORD, Limits.DEFAULTS), calls, 12);
        c.send(new FrontendBytes().startup(STARTUP).password(password).query("CALL BINDING x('{}')"));
        assertThat(types(c.receive())).as("the failure's answer is held for the throttle's wait").isEqualTo("R");
        c.channel.advanceTimeBy(AuthThrottle.BASE_MS, java.util.concurrent.TimeUnit.MILLISECONDS);
        c.channel.runScheduledPendingTasks();
        List<Message> messages = c.receive();
        assertThat(types(messages)).isEqualTo("E");
        assertThat(messages.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "28P01");
        assertThat(c.channel.isOpen()).isFalse();
        assertThat(calls.requests).isEmpty();
        c.assertNoLeaks();
    }

    @Test
    void trustAdmitsAnyUserName() {
        Connection c = new Connection(trust(), Calls.returning(RESULT), 13);
        c.send(new FrontendBytes().startup(Map.of("user", "root")));
        List<Message> messages = c.receive();
        assertThat(types(messages).charAt(0)).isEqualTo('R');
        assertThat(types(messages)).endsWith("Z");
        assertThat(c.channel.isOpen()).isTrue();
        c.assertNoLeaks();
    }

    @Test
    void unsupportedProtocolVersionIsRefused() {
        Connection c = new Connection(trust(), Calls.returning(RESULT), 14);
        c.send(new FrontendBytes().startup(2, 0, STARTUP));
        List<Message> messages = c.receive();
        assertThat(types(messages)).isEqualTo("E");
        assertThat(messages.get(0).sqlState()).isEqualTo("08P01");
        assertThat(c.channel.isOpen()).isFalse();
        c.assertNoLeaks();
    }

    @Test
    void newerMinorVersionIsNegotiatedDown() {
        Connection c = new Connection(trust(), Calls.returning(RESULT), 15);
        c.send(new FrontendBytes().startup(3, 2, Map.of("user", "thresher", "_pq_.option", "x")));
        List<Message> messages = c.receive();
        assertThat(types(messages)).isEqualTo("vR" + "S".repeat(13) + "KZ");
        assertThat(messages.get(0).buffer().getInt()).isZero();
        c.assertNoLeaks();
    }

    @Test
    void cancelRequestIsIgnoredAndClosesTheConnection() {
        Connection c = new Connection(trust(), Calls.returning(RESULT), 16);
        c.send(new FrontendBytes().cancelRequest(1, 2));
        assertThat(c.receive()).isEmpty();
        assertThat(c.channel.isOpen()).isFalse();
        c.assertNoLeaks();
    }

    @Test
    void simpleQueryErrorsKeepTheConnectionServing() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 17);
        c.send(new FrontendBytes().query("SELECT 2 + 2").query("CALL BINDING x('{}'").query("CALL BINDING x($1)")
                .query(" -- nothing\n").query("SET application_name = 'renamed'").query("CALL BINDING x('[]')"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZ" + "EZ" + "EZ" + "IZ" + "SCZ" + "TDCZ");
        assertThat(m.get(0).errorFields()).containsEntry('S', "ERROR").containsEntry('V', "ERROR")
                .containsEntry('C', "0A000");
        assertThat(m.get(0).errorFields().get('D')).contains("thresher_code=1002").contains("retry_class=TERMINAL");
        assertThat(m.get(0).errorFields().get('H')).startsWith("Do not retry");
        assertThat(m.get(2).sqlState()).isEqualTo("42601");
        assertThat(m.get(4).sqlState()).isEqualTo("42601");
        assertThat(m.get(8).strings()).containsExactly("application_name", "renamed");
        assertThat(m.get(9).strings()).containsExactly("SET");
        assertThat(calls.requests).hasSize(1);
        assertThat(c.channel.isOpen()).isTrue();
        c.assertNoLeaks();
    }

    @Test
    void aSimpleQueryRunsItsStatementsInTurnAndStopsAtTheFirstFailure() {
        Calls calls = new Calls(r -> r.bindingName().equals("target_stale")
                ? CompletableFuture.failedFuture(new ThresherException(ErrorCode.TARGET_STALE, "moved"))
                : CompletableFuture.completedFuture(new CallResult("call", "{\"b\":\"" + r.bindingName() + "\"}")));
        Connection c = connected(trust(), calls, 31);
        c.send(new FrontendBytes()
                .query("SET thresher.call_deadline_ms = 1500; CALL BINDING a('{}');; CALL BINDING b('[]');")
                .query("CALL BINDING c('{}'); CALL BINDING target_stale('{}'); CALL BINDING never('{}')")
                .query("CALL BINDING d('{}'); CALL BINDING e(")
                .query("CALL BINDING f('{}')"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("C" + "TDC" + "TDC" + "Z" + "TDC" + "E" + "Z" + "EZ" + "TDCZ");
        assertThat(m.get(11).sqlState()).isEqualTo("40001");
        assertThat(m.get(13).sqlState()).as("a syntax error anywhere runs nothing").isEqualTo("42601");
        assertThat(calls.requests).extracting(CallRequest::bindingName).containsExactly("a", "b", "c", "target_stale", "f");
        assertThat(calls.requests.get(0).deadlineMs()).contains(1500L);
        assertThat(c.channel.isOpen()).isTrue();
        c.assertNoLeaks();
    }

    @Test
    void serviceFailuresMapToSqlStates() {
        Calls calls = new Calls(r -> CompletableFuture.failedFuture(
                new ThresherException(ErrorCode.valueOf(r.bindingName().toUpperCase()), "failed: " + r.bindingName())));
        Connection c = connected(trust(), calls, 18);
        c.send(new FrontendBytes().query("CALL BINDING target_stale('{}')").query("CALL BINDING guest_trap('{}')")
                .query("CALL BINDING unknown_binding('{}')"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZEZEZ");
        assertThat(m.get(0).errorFields()).containsEntry('C', "40001").containsEntry('M', "failed: target_stale");
        assertThat(m.get(0).errorFields().get('D')).isEqualTo("thresher_code=7001 category=TARGET_STALE retry_class=RETRYABLE");
        assertThat(m.get(2).sqlState()).isEqualTo("38000");
        assertThat(m.get(4).sqlState()).isEqualTo("42883");
        c.assertNoLeaks();
    }

    @Test
    void unexpectedServiceExceptionsAreInternalErrors() {
        Calls calls = new Calls(r -> {
            throw new IllegalStateException("boom");
        });
        Connection c = connected(trust(), calls, 19);
        c.send(new FrontendBytes().query("CALL BINDING x('{}')").query("CALL BINDING x('{}')"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZEZ");
        assertThat(m.get(0).sqlState()).isEqualTo("XX000");
        c.assertNoLeaks();
    }

    @Test
    void pipelinedExtendedBatchesAreAnsweredInOrderOneCallAtATime() {
        Calls calls = Calls.pending();
        Connection c = connected(trust(), calls, 20);
        FrontendBytes batch = new FrontendBytes();
        for (String args : List.of("{\"n\":1}", "{\"n\":2}")) {
            batch.parse("", "CALL BINDING x($1)", 0).bindText("", "", args).describe('P', "").execute("").sync();
        }
        c.send(batch);
        assertThat(c.receive()).isEmpty(); // nothing is flushed before the first Sync
        assertThat(calls.requests).hasSize(1);
        assertThat(c.channel.config().isAutoRead()).isFalse();

        calls.futures.get(0).complete(new CallResult("c1", "1"));
        List<Message> first = c.receive();
        assertThat(types(first)).isEqualTo("12TDCZ");
        assertThat(first.get(3).firstColumn()).isEqualTo("1");
        assertThat(calls.requests).hasSize(2);
        assertThat(calls.requests.get(1).argumentsJson()).isEqualTo("{\"n\":2}");

        calls.futures.get(1).complete(new CallResult("c2", "2"));
        List<Message> second = c.receive();
        assertThat(types(second)).isEqualTo("12TDCZ");
        assertThat(second.get(3).firstColumn()).isEqualTo("2");
        assertThat(c.channel.config().isAutoRead()).isTrue();
        c.assertNoLeaks();
    }

    @Test
    void extendedErrorsAreFlushedWithoutWaitingForSync() {
        Calls calls = new Calls(r -> r.bindingName().equals("trap")
                ? CompletableFuture.failedFuture(new ThresherException(ErrorCode.GUEST_TRAP, "trapped"))
                : new CompletableFuture<>());
        Connection c = connected(trust(), calls, 32);
        // node-postgres' row mode: Execute + Flush, and the Sync only after the error arrived
        c.send(new FrontendBytes().parse("", "CALL BINDING trap($1)").bindText("", "", "{}").describe('P', "")
                .execute("").flush());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("12TE");
        assertThat(m.get(3).sqlState()).isEqualTo("38000");
        c.send(new FrontendBytes().sync());
        assertThat(types(c.receive())).isEqualTo("Z");

        // an error is flushed even with no Flush behind it
        c.send(new FrontendBytes().parse("", "SELECT 2 + 2"));
        assertThat(types(c.receive())).isEqualTo("E");
        c.send(new FrontendBytes().sync());
        assertThat(types(c.receive())).isEqualTo("Z");

        // a Flush queued behind a call flushes everything written up to it once the call is done
        c.send(new FrontendBytes().parse("", "CALL BINDING slow($1)").bindText("", "", "{}").execute("").flush());
        assertThat(c.receive()).isEmpty();
        calls.futures.get(1).complete(new CallResult("c", "{}"));
        assertThat(types(c.receive())).isEqualTo("12DC");
        c.send(new FrontendBytes().sync());
        assertThat(types(c.receive())).isEqualTo("Z");
        c.assertNoLeaks();
    }

    @Test
    void aFailedParseOfTheUnnamedStatementLeavesNoneBehind() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 33);
        c.send(new FrontendBytes().parse("", "CALL BINDING old($1)").sync()
                .parse("", "SELECT 2 + 2").sync()
                .bindText("", "", "{}").execute("").sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("1Z" + "EZ" + "EZ");
        assertThat(m.get(2).sqlState()).isEqualTo("0A000");
        assertThat(m.get(4).sqlState()).isEqualTo("26000");
        assertThat(calls.requests).isEmpty();
        c.assertNoLeaks();
    }

    @Test
    void closingAStatementClosesItsPortals() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 34);
        c.send(new FrontendBytes().parse("S_1", "CALL BINDING x($1)").parse("S_2", "CALL BINDING y($1)")
                .bindText("P_1", "S_1", "{}").bindText("P_2", "S_2", "{}")
                .close('S', "S_1").execute("P_2").execute("P_1").sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("1122" + "3" + "DC" + "E" + "Z");
        assertThat(m.get(7).sqlState()).isEqualTo("34000");
        assertThat(calls.requests).extracting(CallRequest::bindingName).containsExactly("y");
        c.assertNoLeaks();
    }

    @Test
    void declaredParameterTypesBeyondThoseUsedAreKeptAndBound() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 35);
        c.send(new FrontendBytes().parse("S", "CALL BINDING x($1)", 114, 23, 25).describe('S', "S").sync()
                .bindText("", "S", "{\"a\":1}").sync()
                .bindText("", "S", "{\"a\":2}", "7", "ignored").execute("").sync()
                .parse("L", "CALL BINDING y('[]')", 25).bindText("", "L", "unused").execute("").sync()
                .parse("U", "CALL BINDING z($1)", 114, 0).sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("1tTZ" + "EZ" + "2DCZ" + "12DCZ" + "EZ");
        ByteBuffer description = m.get(1).buffer();
        assertThat(description.getShort()).isEqualTo((short) 3);
        assertThat(List.of(description.getInt(), description.getInt(), description.getInt())).containsExactly(114, 23, 25);
        assertThat(m.get(4).sqlState()).isEqualTo("08P01"); // Bind must supply every declared parameter
        assertThat(m.get(15).sqlState()).isEqualTo("42P18");
        assertThat(calls.requests).extracting(CallRequest::argumentsJson).containsExactly("{\"a\":2}", "[]");
        c.assertNoLeaks();
    }

    /** The column name of a one-column RowDescription. */
    private static String columnName(Message rowDescription) {
        String rest = new String(rowDescription.body(), 2, rowDescription.body().length - 2, StandardCharsets.UTF_8);
        return rest.substring(0, rest.indexOf('\0'));
    }

    @Test
    void showAnswersOneTextRowNamedAfterTheParameter() {
        Connection c = connected(trust(), Calls.returning(RESULT), 36);
        String[][] cases = {
            {"SHOW TRANSACTION ISOLATION LEVEL", "transaction_isolation", "read committed"},
            {"show transaction_read_only", "transaction_read_only", "off"},
            {"SHOW default_transaction_read_only", "default_transaction_read_only", "off"},
            {"SHOW in_hot_standby", "in_hot_standby", "off"},
            {"SHOW timezone", "TimeZone", "UTC"},
            {"SHOW server_version", "server_version", PgSession.SERVER_VERSION},
            {"SHOW client_encoding", "client_encoding", "UTF8"},
            {"SHOW application_name", "application_name", "protocol-test"},
            {"SHOW thresher.call_deadline_ms", "thresher.call_deadline_ms", Long.toString(Limits.DEFAULTS.callDeadlineMs())},
        };
        for (String[] each : cases) {
            c.send(new FrontendBytes().query(each[0]));
            List<Message> m = c.receive();
            assertThat(types(m)).as(each[0]).isEqualTo("TDCZ");
            assertThat(columnName(m.get(0))).as(each[0]).isEqualTo(each[1]);
            assertThat(m.get(0).buffer().position(2 + each[1].length() + 1 + 6).getInt()).isEqualTo(25); // text
            assertThat(m.get(1).firstColumn()).as(each[0]).isEqualTo(each[2]);
            assertThat(m.get(2).strings()).containsExactly("SHOW");
        }
        c.send(new FrontendBytes().query("SET thresher.call_deadline_ms = 1500; SET application_name = 'b'; "
                + "SHOW thresher.call_deadline_ms; SHOW application_name"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("CSC" + "TDC" + "TDC" + "Z");
        assertThat(m.get(4).firstColumn()).isEqualTo("1500");
        assertThat(m.get(7).firstColumn()).isEqualTo("b");

        c.send(new FrontendBytes().query("SHOW no_such_setting").query("SHOW ALL")
                .parse("S", "SHOW transaction_read_only").describe('S', "S").bindText("", "S").execute("").sync()
                .parse("U", "SHOW nope").describe('S', "U").sync());
        m = c.receive();
        assertThat(types(m)).isEqualTo("EZ" + "EZ" + "1tT2DCZ" + "1tEZ");
        assertThat(m.get(0).sqlState()).isEqualTo("42704");
        assertThat(m.get(0).errorFields().get('M')).isEqualTo("unrecognized configuration parameter \"no_such_setting\"");
        assertThat(m.get(2).sqlState()).isEqualTo("0A000");
        assertThat(columnName(m.get(6))).isEqualTo("transaction_read_only");
        assertThat(m.get(8).firstColumn()).isEqualTo("off");
        assertThat(m.get(13).sqlState()).isEqualTo("42704");
        c.assertNoLeaks();
    }

    @Test
    void transactionBlocksTrackTheStatusAndRefuseWorkAfterAFailure() {
        Calls calls = new Calls(r -> r.bindingName().equals("trap")
                ? CompletableFuture.failedFuture(new ThresherException(ErrorCode.GUEST_TRAP, "trapped"))
                : CompletableFuture.completedFuture(new CallResult("c", "{}")));
        Connection c = connected(trust(), calls, 37);
        c.send(new FrontendBytes().query("BEGIN").query("CALL BINDING a('{}')").query("COMMIT")
                .query("CALL BINDING trap('{}')")
                .query("START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY").query("CALL BINDING trap('{}')")
                .query("CALL BINDING b('{}')").query("SHOW transaction_read_only").query("SET a = 1")
                .query("COMMIT")
                .query("BEGIN; CALL BINDING trap('{}'); CALL BINDING c('{}')").query("ROLLBACK; CALL BINDING d('{}')")
                .query("ABORT").query("END"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("CZ" + "TDCZ" + "CZ" + "EZ" + "CZ" + "EZ" + "EZ" + "EZ" + "EZ" + "CZ"
                + "CEZ" + "CTDCZ" + "CZ" + "CZ");
        String statuses = m.stream().filter(x -> x.type() == 'Z').map(x -> String.valueOf((char) x.body()[0]))
                .reduce("", String::concat);
        assertThat(statuses).isEqualTo("TTI" + "I" + "TEEEE" + "I" + "EII" + "I");
        assertThat(m.get(0).strings()).containsExactly("BEGIN");
        assertThat(m.get(6).strings()).containsExactly("COMMIT");
        assertThat(m.get(10).strings()).containsExactly("BEGIN");
        assertThat(m.get(14).sqlState()).isEqualTo("25P02");
        assertThat(m.get(14).errorFields().get('M'))
                .isEqualTo("current transaction is aborted, commands ignored until end of transaction block");
        assertThat(m.get(16).sqlState()).isEqualTo("25P02");
        assertThat(m.get(18).sqlState()).isEqualTo("25P02");
        assertThat(m.get(20).strings()).as("COMMIT of a failed block").containsExactly("ROLLBACK");
        assertThat(m.get(23).sqlState()).isEqualTo("38000");
        assertThat(m.get(25).strings()).containsExactly("ROLLBACK");
        assertThat(m.get(30).strings()).containsExactly("ROLLBACK");
        assertThat(m.get(32).strings()).containsExactly("COMMIT");
        assertThat(calls.requests).extracting(CallRequest::bindingName).containsExactly("a", "trap", "trap", "trap", "d");
        c.assertNoLeaks();
    }

    @Test
    void theExtendedProtocolKeepsTheBlockAcrossSync() {
        Calls calls = new Calls(r -> r.bindingName().equals("trap")
                ? CompletableFuture.failedFuture(new ThresherException(ErrorCode.GUEST_TRAP, "trapped"))
                : CompletableFuture.completedFuture(new CallResult("c", "{}")));
        Connection c = connected(trust(), calls, 38);
        c.send(new FrontendBytes()
                .parse("", "BEGIN").bindText("", "").execute("")
                .parse("", "CALL BINDING a($1)").bindText("P", "", "{}").sync()
                .execute("P").sync()
                .parse("", "CALL BINDING trap('{}')").bindText("", "").execute("").sync()
                .parse("", "CALL BINDING b('{}')").sync()
                .bindText("", "missing").sync()
                .parse("", "COMMIT").bindText("", "").execute("").sync()
                .execute("P").sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("12C12Z" + "DCZ" + "12EZ" + "EZ" + "EZ" + "12CZ" + "EZ");
        String statuses = m.stream().filter(x -> x.type() == 'Z').map(x -> String.valueOf((char) x.body()[0]))
                .reduce("", String::concat);
        assertThat(statuses).isEqualTo("TTEEEII");
        assertThat(m.get(13).sqlState()).isEqualTo("25P02");
        assertThat(m.get(15).sqlState()).as("the statement is looked up first").isEqualTo("26000");
        assertThat(m.get(19).strings()).containsExactly("ROLLBACK");
        assertThat(m.get(21).sqlState()).as("the end of the block closed the portal").isEqualTo("34000");
        assertThat(calls.requests).extracting(CallRequest::bindingName).containsExactly("a", "trap");
        c.assertNoLeaks();
    }

    /** A Query or Parse whose SQL holds the byte 0xff, which UTF-8 never uses. */
    private static FrontendBytes invalidUtf8(FrontendBytes bytes, char type) {
        return bytes.message(type, b -> {
            if (type == 'P') {
                b.write(0);
            }
            b.writeBytes("CALL BINDING echo('{\"a\": \"".getBytes(StandardCharsets.UTF_8));
            b.write(0xff);
            b.writeBytes("\"}')".getBytes(StandardCharsets.UTF_8));
            b.write(0);
            if (type == 'P') {
                b.write(0);
                b.write(0);
            }
        });
    }

    @Test
    void invalidUtf8IsRefusedNotReplaced() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 39);
        FrontendBytes bytes = invalidUtf8(new FrontendBytes(), 'Q');
        invalidUtf8(bytes, 'P').bindText("", "").execute("").sync().query("CALL BINDING x('{\"ok\": \"é\"}')");
        c.send(bytes);
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZ" + "EZ" + "TDCZ");
        assertThat(m.get(0).errorFields()).containsEntry('S', "ERROR").containsEntry('C', "22021");
        assertThat(m.get(0).errorFields().get('M')).contains("invalid byte sequence for encoding \"UTF8\"");
        assertThat(m.get(0).errorFields().get('D')).contains("thresher_code=1011");
        assertThat(m.get(2).sqlState()).isEqualTo("22021");
        assertThat(calls.requests).extracting(CallRequest::argumentsJson).containsExactly("{\"ok\": \"é\"}");
        c.assertNoLeaks();
    }

    @Test
    void onlyTheUtf8ClientEncodingIsServed() {
        Connection latin1 = new Connection(trust(), Calls.returning(RESULT), 40);
        latin1.send(new FrontendBytes().startup(Map.of("user", "thresher", "client_encoding", "LATIN1")));
        List<Message> refused = latin1.receive();
        assertThat(types(refused)).isEqualTo("E");
        assertThat(refused.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "22023");
        assertThat(latin1.channel.isOpen()).isFalse();
        latin1.assertNoLeaks();

        for (String utf8 : List.of("UTF8", "utf-8", "Unicode")) {
            Connection c = new Connection(trust(), Calls.returning(RESULT), 41);
            c.send(new FrontendBytes().startup(Map.of("user", "thresher", "client_encoding", utf8)));
            assertThat(types(c.receive())).as(utf8).endsWith("KZ");
            c.send(new FrontendBytes().query("SET client_encoding = 'SQL_ASCII'").query("SET NAMES 'win1252'")
                    .query("SET client_encoding TO 'utf-8'").query("SET client_encoding = DEFAULT"));
            List<Message> m = c.receive();
            // as PostgreSQL 14 and later, a ParameterStatus only when the value changed (DEFAULT here keeps UTF8)
            assertThat(types(m)).isEqualTo("SCZ" + "EZ" + "SCZ" + "CZ");
            assertThat(m.get(0).strings()).containsExactly("client_encoding", "SQL_ASCII");
            assertThat(m.get(3).sqlState()).isEqualTo("22023");
            assertThat(m.get(5).strings()).containsExactly("client_encoding", "UTF8");
            assertThat(c.channel.isOpen()).isTrue();
            c.assertNoLeaks();
        }

        // An interactive psql in a C locale asks for SQL_ASCII: served unconverted, still strict UTF-8.
        Connection ascii = new Connection(trust(), Calls.returning(RESULT), 43);
        ascii.send(new FrontendBytes().startup(Map.of("user", "thresher", "client_encoding", "SQL_ASCII")));
        List<Message> started = ascii.receive();
        assertThat(types(started)).endsWith("KZ");
        assertThat(started).anySatisfy(p -> assertThat(p.strings()).containsExactly("client_encoding", "SQL_ASCII"));
        ascii.assertNoLeaks();
    }

    @Test
    void anUnwritableConnectionStopsReadingUntilItDrains() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 42);
        assertThat(c.channel.config().getWriteBufferWaterMark()).isEqualTo(PgWireServer.WATER_MARK);
        // as if the socket were full: the outbound buffer reports the channel unwritable
        c.channel.unsafe().outboundBuffer().setUserDefinedWritability(1, false);
        c.send(new FrontendBytes().query("CALL BINDING a('{}')").query("CALL BINDING b('{}')"));
        assertThat(calls.requests).isEmpty();
        assertThat(c.channel.config().isAutoRead()).isFalse();

        c.channel.unsafe().outboundBuffer().setUserDefinedWritability(1, true);
        assertThat(types(c.receive())).isEqualTo("TDCZ" + "TDCZ");
        assertThat(calls.requests).extracting(CallRequest::bindingName).containsExactly("a", "b");
        assertThat(c.channel.config().isAutoRead()).isTrue();
        c.assertNoLeaks();
    }

    @Test
    void namedStatementsDescribeAndClose() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 21);
        c.send(new FrontendBytes().parse("S_1", "CALL BINDING x($1)", 1043).describe('S', "S_1").sync()
                .bindText("P_1", "S_1", "{}").execute("P_1").execute("P_1").close('S', "S_1").sync()
                .parse("S_2", "CALL BINDING x('{}')").describe('S', "S_2").parse("S_3", "SET a = 1").describe('S', "S_3")
                .sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("1tTZ" + "2DCC3Z" + "1tT1tnZ");
        assertThat(m.get(1).buffer().getShort()).isEqualTo((short) 1);
        assertThat(m.get(1).buffer().position(2).getInt()).isEqualTo(1043);
        assertThat(m.get(11).buffer().getShort()).isZero();
        assertThat(calls.requests).hasSize(1); // the second Execute of a finished portal runs nothing
        c.assertNoLeaks();
    }

    @Test
    void unspecifiedParameterTypesAreDescribedAsJson() {
        Connection c = connected(trust(), Calls.returning(RESULT), 22);
        c.send(new FrontendBytes().parse("", "CALL BINDING x($1)").describe('S', "").sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("1tTZ");
        assertThat(m.get(1).buffer().position(2).getInt()).isEqualTo(114);
        c.assertNoLeaks();
    }

    @Test
    void errorsInExtendedModeDiscardUntilSync() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 23);
        c.send(new FrontendBytes().parse("", "SELECT 2 + 2").bindText("", "").execute("").sync()
                .parse("", "CALL BINDING x($1)").bindText("", "", "{}").execute("").sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZ12DCZ");
        assertThat(m.get(0).sqlState()).isEqualTo("0A000");
        assertThat(calls.requests).hasSize(1);
        c.assertNoLeaks();
    }

    @Test
    void extendedProtocolConditions() {
        Connection c = connected(trust(), Calls.returning(RESULT), 24);
        c.send(new FrontendBytes()
                .bindText("", "missing").sync()
                .describe('P', "missing").sync()
                .parse("S", "CALL BINDING x($1)").parse("S", "CALL BINDING x($1)").sync()
                .bindText("", "S").sync()
                .parse("", "CALL BINDING x($1)", 23).sync()
                .bind("", "S", (short) 0, (short) 0, (byte[]) null).sync()
                .bind("", "S", (short) 0, (short) 0, new byte[] {(byte) 0xff}).sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZ" + "EZ" + "1EZ" + "EZ" + "EZ" + "EZ" + "EZ");
        assertThat(m.get(0).sqlState()).isEqualTo("26000");
        assertThat(m.get(2).sqlState()).isEqualTo("34000");
        assertThat(m.get(5).sqlState()).isEqualTo("42P05");
        assertThat(m.get(7).sqlState()).isEqualTo("08P01");
        assertThat(m.get(9).sqlState()).isEqualTo("22023");
        assertThat(m.get(11).sqlState()).isEqualTo("22023");
        assertThat(m.get(13).sqlState()).isEqualTo("22023");
        assertThat(c.channel.isOpen()).isTrue();
        c.assertNoLeaks();
    }

    @Test
    void binaryParametersAndResults() {
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(trust(), calls, 25);
        byte[] jsonb = "\u0001{\"a\":1}".getBytes(StandardCharsets.UTF_8);
        c.send(new FrontendBytes()
                .parse("", "CALL BINDING x($1)", 3802).bind("", "", (short) 1, (short) 1, jsonb).describe('P', "")
                .execute("").sync()
                .parse("", "CALL BINDING x($1)", 114).bind("", "", (short) 1, (short) 0, "[1]".getBytes(StandardCharsets.UTF_8))
                .execute("").sync()
                .parse("", "CALL BINDING x($1)", 3802).bind("", "", (short) 1, (short) 0, "{}".getBytes(StandardCharsets.UTF_8))
                .sync());
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("12TDCZ" + "12DCZ" + "1EZ");
        assertThat(m.get(2).buffer().position(m.get(2).body().length - 2).getShort()).isEqualTo((short) 1);
        assertThat(m.get(3).firstColumn()).isEqualTo(RESULT); // json's binary format is its text
        assertThat(m.get(12).sqlState()).isEqualTo("22023"); // jsonb binary without its version byte
        assertThat(calls.requests).extracting(CallRequest::argumentsJson).containsExactly("{\"a\":1}", "[1]");
        c.assertNoLeaks();
    }

    @Test
    void argumentsOverThePayloadLimitAreRefusedBeforeTheService() {
        Limits limits = Limits.fromProperties(Map.of("limits.directCallPayloadBytes", "16"));
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(config(AuthMode.TRUST, limits), calls, 26);
        String big = "{\"k\":\"" + "é".repeat(8) + "\"}"; // 14 characters, 24 bytes
        c.send(new FrontendBytes().query("CALL BINDING x('" + big + "')")
                .parse("", "CALL BINDING x($1)").bindText("", "", big).execute("").sync()
                .query("CALL BINDING x('{\"k\":1}')"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("EZ" + "12EZ" + "TDCZ");
        assertThat(m.get(0).sqlState()).isEqualTo("54000");
        assertThat(m.get(4).sqlState()).isEqualTo("54000");
        assertThat(calls.requests).hasSize(1);
        c.assertNoLeaks();
    }

    @Test
    void aLengthBelowItsOwnFourBytesIsAnInvalidMessageLengthInPostgreSqlsWords() {
        for (int length : new int[] {0, 2, 3}) {
            Connection c = connected(config(AuthMode.TRUST, Limits.DEFAULTS), Calls.returning(RESULT), 28);
            c.send(new FrontendBytes().raw(new byte[] {'Q', (byte) (length >>> 24), (byte) (length >>> 16),
                    (byte) (length >>> 8), (byte) length}));
            List<Message> m = c.receive();
            assertThat(types(m)).isEqualTo("E");
            assertThat(m.get(0).errorFields()).containsEntry('C', "08P01").containsEntry('M', "invalid message length");
            assertThat(c.channel.isOpen()).isFalse();
        }
    }

    @Test
    void oversizedMessagesAreRefusedAndClose() {
        Limits limits = Limits.fromProperties(Map.of("limits.pgwireMaxMessageBytes", "256"));
        Calls calls = Calls.returning(RESULT);
        Connection c = connected(config(AuthMode.TRUST, limits), calls, 27);
        c.send(new FrontendBytes().query("CALL BINDING x('" + "x".repeat(300) + "')"));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("E");
        assertThat(m.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "54000");
        assertThat(c.channel.isOpen()).isFalse();
        assertThat(calls.requests).isEmpty();
        c.assertNoLeaks();
    }

    @Test
    void unknownMessageTypesAreProtocolViolations() {
        Connection c = connected(trust(), Calls.returning(RESULT), 28);
        c.send(new FrontendBytes().message('F', b -> b.write(0)));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("E");
        assertThat(m.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "08P01");
        assertThat(c.channel.isOpen()).isFalse();
        c.assertNoLeaks();
    }

    @Test
    void malformedLengthIsAProtocolViolation() {
        Connection c = connected(trust(), Calls.returning(RESULT), 29);
        c.send(new FrontendBytes().raw(new byte[] {'Q', 0, 0, 0, 2}));
        List<Message> m = c.receive();
        assertThat(types(m)).isEqualTo("E");
        assertThat(m.get(0).sqlState()).isEqualTo("08P01");
        assertThat(c.channel.isOpen()).isFalse();
        c.assertNoLeaks();
    }

    @Test
    void messagesBeforeAnUndecodableOneAreAnsweredFirstWhateverTheyArriveIn() {
        for (int pieces : new int[] {1, 0}) { // the whole batch in one read, then in random fragments
            Limits limits = Limits.fromProperties(Map.of("limits.pgwireMaxMessageBytes", "256"));
            Calls calls = Calls.pending();
            Connection c = connected(config(AuthMode.TRUST, limits), calls, 31);
            FrontendBytes batch = new FrontendBytes().query("CALL BINDING x('{}')").query("CALL BINDING y('{}')")
                    .query("CALL BINDING z('" + "z".repeat(300) + "')").query("CALL BINDING never('{}')");
            if (pieces == 1) {
                c.channel.writeInbound(io.netty.buffer.Unpooled.wrappedBuffer(batch.toByteArray()));
            } else {
                c.send(batch);
            }
            assertThat(c.receive()).as("nothing before the call in flight is answered").isEmpty();
            calls.futures.get(0).complete(new CallResult("c1", "{\"x\":1}"));
            assertThat(types(c.receive())).isEqualTo("TDCZ");
            calls.futures.get(1).complete(new CallResult("c2", "{\"y\":2}"));
            List<Message> m = c.receive();
            assertThat(types(m)).isEqualTo("TDCZE");
            assertThat(m.get(1).firstColumn()).isEqualTo("{\"y\":2}");
            assertThat(m.get(4).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "54000");
            assertThat(c.channel.isOpen()).isFalse();
            assertThat(calls.requests).extracting(CallRequest::bindingName).containsExactly("x", "y");
            c.assertNoLeaks();
        }
    }

    @Test
    void closingWithACallInFlightDoesNotCancelIt() {
        Calls calls = Calls.pending();
        Connection c = connected(trust(), calls, 30);
        c.send(new FrontendBytes().query("CALL BINDING x('{}')").query("CALL BINDING y('{}')"));
        assertThat(calls.requests).hasSize(1);
        c.channel.close();
        calls.futures.get(0).complete(new CallResult("c1", "{}"));
        c.channel.runPendingTasks();
        assertThat(calls.futures.get(0).isCancelled()).isFalse();
        assertThat(calls.requests).hasSize(1); // the queued second call is dropped with the connection
        assertThat(c.receive()).isEmpty();
        c.assertNoLeaks();
    }
}
