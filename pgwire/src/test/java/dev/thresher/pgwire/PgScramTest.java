package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.access.AccessService;
import dev.thresher.bindings.access.AccessStatement;
import dev.thresher.bindings.access.Account;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Principal;
import dev.thresher.bindings.access.Scram;
import dev.thresher.limits.Limits;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Real pgjdbc and psql authenticating with SCRAM-SHA-256 against users with grants, and being refused. */
class PgScramTest {
    private static final TestCallService CALLS = new TestCallService();
    private static final String ANN_PASSWORD = "ann-s3cret-pass";
    private static final String BOB_PASSWORD = "bob-s3cret-pass";
    private static PgWireServer server;
    /**
     * Passwords whose SASLprep is not the identity, each logging in with libpq (psql), which prepares it on the client:
     * mapped and normalized (a fullwidth letter, a no-break space, a soft hyphen), and refused by SASLprep and so used
     * as they are (a private-use character, a character unassigned in Unicode 3.2, right-to-left text mixed with
     * left-to-right), each with a fullwidth letter that NFKC would change if it were applied.
     */
    static final Map<String, String> EXOTIC_PASSWORDS = Map.of(
            "mapped", "\uff50ass\u00a0w\u00adord",
            "private_use", "\ue000\uff50assword",
            "unassigned", "\ud83d\ude00\uff50assword",
            "bidi", "\u05d0\uff42\u05d0",
            "control", "pass\u0007\uff57ord");

    /** ann: admin of tenant acme; bob: may call binding "allowed" only, in tenant beta. */
    private static final AccessService USERS = new AccessService() {
        private final Map<String, Account> accounts = accounts();

        private Map<String, Account> accounts() {
            Map<String, Account> m = new java.util.HashMap<>(Map.of(
                    "ann", new Account(Principal.admin("ann", "acme"), Scram.verifier(ANN_PASSWORD)),
                    "bob", new Account(new Principal("bob", "beta", Set.of(Grant.call("allowed"))), Scram.verifier(BOB_PASSWORD))));
            EXOTIC_PASSWORDS.forEach((user, password) -> m.put(user,
                    new Account(Principal.admin(user, "acme"), Scram.verifier(password))));
            return Map.copyOf(m);
        }

        @Override
        public Optional<Account> account(String user) {
            return Optional.ofNullable(accounts.get(user));
        }

        @Override
        public Optional<Principal> byToken(String token) {
            return Optional.empty();
        }

        @Override
        public String execute(Principal by, AccessStatement statement) {
            by.checkAdmin("manage users");
            return "GRANT";
        }
    };

