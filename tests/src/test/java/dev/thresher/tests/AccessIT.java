package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.cli.Main;
import dev.thresher.server.dev.DevCluster;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;

/**
 * Users, tenants and grants on the real cluster: SCRAM-SHA-256 logins over pgjdbc, SQL and command-line user
 * management, grants checked on every node (a grant made on one node applies on the others), bearer tokens on HTTP,
 * and tenants that see only their own bindings and journal.
 */
class AccessIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final String SAMPLE = DevCluster.SAMPLE_BINDING;

    private static Connection login(int node, String user, String password) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", user);
        p.setProperty("password", password);
        p.setProperty("connectTimeout", "10");
        return DriverManager.getConnection("jdbc:postgresql://" + Cluster.get().nodes().get(node).pgwireAddress()
                + "/thresher", p);
    }

    private static String sqlState(Callable<?> work) {
        try {
            work.call();
            return "(succeeded)";
        } catch (SQLException e) {
            return e.getSQLState();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** Runs the command line in this process, as {@code ./thresher ...} would, against the cluster's control database. */
    private static String cli(String... args) throws Exception {
        DevCluster c = Cluster.get();
        return run(args, "--control-url", c.controlUrl(), "--db-user", DevCluster.USER, "--db-password", DevCluster.PASSWORD);
    }

    /** Runs the command line as {@link #cli} does, through a node's admin routes (the dev cluster's, its admin token). */
    private static String cliThroughNode(String... args) throws Exception {
        return run(args, "--dev", Cluster.get().endpointsFile().getParent().toString());
    }

    private static String run(String[] args, String... reach) throws Exception {
        String[] all = new String[args.length + reach.length];
        System.arraycopy(args, 0, all, 0, args.length);
        System.arraycopy(reach, 0, all, args.length, reach.length);
        PrintStream before = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code;
        synchronized (AccessIT.class) {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            try {
                code = Main.commandLine().execute(all);
            } finally {
                System.setOut(before);
            }
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(code).as(String.join(" ", args) + ": " + text).isZero();
        return text;
    }

    /** Polls (every 50 ms, up to 10 s) until {@code work} stops failing: a change reaches every node within moments. */
    private static <T> T eventually(Callable<T> work) throws Exception {
        return Await.until("a change seen by every node", Duration.ofSeconds(10), () -> {
            try {
                return work.call();
            } catch (AssertionError e) {
                throw new Exception(e.getMessage(), e); // not yet: polled again, the last one reported
            }
        }, done -> true);
    }

    private static String unique(String prefix) {
        return prefix + "_" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Test
    void sqlUsersAndGrantsApplyOnEveryNodeAndAreCheckedBeforeTheBindingIsLookedUp() throws Exception {
        String ann = unique("ann");
        try (Connection admin = Cluster.connect(0); Statement s = admin.createStatement()) {
            s.execute("CREATE USER " + ann + " WITH PASSWORD 'ann-long-password'");
        }
        try (Connection c = eventually(() -> login(1, ann, "ann-long-password")); Statement s = c.createStatement()) {
            assertThat(sqlState(() -> s.executeQuery("CALL BINDING " + SAMPLE + "('{}')"))).isEqualTo("42501");
            // the same answer for a binding that does not exist: nothing is learnt about which do
            assertThat(sqlState(() -> s.executeQuery("CALL BINDING no_such_binding('{}')"))).isEqualTo("42501");
            assertThat(sqlState(() -> s.execute("CREATE TABLE t_" + ann + " (k bigint)"))).isEqualTo("42501");
            assertThat(sqlState(() -> s.execute("CREATE USER x_" + ann + " PASSWORD 'abcdefghij'"))).isEqualTo("42501");

            try (Connection admin = Cluster.connect(0); Statement a = admin.createStatement()) {
                a.execute("GRANT CALL ON BINDING " + SAMPLE + " TO " + ann);
            }
            // granted on node 0, applied on node 1 to the open session
            String result = eventually(() -> {
                try (ResultSet rs = s.executeQuery("CALL BINDING " + SAMPLE + "('{}')")) {
                    rs.next();
                    return rs.getString(1);
                }
            });
            assertThat(Cluster.differs(JSON.readTree(result), Cluster.sqlReference())).isNull();

            try (Connection admin = Cluster.connect(2); Statement a = admin.createStatement()) {
                a.execute("REVOKE CALL ON BINDING " + SAMPLE + " FROM " + ann);
            }
            eventually(() -> {
                assertThat(sqlState(() -> s.executeQuery("CALL BINDING " + SAMPLE + "('{}')"))).isEqualTo("42501");
                return null;
            });
            // a user may change its own password
            s.execute("ALTER USER " + ann + " PASSWORD 'ann-new-password'");
        }
        eventually(() -> login(2, ann, "ann-new-password")).close();
        assertThat(sqlState(() -> login(2, ann, "ann-long-password"))).isEqualTo("28P01");
        try (Connection admin = Cluster.connect(0); Statement s = admin.createStatement()) {
            s.execute("DROP USER " + ann);
        }
        eventually(() -> {
            assertThat(sqlState(() -> login(1, ann, "ann-new-password"))).isEqualTo("28P01");
            return null;
        });
    }

    @Test
    void aCallAndItsResultAreSeenOnlyByWhomMayCallItsBindingNow() throws Exception {
        String erin = unique("erin");
        String callId;
        try (Connection admin = Cluster.connect(0); Statement s = admin.createStatement()) {
            s.execute("CREATE USER " + erin + " WITH PASSWORD 'erin-long-password'");
            s.execute("GRANT CALL ON BINDING not_" + SAMPLE + " TO " + erin); // another binding's grant shows nothing
            try (ResultSet rs = s.executeQuery("CALL BINDING " + SAMPLE + "('{}')")) {
                assertThat(rs.next()).isTrue();
            }
            try (ResultSet rs = s.executeQuery("SELECT call_id FROM thresher.invocations WHERE binding = '" + SAMPLE
                    + "' AND state = 'succeeded' ORDER BY created_at DESC LIMIT 1")) {
                assertThat(rs.next()).isTrue();
                callId = rs.getString(1);
            }
        }
        String invocation = "SELECT call_id, result FROM thresher.invocations WHERE call_id = '" + callId + "'";
        String slots = "SELECT call_id FROM thresher.shard_runs WHERE call_id = '" + callId + "'";
        try (Connection c = eventually(() -> login(1, erin, "erin-long-password")); Statement s = c.createStatement()) {
            // not its binding: the call is answered as one that does not exist, and no view holds it
            assertThat(sqlState(() -> s.executeQuery("SHOW CALL '" + callId + "'"))).isEqualTo("42704");
            assertThat(rows(s, invocation)).isZero();
            assertThat(rows(s, slots)).isZero();
            assertThat(rows(s, "SELECT call_id FROM thresher.invocations WHERE binding = '" + SAMPLE + "'")).isZero();

            try (Connection admin = Cluster.connect(2); Statement a = admin.createStatement()) {
                a.execute("GRANT CALL ON BINDING " + SAMPLE + " TO " + erin);
            }
            String result = eventually(() -> {
                try (ResultSet rs = s.executeQuery("SHOW CALL '" + callId + "'")) {
                    assertThat(rs.next()).isTrue();
                    return rs.getString("result");
                }
            });
            assertThat(Cluster.differs(JSON.readTree(result), Cluster.sqlReference())).isNull();
            assertThat(rows(s, invocation)).isOne();
            assertThat(rows(s, slots)).isPositive();

            try (Connection admin = Cluster.connect(0); Statement a = admin.createStatement()) {
                a.execute("REVOKE CALL ON BINDING " + SAMPLE + " FROM " + erin);
            }
            eventually(() -> {
                assertThat(sqlState(() -> s.executeQuery("SHOW CALL '" + callId + "'"))).isEqualTo("42704");
                return null;
            });
            assertThat(rows(s, invocation)).isZero();
            assertThat(rows(s, slots)).isZero();
        }
        try (Connection admin = Cluster.connect(0); Statement s = admin.createStatement()) {
            s.execute("DROP USER " + erin);
        }
    }

    private static int rows(Statement s, String query) throws SQLException {
        int n = 0;
        try (ResultSet rs = s.executeQuery(query)) {
            while (rs.next()) {
                n++;
            }
        }
        return n;
    }

    @Test
    void aWrongPasswordAndAnUnknownUserAreTheSameRefusal() {
        SQLException wrong = catchSql(() -> login(0, DevCluster.USER, "not-the-password"));
        SQLException unknown = catchSql(() -> login(0, "nobody_here", "not-the-password"));
        assertThat(wrong.getSQLState()).isEqualTo("28P01");
        assertThat(unknown.getSQLState()).isEqualTo("28P01");
        assertThat(wrong.getMessage().replace("\"" + DevCluster.USER + "\"", "\"X\""))
                .isEqualTo(unknown.getMessage().replace("\"nobody_here\"", "\"X\""));
    }

    private static SQLException catchSql(Callable<?> work) {
        try {
            work.call();
        } catch (SQLException e) {
            return e;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        throw new AssertionError("expected a refusal");
    }

    private interface Cli {
        String run(String... args) throws Exception;
    }

    @Test
    void theCommandLineManagesUsersTokensAndGrantsAndHttpChecksThem() throws Exception {
        manageUsers(AccessIT::cli);
    }

    @Test
    void theCommandLineManagesUsersThroughANodesAdminRoutesAsOnTheControlDatabase() throws Exception {
        manageUsers(AccessIT::cliThroughNode);
    }

    private static void manageUsers(Cli cli) throws Exception {
        String bob = unique("bob");
        String added = cli.run("user", "add", bob);
        String password = added.lines().filter(l -> l.startsWith("password: ")).findFirst().orElseThrow().substring(10);
        String token = cli.run("user", "token", bob).strip();
        assertThat(token).startsWith("thr_");
        String http = Cluster.get().nodes().get(1).httpAddress();

        HttpResponse<String> none = call(http, SAMPLE, null);
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"thresher\"");
        assertThat(eventually(() -> {
            HttpResponse<String> r = call(http, SAMPLE, token);
            assertThat(r.statusCode()).isEqualTo(403);
            return r;
        }).body()).contains("\"code\":2002");

        cli.run("grant", "call", "on", "binding", SAMPLE, "to", bob);
        HttpResponse<String> ok = eventually(() -> {
            HttpResponse<String> r = call(http, SAMPLE, token);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            return r;
        });
        assertThat(Cluster.differs(JSON.readTree(ok.body()).get("result"), Cluster.sqlReference())).isNull();
        // a user's token is not an admin's
        HttpResponse<String> admin = HTTP.send(HttpRequest.newBuilder(URI.create(http + "/admin/topology"))
                .header("Authorization", "Bearer " + token).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(admin.statusCode()).isEqualTo(403);

        String listed = cli.run("user", "list");
        assertThat(listed).contains(bob).contains("call on binding " + SAMPLE);
        try (Connection c = eventually(() -> login(0, bob, password)); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING " + SAMPLE + "('{}')")) {
            assertThat(rs.next()).isTrue();
        }
        cli.run("user", "revoke-tokens", bob);
        eventually(() -> {
            assertThat(call(http, SAMPLE, token).statusCode()).isEqualTo(401);
            return null;
        });
        cli.run("user", "remove", bob);
    }

    @Test
    void aTenantSeesOnlyItsOwnBindingsAndJournal() throws Exception {
        String carol = unique("carol");
        String other = unique("tenant");
        String added = cli("user", "add", carol, "--tenant", other, "--admin");
        String password = added.lines().filter(l -> l.startsWith("password: ")).findFirst().orElseThrow().substring(10);
        try (Connection c = eventually(() -> login(2, carol, password)); Statement s = c.createStatement()) {
            // admin of its tenant, which has no binding of that name: the default tenant's is not visible
            SQLException e = catchSql(() -> s.executeQuery("CALL BINDING " + SAMPLE + "('{}')"));
            assertThat(e.getSQLState()).isNotEqualTo("42501");
            assertThat(e.getMessage()).contains("does not exist");
            try (ResultSet rs = s.executeQuery("SELECT binding FROM thresher.invocations")) {
                while (rs.next()) {
                    assertThat(rs.getString(1)).isNotEqualTo(SAMPLE);
                }
            }
            // its admin cannot touch the default tenant's users
            assertThat(sqlState(() -> s.execute("GRANT ADMIN TO " + DevCluster.USER))).isNotEqualTo("(succeeded)");
        }
        // nor over HTTP: its token reaches its own tenant's users only; the operator's admin token reaches every tenant's
        String token = cli("user", "token", carol).strip();
        String http = Cluster.get().nodes().get(0).httpAddress();
        HttpResponse<String> own = eventually(() -> {
            HttpResponse<String> r = admin(http, "/admin/users?all=true", token);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            return r;
        });
        assertThat(JSON.readTree(own.body())).isNotEmpty()
                .allSatisfy(u -> assertThat(u.get("tenant").asText()).isEqualTo(other));
        HttpResponse<String> theirs = admin(http, "/admin/users?tenant=" + DevCluster.TENANT, token);
        assertThat(theirs.statusCode()).as(theirs.body()).isEqualTo(403);
        // nor the default tenant's journal
        HttpResponse<String> theirCalls = admin(http, "/admin/invocations?tenant=" + DevCluster.TENANT, token);
        assertThat(theirCalls.statusCode()).as(theirCalls.body()).isEqualTo(403);
        assertThat(theirCalls.body()).contains("\"code\":2002");
        HttpResponse<String> ownCalls = admin(http, "/admin/invocations", token);
        assertThat(ownCalls.statusCode()).as(ownCalls.body()).isEqualTo(200);
        assertThat(JSON.readTree(ownCalls.body()).get("tenant").asText()).isEqualTo(other);
        assertThat(cliThroughNode("user", "list", "--tenant", other)).contains(carol);
        String dave = unique("dave");
        assertThat(cliThroughNode("user", "add", dave, "--tenant", other)).contains("added user " + dave + " to tenant " + other);
        assertThat(cliThroughNode("user", "list", "--all-tenants")).contains(carol).contains(dave);
        cliThroughNode("user", "remove", dave);
        assertThat(cliThroughNode("user", "list", "--tenant", other)).doesNotContain(dave);
    }

    private static HttpResponse<String> admin(String http, String path, String token) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(http + path)).header("Authorization", "Bearer " + token)
                .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> call(String http, String binding, String token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(http + "/v1/bindings/" + binding + "/call"))
                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString("{}"));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }
}
