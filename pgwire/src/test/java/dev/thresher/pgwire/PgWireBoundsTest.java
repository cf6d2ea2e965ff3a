package dev.thresher.pgwire;

import static dev.thresher.pgwire.BackendReader.types;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.CallResult;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.BackendReader.Message;
import dev.thresher.pgwire.PgWireProtocolTest.Calls;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The bounds of one pgwire server on real sockets: connections per node and per user, idle sessions, statements per
 * simple query, bytes held per connection, identifier lengths, and what error messages may echo.
 */
class PgWireBoundsTest {
    private static final int MIB = 1 << 20;

    /** One raw client connection: what it sends, and the backend messages it reads back. */
    static final class Session implements AutoCloseable {
        final Socket socket;
        final DataInputStream in;

        Session(int port) throws IOException {
            this("127.0.0.1", port);
        }

        /** A socket from {@code localAddress} (any of 127.0.0.0/8 on loopback). */
        Session(String localAddress, int port) throws IOException {
            socket = new Socket("127.0.0.1", port, java.net.InetAddress.getByName(localAddress), 0);
            socket.setSoTimeout(30_000);
            in = new DataInputStream(socket.getInputStream());
        }

        /** A session that sent its startup as {@code user} and read the server's answer up to ReadyForQuery. */
        static Session login(int port, String user) throws IOException {
            Session s = new Session(port);
            List<Message> hello = s.send(new FrontendBytes().startup(Map.of("user", user))).untilReady();
            assertThat(types(hello)).as("startup of %s", user).startsWith("R").endsWith("Z");
            return s;
        }

        Session send(FrontendBytes bytes) throws IOException {
            socket.getOutputStream().write(bytes.toByteArray());
            socket.getOutputStream().flush();
            return this;
        }

        /** The next message, or null at the end of the stream (the server closed the connection). */
        Message next() throws IOException {
            int type;
            try {
                type = in.read();
            } catch (SocketException reset) {
                return null;
            }
            if (type < 0) {
                return null;
            }
            int length = in.readInt();
            byte[] body = new byte[length - 4];
            in.readFully(body);
            return new Message((char) type, body);
        }

        /** Messages up to and including the next ReadyForQuery (or up to the end of the stream). */
        List<Message> untilReady() throws IOException {
            List<Message> messages = new ArrayList<>();
            Message m;
            while ((m = next()) != null) {
                messages.add(m);
                if (m.type() == 'Z') {
                    break;
                }
            }
            return messages;
        }

        /** Every message up to the end of the stream: the server closed the connection. */
        List<Message> untilClosed() throws IOException {
            List<Message> messages = new ArrayList<>();
            Message m;
            while ((m = next()) != null) {
                messages.add(m);
            }
            return messages;
        }

        /** Runs a simple query, expecting it to succeed. */
        List<Message> query(String sql) throws IOException {
            List<Message> answer = send(new FrontendBytes().query(sql)).untilReady();
            assertThat(types(answer)).as(sql.length() > 100 ? sql.substring(0, 100) : sql).doesNotContain("E").endsWith("Z");
            return answer;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private static PgWireServer start(Map<String, String> limits) throws InterruptedException {
        return start(limits, new TestCallService());
    }

    private static PgWireServer start(Map<String, String> limits, dev.thresher.bindings.CallService calls)
            throws InterruptedException {
        Map<String, String> keyed = new HashMap<>();
        limits.forEach((k, v) -> keyed.put("limits." + k, v));
        return PgWireServer.start(new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", null, "acme",
                Limits.fromProperties(keyed)), calls);
    }

    private static Message error(List<Message> messages) {
        return messages.stream().filter(m -> m.type() == 'E').findFirst()
                .orElseThrow(() -> new AssertionError("no ErrorResponse in " + types(messages)));
    }

