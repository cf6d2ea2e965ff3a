package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.limits.Limits;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.util.PSQLException;

/**
 * The resource bounds of a real node's pgwire front door (docs/security.md, "Resource bounds"): a flood of
 * connections past {@code limits.pgwireMaxConnections} is refused with {@code 53300} while a session inside keeps
 * calling; a user past {@code limits.pgwireConnectionsPerUser} too; a simple query of many statements neither
 * overflows the I/O thread's stack nor runs past {@code limits.pgwireStatementsPerQuery}; what prepared statements
 * hold is bounded in bytes. One node of its own, with small limits.
 */
class ResourceBoundsIT {
    private static final int MAX_CONNECTIONS = 20;
    private static final int PER_USER = 5;
    private static final int STATEMENT_BYTES = 1 << 20;
    private static final int STATEMENTS_PER_QUERY = 50_000;
    private static final String CALL = "CALL BINDING revenue_by_region('{}')";

    private static DevCluster cluster;
    private static Node node;

    @BeforeAll
    static void start() throws Exception {
        Limits limits = Limits.fromProperties(Map.of(
                "limits.pgwireMaxConnections", Integer.toString(MAX_CONNECTIONS),
                "limits.pgwireConnectionsPerUser", Integer.toString(PER_USER),
                "limits.pgwireStatementBytesPerConnection", Integer.toString(STATEMENT_BYTES),
                "limits.pgwireStatementsPerQuery", Integer.toString(STATEMENTS_PER_QUERY)));
        // one shard, one node: enough for a front door's bounds
        cluster = DevCluster.start(new DevCluster.Options(Files.createTempDirectory("thresher-bounds-"), 0, 2_000, 4, 1,
                42, limits, false));
        node = cluster.nodes().get(0);
        // the users the tests log in as (SCRAM-SHA-256, the dev cluster's password), each allowed to call
        try (HikariDataSource control = dev.thresher.store.Pools.open("bounds-users", cluster.controlUrl(),
                DevCluster.USER, DevCluster.PASSWORD, 1)) {
            var users = new dev.thresher.store.control.AccessStore(control);
            for (String user : List.of("flood-victim", "busy-user", "other-user", "scripter", "preparer", "latecomer")) {
                users.createUser(DevCluster.TENANT, user, dev.thresher.bindings.access.Scram.verifier(DevCluster.PASSWORD),
                        "ResourceBoundsIT");
                users.grant(java.util.Optional.empty(), user, dev.thresher.bindings.access.Grant.callAll(), "ResourceBoundsIT");
            }
        }
        for (String user : List.of("flood-victim", "busy-user", "other-user", "scripter", "preparer", "latecomer")) {
            awaitAdmitted(user); // the node has read the new users (on the catalog channel's notice)
        }
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    private static Connection connect(String user) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", user);
        p.setProperty("password", DevCluster.PASSWORD);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "60");
        return DriverManager.getConnection("jdbc:postgresql://" + node.pgwireAddress() + "/thresher", p);
    }

    private static String call(Connection c) throws SQLException {
        assertThat(c.isClosed()).isFalse();
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(CALL)) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }

    /** Waits, at most 30 s, until a new session of {@code user} is admitted (the server sees closes a moment later). */
    private static void awaitAdmitted(String user) {
        Await.until("a place free again for " + user, java.time.Duration.ofSeconds(30), java.time.Duration.ofMillis(20), () -> {
            try (Connection c = connect(user)) {
                assertThat(call(c)).contains("count");
                return true;
            } catch (PSQLException e) {
                // refused for the user's cap only, while the server sees the close: anything else fails at once
                assertThat(e.getSQLState()).as(e.getMessage()).isEqualTo("53300");
                throw e;
            }
        }, admitted -> admitted);
    }

    // ---- a minimal client of the wire protocol, for what a driver does not send

    /** One raw connection: bytes out, backend messages (type and body) in. */
    private static final class Raw implements AutoCloseable {
        final Socket socket;
        final DataInputStream in;

        Raw() throws IOException {
            this("127.0.0.1");
        }

        /** A socket from {@code localAddress}, one of loopback's 127.0.0.0/8. */
        Raw(String localAddress) throws IOException {
            String[] hostPort = node.pgwireAddress().split(":");
            socket = new Socket(hostPort[0], Integer.parseInt(hostPort[1]), java.net.InetAddress.getByName(localAddress), 0);
            socket.setSoTimeout(30_000);
            in = new DataInputStream(socket.getInputStream());
        }

        void send(byte[] bytes) throws IOException {
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
        }

        /** The next message as its type then its body, or null at the end of the stream. */
        Map.Entry<Character, byte[]> next() throws IOException {
            int type;
            try {
                type = in.read();
            } catch (SocketException reset) {
                return null;
            }
            if (type < 0) {
                return null;
            }
            byte[] body = new byte[in.readInt() - 4];
            in.readFully(body);
            return Map.entry((char) type, body);
        }

        /** The messages up to the next ReadyForQuery (or the end of the stream). */
        List<Map.Entry<Character, byte[]>> messages() throws IOException {
            List<Map.Entry<Character, byte[]>> messages = new ArrayList<>();
            Map.Entry<Character, byte[]> m;
            while ((m = next()) != null) {
                messages.add(m);
                if (m.getKey() == 'Z') {
                    break;
                }
            }
            return messages;
        }

        /** The types of the messages up to the next ReadyForQuery (or the end of the stream); errors' fields kept. */
        String untilReady(List<Map<Character, String>> errors) throws IOException {
            StringBuilder types = new StringBuilder();
            for (Map.Entry<Character, byte[]> m : messages()) {
                types.append(m.getKey());
                if (m.getKey() == 'E') {
                    errors.add(fields(m.getValue()));
                }
            }
            return types.toString();
        }

        /**
         * Logs in as {@code user} with SCRAM-SHA-256 (RFC 5802's client side, without channel binding) and reads up to
         * the first ReadyForQuery; returns the types of the messages after the server's final SASL message.
         */
        String login(String user, String password) throws Exception {
            send(startup(user));
            Map.Entry<Character, byte[]> sasl = next();
            assertThat(sasl.getKey()).isEqualTo('R');
            assertThat(ByteBuffer.wrap(sasl.getValue()).getInt()).as("AuthenticationSASL").isEqualTo(10);
            String clientNonce = java.util.UUID.randomUUID().toString().replace("-", "");
            String clientFirstBare = "n=,r=" + clientNonce;
            byte[] first = ("n,," + clientFirstBare).getBytes(StandardCharsets.UTF_8);
            send(message('p', cstring("SCRAM-SHA-256"), ByteBuffer.allocate(4).putInt(first.length).array(), first));
            Map.Entry<Character, byte[]> challenge = next();
            byte[] body = challenge.getValue();
            assertThat(ByteBuffer.wrap(body).getInt()).as("AuthenticationSASLContinue").isEqualTo(11);
            String serverFirst = new String(body, 4, body.length - 4, StandardCharsets.UTF_8);
            Map<String, String> attributes = new LinkedHashMap<>();
            for (String a : serverFirst.split(",")) {
                attributes.put(a.substring(0, 1), a.substring(2));
            }
            javax.crypto.SecretKeyFactory pbkdf2 = javax.crypto.SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
            byte[] salted = pbkdf2.generateSecret(new javax.crypto.spec.PBEKeySpec(password.toCharArray(),
                    java.util.Base64.getDecoder().decode(attributes.get("s")), Integer.parseInt(attributes.get("i")), 256))
                    .getEncoded();
            String withoutProof = "c=biws,r=" + attributes.get("r");
            byte[] authMessage = (clientFirstBare + "," + serverFirst + "," + withoutProof).getBytes(StandardCharsets.UTF_8);
            byte[] clientKey = hmac(salted, "Client Key".getBytes(StandardCharsets.UTF_8));
            byte[] signature = hmac(java.security.MessageDigest.getInstance("SHA-256").digest(clientKey), authMessage);
            byte[] proof = new byte[clientKey.length];
            for (int i = 0; i < proof.length; i++) {
                proof[i] = (byte) (clientKey[i] ^ signature[i]);
            }
            send(message('p', (withoutProof + ",p=" + java.util.Base64.getEncoder().encodeToString(proof))
                    .getBytes(StandardCharsets.UTF_8)));
            Map.Entry<Character, byte[]> last = next();
            assertThat(ByteBuffer.wrap(last.getValue()).getInt()).as("AuthenticationSASLFinal").isEqualTo(12);
            List<Map<Character, String>> errors = new ArrayList<>();
            String rest = untilReady(errors);
            assertThat(errors).isEmpty();
            return rest;
        }

        private static byte[] hmac(byte[] key, byte[] message) throws Exception {
            javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
            mac.init(new javax.crypto.spec.SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(message);
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private static Map<Character, String> fields(byte[] body) {
        Map<Character, String> fields = new LinkedHashMap<>();
        int i = 0;
        while (body[i] != 0) {
            char code = (char) body[i++];
            int end = i;
            while (body[end] != 0) {
                end++;
            }
            fields.put(code, new String(body, i, end - i, StandardCharsets.UTF_8));
            i = end + 1;
        }
        return fields;
    }

    private static byte[] message(char type, byte[]... parts) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            body.writeBytes(p);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(type);
        out.writeBytes(ByteBuffer.allocate(4).putInt(body.size() + 4).array());
        out.writeBytes(body.toByteArray());
        return out.toByteArray();
    }

    private static byte[] cstring(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[b.length + 1];
        System.arraycopy(b, 0, out, 0, b.length);
        return out;
    }

    private static byte[] startup(String user) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.writeBytes(cstring("user"));
        body.writeBytes(cstring(user));
        body.write(0);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ByteBuffer.allocate(8).putInt(8 + body.size()).putInt(3 << 16).array());
        out.writeBytes(body.toByteArray());
        return out.toByteArray();
    }

    private static byte[] parse(String name, String sql) {
        return message('P', cstring(name), cstring(sql), new byte[] {0, 0});
    }

    private static byte[] describeStatement(String name) {
        return message('D', new byte[] {'S'}, cstring(name));
    }

    private static byte[] closeStatement(String name) {
        return message('C', new byte[] {'S'}, cstring(name));
    }

    private static byte[] sync() {
        return message('S');
    }

    /** The value of one sample of the node's scrape: {@code series} with a label set containing {@code label}. */
    private static long metric(String series, String label) throws Exception {
        String text = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(node.httpAddress() + "/metrics"))
                .GET().build(), HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + "\\{([^}]*)\\} ([0-9.eE+]+)$").matcher(text);
        while (m.find()) {
            if (m.group(1).contains(label)) {
                return (long) Double.parseDouble(m.group(2));
            }
        }
        throw new AssertionError(series + "{" + label + "} is not in the scrape");
    }

    private static long refused(String reason) throws Exception {
        return metric("thresher_pgwire_connections_refused_total", "reason=\"" + reason + "\"");
    }

    private static long open() throws Exception {
        return metric("thresher_pgwire_connections", "node=");
    }

    /** Waits, at most 30 s, until the node counts {@code n} pgwire connections (closes are seen a moment later). */
    private static void awaitOpen(long n) {
        Await.until(n + " pgwire connections open", java.time.Duration.ofSeconds(30), java.time.Duration.ofMillis(20),
                ResourceBoundsIT::open, open -> open == n);
    }

    /** The first column of the first DataRow of {@code messages}, as text. */
    private static String firstColumn(List<Map.Entry<Character, byte[]>> messages) {
        ByteBuffer b = messages.stream().filter(m -> m.getKey() == 'D').findFirst().map(m -> ByteBuffer.wrap(m.getValue()))
                .orElseThrow(() -> new AssertionError("no DataRow"));
        b.getShort();
        byte[] value = new byte[b.getInt()];
        b.get(value);
        return new String(value, StandardCharsets.UTF_8);
    }

    private static byte[] query(String sql) {
        return message('Q', cstring(sql));
    }

    private static long count(List<Map.Entry<Character, byte[]>> messages, char type) {
        return messages.stream().filter(m -> m.getKey() == type).count();
    }

    // ---- the tests

    @Test
    void aFloodPastTheNodeCapIsRefusedWith53300WhileASessionInsideKeepsCalling() throws Exception {
        long refusedBefore = refused("node_limit");
        try (Connection inside = connect("flood-victim")) {
            String before = call(inside);
            awaitOpen(1); // this session only: the other tests' sessions are closed
            List<Raw> flood = new ArrayList<>();
            try {
                // the session above holds one place; sockets are counted in the order they are accepted. The flood comes
                // from ten addresses: one address alone may hold only a quarter of the places with sockets that have
                // not logged in (PgWireBoundsTest), and this is the node's cap
                for (int i = 0; i < MAX_CONNECTIONS + 50; i++) {
                    flood.add(new Raw("127.0.0." + (2 + i % 10)));
                }
                List<Raw> refusedSockets = flood.subList(MAX_CONNECTIONS - 1, flood.size());
                for (Raw r : refusedSockets) {
                    List<Map<Character, String>> errors = new ArrayList<>();
                    assertThat(r.untilReady(errors)).as("answered at once, then closed").isEqualTo("E");
                    assertThat(errors.get(0)).containsEntry('S', "FATAL").containsEntry('C', "53300");
                    assertThat(errors.get(0).get('M')).startsWith("sorry, too many clients already");
                    assertThat(r.next()).as("closed").isNull();
                }
                assertThat(refused("node_limit") - refusedBefore).isEqualTo(51);
                assertThat(open()).isEqualTo(MAX_CONNECTIONS);

                // the session inside goes on calling; a driver's new connection is refused, typed
                assertThat(call(inside)).isEqualTo(before);
                assertThatThrownBy(() -> connect("latecomer").close())
                        .isInstanceOfSatisfying(PSQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("53300"));
            } finally {
                for (Raw r : flood) {
                    r.close();
                }
            }
            assertThat(call(inside)).isEqualTo(before);
        }
        awaitAdmitted("latecomer");
    }

    @Test
    void aUserPastItsCapIsRefusedWith53300AndOthersAreNot() throws Exception {
        List<Connection> sessions = new ArrayList<>();
        try {
            for (int i = 0; i < PER_USER; i++) {
                sessions.add(connect("busy-user"));
            }
            assertThatThrownBy(() -> connect("busy-user").close())
                    .isInstanceOfSatisfying(PSQLException.class, e -> {
                        assertThat(e.getSQLState()).isEqualTo("53300");
                        assertThat(e.getMessage()).contains("too many connections for role \"busy-user\"");
                    });
            try (Connection other = connect("other-user")) {
                assertThat(call(other)).contains("count");
            }
            assertThat(call(sessions.get(0))).contains("count");
        } finally {
            for (Connection c : sessions) {
                c.close();
            }
        }
        awaitAdmitted("busy-user");
    }

    @Test
    void aScriptOfManyStatementsRunsWithoutOverflowingTheStackAndOneOfTooManyRunsNone() throws Exception {
        try (Raw r = new Raw()) {
            assertThat(r.login("scripter", DevCluster.PASSWORD)).startsWith("R").endsWith("Z");
            // 20,000 statements answered on the I/O thread in one simple query, then a call: the recursion this
            // replaced overflowed the I/O thread's stack at about 1,700
            r.send(query("SET application_name = 'a';".repeat(20_000) + CALL));
            List<Map.Entry<Character, byte[]>> answer = r.messages();
            assertThat(count(answer, 'E')).as("errors").isZero();
            assertThat(count(answer, 'C')).isEqualTo(20_001);
            assertThat(firstColumn(answer)).contains("count");

            r.send(query("SET application_name = 'b';".repeat(STATEMENTS_PER_QUERY + 1)));
            List<Map<Character, String>> errors = new ArrayList<>();
            assertThat(r.untilReady(errors)).isEqualTo("EZ");
            assertThat(errors.get(0)).containsEntry('C', "54000");
            assertThat(errors.get(0).get('M')).contains("limits.pgwireStatementsPerQuery");

            r.send(query("SHOW application_name"));
            assertThat(firstColumn(r.messages())).as("none of the refused query ran").isEqualTo("a");
        }
    }

    @Test
    void preparedStatementsAreBoundedInBytesPerConnection() throws Exception {
        try (Raw r = new Raw()) {
            assertThat(r.login("preparer", DevCluster.PASSWORD)).startsWith("R").endsWith("Z");
            List<Map<Character, String>> errors = new ArrayList<>();
            String padded = "SHOW application_name -- " + "x".repeat(300 * 1024);
            ByteArrayOutputStream three = new ByteArrayOutputStream();
            for (int i = 1; i <= 3; i++) {
                three.writeBytes(parse("s" + i, padded));
            }
            three.writeBytes(sync());
            r.send(three.toByteArray());
            assertThat(r.untilReady(errors)).isEqualTo("111Z");

            r.send(concat(parse("s4", padded), sync()));
            assertThat(r.untilReady(errors)).isEqualTo("EZ");
            assertThat(errors.get(0)).containsEntry('C', "54000");
            assertThat(errors.get(0).get('M')).contains("limits.pgwireStatementBytesPerConnection");

            r.send(concat(closeStatement("s1"), parse("s4", padded), describeStatement("s4"), sync()));
            assertThat(r.untilReady(errors)).as("closing one made room").isEqualTo("31tTZ");
        }
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }
}