    @BeforeAll
    static void start() throws InterruptedException {
        server = PgWireServer.start(new PgWireConfig("127.0.0.1", 0, AuthMode.SCRAM, "unused", null, "acme",
                Limits.DEFAULTS), CALLS, null, null, null, null, USERS);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static Connection connect(String user, String password) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", user);
        p.setProperty("password", password);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "30");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + server.port() + "/thresher", p);
    }

    @Test
    void pgjdbcLogsInWithScramAndCallsInTheUsersTenant() throws SQLException {
        try (Connection c = connect("bob", BOB_PASSWORD); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING allowed('{}')")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo(TestCallService.RESULT);
        }
        assertThat(CALLS.requests).anySatisfy(r -> {
            assertThat(r.tenant()).isEqualTo("beta");
            assertThat(r.principal()).isEqualTo("bob");
            assertThat(r.bindingName()).isEqualTo("allowed");
        });
    }

    /**
     * A stranger guessing ann's password from one address, and leaving startups unanswered there, slows that address
     * only: ann's right password from an address of her own logs in (before, every attempt for the name queued behind
     * the stranger's, and with an authentication timeout of 3 s her turn was past it: refused).
     */
    @Test
    void guessesAtAUsersPasswordNeitherDelayNorRefuseTheUsersOwnLoginFromElsewhere() throws Exception {
        // kills: AuthThrottle.admit keyed on the user name
        Limits limits = Limits.fromProperties(Map.of("limits.pgwireAuthTimeoutMs", "3000"));
        try (PgWireServer own = PgWireServer.start(new PgWireConfig("127.0.0.1", 0, AuthMode.SCRAM, "unused", null, "acme",
                limits), CALLS, null, null, null, null, USERS)) {
            java.util.function.BiFunction<String, String, Properties> as = (password, from) -> {
                Properties p = new Properties();
                p.setProperty("user", "ann");
                p.setProperty("password", password);
                p.setProperty("connectTimeout", "10");
                p.setProperty("socketTimeout", "30");
                p.setProperty("localSocketAddress", from);
                return p;
            };
            String url = "jdbc:postgresql://127.0.0.1:" + own.port() + "/thresher";
            for (int i = 0; i < 4; i++) {
                assertThatThrownBy(() -> DriverManager.getConnection(url, as.apply("guess-" + System.nanoTime(), "127.0.0.1")))
                        .isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("28P01"));
            }
            java.util.List<java.net.Socket> abandoned = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 15; i++) {
                    java.net.Socket s = new java.net.Socket();
                    s.bind(new java.net.InetSocketAddress("127.0.0.1", 0));
                    s.connect(new java.net.InetSocketAddress("127.0.0.1", own.port()));
                    s.getOutputStream().write(new FrontendBytes().startup(Map.of("user", "ann")).toByteArray());
                    abandoned.add(s);
                }
                try (Connection c = DriverManager.getConnection(url, as.apply(ANN_PASSWORD, "127.0.0.2"));
                     Statement st = c.createStatement(); ResultSet rs = st.executeQuery("CALL BINDING x('{}')")) {
                    assertThat(rs.next()).isTrue();
                }
            } finally {
                for (java.net.Socket s : abandoned) {
                    s.close();
                }
            }
        }
    }

    @Test
    void aWrongPasswordAndAnUnknownUserAreOneAnswer28P01() {
        assertThatThrownBy(() -> connect("ann", "wrong-password-here")).isInstanceOf(SQLException.class)
                .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("28P01"))
                .hasMessageContaining("password authentication failed for user \"ann\"");
        assertThatThrownBy(() -> connect("nobody", "wrong-password-here")).isInstanceOf(SQLException.class)
                .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("28P01"))
                .hasMessageContaining("password authentication failed for user \"nobody\"");
    }

    @Test
    void aCallWithoutTheGrantIs42501AndTheSessionGoesOn() throws SQLException {
        int before = CALLS.requests.size();
        try (Connection c = connect("bob", BOB_PASSWORD); Statement s = c.createStatement()) {
            assertThatThrownBy(() -> s.executeQuery("CALL BINDING revenue('{}')")).isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("42501"))
                    .hasMessageContaining("grant call on binding \"revenue\" to \"bob\"");
            assertThatThrownBy(() -> s.execute("CREATE TABLE t (k bigint)")).isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("42501"));
            assertThatThrownBy(() -> s.execute("GRANT ADMIN TO bob")).isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("42501"));
            try (ResultSet rs = s.executeQuery("CALL BINDING allowed('{}')")) {
                assertThat(rs.next()).isTrue();
            }
        }
        // the refused call never reached the call service (checked before the binding is looked up)
        assertThat(CALLS.requests.subList(before, CALLS.requests.size()))
                .allSatisfy(r -> assertThat(r.bindingName()).isEqualTo("allowed"));
    }

    @Test
    void psqlLogsInWithPasswordsWhoseSaslprepMapsNormalizesOrRefusesThem() throws Exception {
        // kills: Scram.normalize applying NFKC to a password SASLprep refuses (libpq hashes it as it is)
        for (var user : EXOTIC_PASSWORDS.entrySet()) {
            String out = psql(user.getKey(), user.getValue());
            assertThat(out).as(user.getKey()).contains("\"total\": 42");
        }
    }

    private static String psql(String user, String password) throws Exception {
        Path psql = null;
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, "psql"))) {
                psql = Path.of(dir, "psql");
            }
        }
        assertThat(psql).as("psql on the PATH (.ci/run installs postgresql-client)").isNotNull();
        ProcessBuilder pb = new ProcessBuilder(psql.toString(), "-X", "-At", "-h", "127.0.0.1", "-p",
                Integer.toString(server.port()), "-U", user, "-d", "thresher", "-c", "CALL BINDING x('{}')");
        pb.environment().put("PGPASSWORD", password);
        pb.environment().put("PGCONNECT_TIMEOUT", "10");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(user + ": " + out).isZero();
        return out;
    }

    @Test
    void psqlLogsInWithScram() throws Exception {
        // the server offers SCRAM-SHA-256 only (AuthMode.SCRAM): a login is a SCRAM exchange
        Path psql = null;
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, "psql"))) {
                psql = Path.of(dir, "psql");
            }
        }
        assertThat(psql).as("psql on the PATH (.ci/run installs postgresql-client)").isNotNull();
        ProcessBuilder pb = new ProcessBuilder(psql.toString(), "-X", "-At", "-h", "127.0.0.1", "-p",
                Integer.toString(server.port()), "-U", "ann", "-d", "thresher", "-c", "CALL BINDING x('{}')");
        pb.environment().put("PGPASSWORD", ANN_PASSWORD);
        pb.environment().put("PGCONNECT_TIMEOUT", "10");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("\"total\": 42");
    }
}
