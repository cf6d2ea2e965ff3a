package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.limits.Limits;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Per-connection limits of the pgwire server, on real sockets. */
class PgWireLimitsTest {
    private static PgWireServer server;

    @BeforeAll
    static void start() throws InterruptedException {
        Limits limits = Limits.fromProperties(Map.of(
                "limits.pgwireAuthTimeoutMs", "300",
                "limits.pgwireStatementsPerConnection", "3"));
        server = PgWireServer.start(new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", null, "acme", limits),
                new TestCallService());
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void aConnectionThatDoesNotAuthenticateInTimeIsClosed() throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            InputStream in = s.getInputStream();
            byte[] all = in.readAllBytes(); // returns at end of stream: the server closed the connection
            String text = new String(all, StandardCharsets.ISO_8859_1);
            assertThat(all).isNotEmpty();
            assertThat((char) all[0]).as("an ErrorResponse").isEqualTo('E');
            assertThat(text).contains("C28000").contains("pgwireAuthTimeoutMs");
        }
    }

    @Test
    void preparedStatementsPerConnectionAreBounded() throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", "thresher");
        p.setProperty("prepareThreshold", "1");
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + server.port() + "/thresher", p)) {
            for (int i = 1; i <= 3; i++) {
                try (PreparedStatement ps = c.prepareStatement("CALL BINDING b" + i + "(?)")) {
                    ps.setString(1, "{}");
                    ps.executeQuery().close();
                }
            }
            try (PreparedStatement ps = c.prepareStatement("CALL BINDING b4(?)")) {
                ps.setString(1, "{}");
                assertThatThrownBy(ps::executeQuery).isInstanceOfSatisfying(SQLException.class,
                        e -> assertThat(e.getSQLState()).isEqualTo("54000"));
            }
            // The connection keeps serving statements it already holds.
            try (PreparedStatement ps = c.prepareStatement("CALL BINDING b1(?)")) {
                ps.setString(1, "{}");
                ps.executeQuery().close();
            }
        }
    }
}