    /** Waits, at most 30 s, until {@code condition} holds (state another thread changes, never a measured time). */
    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waiting for %s", what).isLessThan(until);
            Thread.sleep(10);
        }
    }

    private static boolean logsIn(int port, String user) {
        try (Session s = new Session(port)) {
            List<Message> answer = s.send(new FrontendBytes().startup(Map.of("user", user))).untilReady();
            return types(answer).endsWith("Z");
        } catch (IOException e) {
            return false;
        }
    }

    // ---- connections

    @Test
    void socketsPastTheNodeCapAreRefusedWith53300WhileTheSessionsInsideKeepWorking() throws Exception {
        try (PgWireServer server = start(Map.of("pgwireMaxConnections", "3"))) {
            Session first = Session.login(server.port(), "alice");
            Session second = Session.login(server.port(), "bob");
            // counts too: not authenticated, not even a startup sent (sockets are counted in the order they are accepted)
            Session silent = new Session(server.port());
            List<Session> refused = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                refused.add(new Session(server.port()));
            }
            for (Session s : refused) {
                // answered at once, before the client says anything: a flood costs no more than an accept and a write
                List<Message> answer = s.untilClosed();
                assertThat(types(answer)).isEqualTo("E");
                assertThat(answer.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "53300")
                        .containsEntry('M', "sorry, too many clients already (limits.pgwireMaxConnections is 3)");
                assertThat(answer.get(0).errorFields().get('D')).contains("thresher_code=6003", "retry_class=RETRYABLE");
                s.close();
            }
            assertThat(first.query("CALL BINDING echo('{\"still\": 1}')").get(2).firstColumn()).isEqualTo("{\"still\": 1}");
            second.query("SHOW application_name");

            silent.close();
            await(() -> logsIn(server.port(), "carol"), "a place free again once a connection closed");
            first.close();
            second.close();
        }
    }

    @Test
    void aFloodOfRefusedSocketsHoldsAtMostTheLingeringBoundOfDescriptors() throws Exception {
        // kills: Refusal letting every refused socket linger (descriptors grew with the connect rate: a flood reached
        // 19,999 of 20,000 and the acceptor logged "Too many open files")
        int flood = 3 * PgWireServer.REFUSALS_LINGERING_MAX;
        try (PgWireServer server = start(Map.of("pgwireMaxConnections", "1"));
             Session inside = Session.login(server.port(), "alice")) {
            List<Session> refused = new ArrayList<>();
            try {
                for (int i = 0; i < flood; i++) {
                    refused.add(new Session(server.port())); // connected, and never closed by the client while counted
                }
                for (Session s : refused) {
                    Message answer = s.next();
                    assertThat(answer).isNotNull();
                    assertThat(answer.errorFields()).containsEntry('C', "53300");
                }
                assertThat(server.refusalsLingering()).as("refused sockets the server holds open")
                        .isBetween(0, PgWireServer.REFUSALS_LINGERING_MAX);
                assertThat(inside.query("CALL BINDING echo('{\"still\": 1}')").get(2).firstColumn()).isEqualTo("{\"still\": 1}");
            } finally {
                for (Session s : refused) {
                    s.close();
                }
            }
            await(() -> server.refusalsLingering() == 0, "every lingering refusal closed");
        }
    }

    @Test
    void socketsThatNeverLogInTakeAtMostAQuarterOfTheNodesPlacesPerAddress() throws Exception {
        // kills: PgAdmission.admitAwaiting's share (sockets left unauthenticated from one address held every
        // place of the node for the authentication timeout)
        try (PgWireServer server = start(Map.of("pgwireMaxConnections", "40"))) {
            List<Session> silent = new ArrayList<>();
            try {
                for (int i = 0; i < 10; i++) {
                    silent.add(new Session(server.port()));
                }
                // sockets become active on several I/O threads: the eleventh must come after the ten are counted
                await(() -> server.awaitingAuthentication("127.0.0.1") == 10, "the ten silent sockets counted");
                try (Session one = new Session(server.port())) {
                    List<Message> answer = one.untilClosed();
                    assertThat(types(answer)).isEqualTo("E");
                    assertThat(answer.get(0).errorFields()).containsEntry('C', "53300").containsEntry('M',
                            "too many connections awaiting authentication from this address (at most 10, a quarter of"
                                    + " limits.pgwireMaxConnections)");
                }
                try (Session other = new Session("127.0.0.2", server.port())) {
                    assertThat(types(other.send(new FrontendBytes().startup(Map.of("user", "alice"))).untilReady()))
                            .endsWith("Z");
                }
            } finally {
                for (Session s : silent) {
                    s.close();
                }
            }
            await(() -> logsIn(server.port(), "alice"), "the address's share free again once its sockets closed");
        }
    }

    @Test
    void sessionsPastTheUserCapAreRefusedAfterTheStartupWith53300() throws Exception {
        try (PgWireServer server = start(Map.of("pgwireMaxConnections", "10", "pgwireConnectionsPerUser", "2"))) {
            Session a1 = Session.login(server.port(), "alice");
            Session a2 = Session.login(server.port(), "alice");
            try (Session a3 = new Session(server.port())) {
                List<Message> answer = a3.send(new FrontendBytes().startup(Map.of("user", "alice"))).untilClosed();
                assertThat(types(answer)).isEqualTo("E");
                assertThat(answer.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "53300")
                        .containsEntry('M', "too many connections for role \"alice\" (limits.pgwireConnectionsPerUser is 2)");
            }
            try (Session b = Session.login(server.port(), "bob")) {
                b.query("CALL BINDING x('{}')");
            }
            a1.query("CALL BINDING x('{}')");
            a1.close();
            await(() -> logsIn(server.port(), "alice"), "alice's place free again once her session closed");
            a2.close();
        }
    }

    // ---- idle sessions

    @Test
    void anIdleSessionIsClosedWith57P05() throws Exception {
        try (PgWireServer server = start(Map.of("pgwireIdleSessionTimeoutMs", "200"));
             Session s = Session.login(server.port(), "alice")) {
            s.query("SET application_name = 'idle'");
            List<Message> end = s.untilClosed();
            assertThat(types(end)).isEqualTo("E");
            assertThat(end.get(0).errorFields()).containsEntry('S', "FATAL").containsEntry('C', "57P05")
                    .containsEntry('M', "terminating connection due to idle-session timeout"
                            + " (limits.pgwireIdleSessionTimeoutMs is 200)");
        }
    }

    @Test
    void aSessionWaitingForItsCallIsNotIdle() throws Exception {
        // the call takes five times the idle timeout; the session waits for it and goes on after
        Calls slow = new Calls(r -> CompletableFuture.supplyAsync(() -> new CallResult("c", "{\"slow\":true}"),
                CompletableFuture.delayedExecutor(5_000, TimeUnit.MILLISECONDS)));
        try (PgWireServer server = start(Map.of("pgwireIdleSessionTimeoutMs", "1000"), slow);
             Session s = Session.login(server.port(), "alice")) {
            List<Message> answer = s.query("CALL BINDING slow('{}')");
            assertThat(answer.get(1).firstColumn()).isEqualTo("{\"slow\":true}");
            s.query("SHOW application_name");
        }
    }

    @Test
    void aSessionWhoseClientStopsReadingIsClosedAtTheIdleBound() throws Exception {
        String big = "\"" + "x".repeat(128 * 1024) + "\"";
        Calls calls = new Calls(r -> CompletableFuture.completedFuture(new CallResult("c", big)));
        try (PgWireServer server = start(Map.of("pgwireIdleSessionTimeoutMs", "300"), calls);
             Session s = new Session(server.port())) {
            FrontendBytes bytes = new FrontendBytes().startup(Map.of("user", "alice"));
            for (int i = 0; i < 300; i++) {
                bytes.query("CALL BINDING x('{}')"); // 38 MiB of answers: far more than the socket buffers take
            }
            s.send(bytes); // and never read
            await(() -> server.readPauses() == 1, "the connection stopped reading");
            await(() -> server.openConnections() == 0, "the connection closed though its client never read");
        }
    }

    // ---- statements per simple query

    private static String sets(int n) {
        return "SET application_name = 'x';".repeat(n);
    }

    @Test
    void aQueryOfMoreStatementsThanTheLimitRunsNone() throws Exception {
        try (PgWireServer server = start(Map.of());
             Session s = Session.login(server.port(), "alice")) {
            List<Message> answer = s.send(new FrontendBytes().query(sets(10_000) + "CALL BINDING x('{}')")).untilReady();
            assertThat(types(answer)).isEqualTo("EZ");
            assertThat(error(answer).errorFields()).containsEntry('C', "54000").containsEntry('M',
                    "a simple query holds at most 1000 statements (limits.pgwireStatementsPerQuery); this one holds more");
            s.query("SHOW application_name");
        }
    }

    @Test
    void aLongScriptOfLocalStatementsRunsWithoutGrowingTheStack() throws Exception {
        try (PgWireServer server = start(Map.of("pgwireStatementsPerQuery", "200000"));
             Session s = Session.login(server.port(), "alice")) {
            List<Message> answer = s.query(sets(100_000) + "SHOW application_name");
            assertThat(answer.stream().filter(m -> m.type() == 'C')).hasSize(100_001);
        }
    }

    @Test
    void aScriptAtTheLimitMixingLocalStatementsAndCallsRunsInOrder() throws Exception {
        try (PgWireServer server = start(Map.of());
             Session s = Session.login(server.port(), "alice")) {
            StringBuilder script = new StringBuilder();
            for (int i = 0; i < 500; i++) {
                script.append("SET application_name = 'a").append(i).append("'; CALL BINDING echo('").append(i).append("');");
            }
            List<Message> answer = s.query(script.toString());
            List<String> rows = answer.stream().filter(m -> m.type() == 'D').map(Message::firstColumn).toList();
            assertThat(rows).hasSize(500).startsWith("0", "1", "2").endsWith("498", "499");
            assertThat(answer.stream().filter(m -> m.type() == 'C')).hasSize(1_000);
        }
    }

    // ---- bytes held per connection

    private static String callOf(int bytes) {
        return "CALL BINDING echo('\"" + "x".repeat(bytes) + "\"')";
    }

    @Test
    void preparedStatementsAreBoundedInBytes() throws Exception {
        try (PgWireServer server = start(Map.of()); // 16 MiB by default
             Session s = Session.login(server.port(), "alice")) {
            FrontendBytes five = new FrontendBytes();
            for (int i = 1; i <= 5; i++) {
                five.parse("s" + i, callOf(3 * MIB));
            }
            assertThat(types(s.send(five.sync()).untilReady())).isEqualTo("11111Z");

            List<Message> sixth = s.send(new FrontendBytes().parse("s6", callOf(3 * MIB)).sync()).untilReady();
            assertThat(types(sixth)).isEqualTo("EZ");
            assertThat(error(sixth).errorFields()).containsEntry('C', "54000");
            assertThat(error(sixth).errorFields().get('M')).contains("limits.pgwireStatementBytesPerConnection");
            // nothing was stored: s6 does not exist
            assertThat(error(s.send(new FrontendBytes().describe('S', "s6").sync()).untilReady())
                    .errorFields()).containsEntry('C', "26000");

            // closing one frees its bytes
            List<Message> again = s.send(new FrontendBytes().close('S', "s1").parse("s6", callOf(3 * MIB))
                    .describe('S', "s6").sync()).untilReady();
            assertThat(types(again)).isEqualTo("31tTZ");
        }
    }

    @Test
    void portalsAreBoundedInBytes() throws Exception {
        try (PgWireServer server = start(Map.of());
             Session s = Session.login(server.port(), "alice")) {
            byte[] value = ("\"" + "v".repeat(3 * MIB) + "\"").getBytes(StandardCharsets.UTF_8);
            // in a transaction block, so that Sync keeps the portals
            assertThat(types(s.query("BEGIN"))).isEqualTo("CZ");
            FrontendBytes bytes = new FrontendBytes().parse("s", "CALL BINDING echo($1)");
            for (int i = 1; i <= 5; i++) {
                bytes.bind("p" + i, "s", (short) 0, (short) 0, value);
            }
            // closing one frees its bytes for another; the one after that does not fit
            bytes.close('P', "p1").bind("p6", "s", (short) 0, (short) 0, value)
                    .bind("p7", "s", (short) 0, (short) 0, value).sync();
            List<Message> answer = s.send(bytes).untilReady();
            assertThat(types(answer)).isEqualTo("1" + "22222" + "3" + "2" + "EZ");
            assertThat(error(answer).errorFields()).containsEntry('C', "54000");
            assertThat(error(answer).errorFields().get('M')).contains("limits.pgwireStatementBytesPerConnection");
            // p7 was not stored
            List<Message> p7 = s.send(new FrontendBytes().describe('P', "p7").sync()).untilReady();
            assertThat(error(p7).errorFields()).containsEntry('C', "34000");
        }
    }

    // ---- identifiers and what errors echo

    private static void assertBoundedAndPrintable(String message) {
        assertThat(message.length()).as("message length").isLessThan(1_000);
        assertThat(message.chars().filter(c -> c < 0x20 || c == 0x7f)).as("control characters in " + message).isEmpty();
    }

    @Test
    void aBindingNameOfAMebibyteIsRefusedWithoutBeingEchoed() throws Exception {
        try (PgWireServer server = start(Map.of());
             Session s = Session.login(server.port(), "alice")) {
            String name = "\u0001\n" + "n".repeat(MIB);
            List<Message> answer = s.send(new FrontendBytes().query("CALL BINDING \"" + name + "\"('{}')")).untilReady();
            assertThat(types(answer)).isEqualTo("EZ");
            Map<Character, String> fields = error(answer).errorFields();
            assertThat(fields).containsEntry('C', "42622");
            assertBoundedAndPrintable(fields.get('M'));
            assertThat(fields.get('M')).contains("\\x01\\nnnnn").contains("(1048578 bytes)").contains("63 bytes");

            List<Message> unquoted = s.send(new FrontendBytes().query("CALL BINDING " + "b".repeat(64) + "('{}')"))
                    .untilReady();
            assertThat(error(unquoted).errorFields()).containsEntry('C', "42622");
            s.query("CALL BINDING " + "b".repeat(63) + "('{}')");
        }
    }

    @Test
    void namesAndValuesInErrorsAreTruncatedWithControlCharactersEscaped() throws Exception {
        try (PgWireServer server = start(Map.of());
             Session s = Session.login(server.port(), "alice")) {
            String statement = "s\u0007\r\n" + "z".repeat(MIB);
            List<Message> bind = s.send(new FrontendBytes().bindText("", statement, "{}").sync()).untilReady();
            Map<Character, String> fields = error(bind).errorFields();
            assertThat(fields).containsEntry('C', "26000");
            assertBoundedAndPrintable(fields.get('M'));
            assertThat(fields.get('M')).startsWith("prepared statement \"s\\x07\\r\\nzzz").contains("…(1048580 bytes)");

            List<Message> show = s.send(new FrontendBytes().query("SHOW \"a\u001bb\"")).untilReady();
            assertThat(error(show).errorFields()).containsEntry('C', "42704")
                    .containsEntry('M', "unrecognized configuration parameter \"a\\x1bb\"");

            List<Message> syntax = s.send(new FrontendBytes().query("CALL BINDING x(\u0002" + "q".repeat(MIB) + ")"))
                    .untilReady();
            assertThat(error(syntax).errorFields()).containsEntry('C', "42601");
            assertBoundedAndPrintable(error(syntax).errorFields().get('M'));

            List<Message> select = s.send(new FrontendBytes().query("SELECT " + "c".repeat(MIB)
                    + " FROM thresher.invocations")).untilReady();
            assertBoundedAndPrintable(error(select).errorFields().get('M'));
            s.query("SHOW application_name");
        }
    }

    @Test
    void aDisconnectedSocketDoesNotCountAnyMore() throws Exception {
        try (PgWireServer server = start(Map.of("pgwireMaxConnections", "1"))) {
            for (int i = 0; i < 5; i++) {
                // each closed session gives its place back (once the server saw it close)
                await(() -> logsIn(server.port(), "alice"), "the one place free");
            }
        }
    }
}
