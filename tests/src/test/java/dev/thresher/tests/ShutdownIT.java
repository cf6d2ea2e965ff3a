package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.failpoints.Failpoint;
import dev.thresher.failpoints.Failpoints.Action;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.postgresql.util.PSQLException;

/**
 * Stopping a node ({@code Node.close}, what SIGTERM and Ctrl-C run) while a call is in flight on it:
 * the node stops taking calls and reads not ready at once, the call in flight still gets its result
 * on its own connection, and only then does the node finish stopping.
 */
class ShutdownIT {
    private static final String ROWS = "{\"rows\":50000}";
    private static final Pattern CODE = Pattern.compile("thresher_code=(\\d+)");
    /** Runs the calls and the close the test waits on; never the common pool. */
    private static final ExecutorService ASYNC = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());

    private static DevCluster cluster;
    private static PGSimpleDataSource controlDb;

    @BeforeAll
    static void start() throws Exception {
        cluster = DevCluster.start(DevCluster.Options.defaults(Files.createTempDirectory("thresher-shutdown-"))
                .withPgwirePort(0).withFailpoints());
        controlDb = new PGSimpleDataSource();
        controlDb.setURL(cluster.controlUrl());
        controlDb.setUser(DevCluster.USER);
        controlDb.setPassword(DevCluster.PASSWORD);
        ContractGuests.bind(controlDb, DevCluster.TENANT, "row_count", "row_count");
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.nodes().forEach(n -> n.failpoints().reset());
            cluster.close();
            cluster = null; // the closed cluster's cells and pools go with it
        }
    }

    @Test
    void aWarmUpCallThatFailsRetryablyIsTriedAgainAndNeverEndsTheCluster() throws Exception {
        // kills: DevCluster.warmUpCall (a warm-up call's failure reached the dev command, which stopped the cluster)
        Node n1 = cluster.nodes().get(1); // not the node the other test stops
        long before = n1.failpoints().fired(Failpoint.BEFORE_REDUCE);
        n1.failpoints().arm(Failpoint.BEFORE_REDUCE, 1, Action.fail(ErrorCode.TARGET_STALE));
        cluster.warmUp(1);
        assertThat(n1.failpoints().fired(Failpoint.BEFORE_REDUCE)).isEqualTo(before + 1);
        assertThat(call(n1.pgwireAddress(), "row_count")).isEqualTo(ROWS);
    }

    @Test
    void aStoppingNodeTakesNoNewCallsAndFinishesTheOneInFlightBeforeItStops() throws Exception {
        Node n0 = cluster.nodes().get(0);
        String pgwire = n0.pgwireAddress();
        int pgwirePort = n0.pgwirePort();
        String http = n0.httpAddress();
        assertThat(readyz(http)).isEqualTo(200);
        assertThat(call(pgwire, "row_count")).as("a call before stopping").isEqualTo(ROWS);

        Action hold = Action.halt();
        n0.failpoints().arm(Failpoint.BEFORE_REDUCE, 1, hold);
        CompletableFuture<String> held = CompletableFuture.supplyAsync(() -> callUnchecked(pgwire, "row_count"), ASYNC);
        await(() -> n0.failpoints().fired(Failpoint.BEFORE_REDUCE) == 1, "the call reached reduce", held);

        CompletableFuture<Void> closing = CompletableFuture.runAsync(n0::close, ASYNC);
        await(() -> readyz(http) != 200, "node 0 reads not ready (or its HTTP port refuses)", held);
        assertThat(readyz(http)).as("/readyz while stopping: 503, or no listener").isIn(503, -1);
        assertNewCallsRefused(pgwire);
        assertThat(held).as("the held call is still waiting").isNotDone();
        assertThat(closing).as("close waits for the call in flight").isNotDone();

        n0.failpoints().release(hold);
        assertThat(held.get(60, TimeUnit.SECONDS)).as("the call in flight gets its result").isEqualTo(ROWS);
        closing.get(90, TimeUnit.SECONDS);
        assertThat(lastInvocationState("row_count")).isEqualTo("succeeded");
        assertThat(listening(pgwirePort)).as("pgwire still listening after close").isFalse();
        assertThat(readyz(http)).as("HTTP still answering after close").isEqualTo(-1);
        n0.close(); // a second close returns once the first has finished
    }

    /** A new pgwire connection to the stopping node is refused, or its call is, with HOST_UNREACHABLE (57P03). */
    private static void assertNewCallsRefused(String pgwire) {
        try {
            String result = call(pgwire, "row_count");
            throw new AssertionError("a new call on a stopping node was taken: " + result);
        } catch (PSQLException e) {
            if (e.getCause() instanceof ConnectException) {
                return; // the listener is closed: refused at connect
            }
            assertThat(e.getSQLState()).as(e.getMessage()).isEqualTo("57P03");
            String detail = e.getServerErrorMessage() == null ? "" : e.getServerErrorMessage().getDetail();
            Matcher m = CODE.matcher(detail == null ? "" : detail);
            assertThat(m.find()).as("thresher_code in %s", detail).isTrue();
            assertThat(ErrorCode.ofCode(Integer.parseInt(m.group(1)))).isEqualTo(ErrorCode.HOST_UNREACHABLE);
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    private static String call(String pgwire, String binding) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "60");
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + pgwire + "/thresher", p);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING " + binding + "('{}')")) {
            assertThat(rs.next()).isTrue();
            return rs.getString(1);
        }
    }

    private static String callUnchecked(String pgwire, String binding) {
        try {
            return call(pgwire, binding);
        } catch (SQLException e) {
            throw new AssertionError(e);
        }
    }

    /** The status of {@code GET /readyz} on a new connection, or -1 when the connection is refused. */
    private static int readyz(String http) {
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).executor(ASYNC).build()) {
            return client.send(HttpRequest.newBuilder(URI.create(http + "/readyz")).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (ConnectException e) {
            return -1;
        } catch (IOException e) {
            if (e.getCause() instanceof ConnectException) {
                return -1;
            }
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static boolean listening(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static String lastInvocationState(String binding) throws SQLException {
        try (Connection c = controlDb.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT state FROM invocations WHERE binding_name = ? ORDER BY created_at DESC LIMIT 1")) {
            ps.setString(1, binding);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getString(1);
            }
        }
    }

    /** Waits for a condition the held call's situation brings about; the call ending first is the failure. */
    private static void await(BooleanSupplier condition, String what, CompletableFuture<?> call) {
        Await.until(what, Duration.ofSeconds(30), condition, call);
    }
}
