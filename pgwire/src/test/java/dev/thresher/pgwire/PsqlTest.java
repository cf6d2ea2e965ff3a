package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.thresher.limits.Limits;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Real psql against the real server. Skipped only when psql is not on the PATH; the full-system suite
 * in {@code tests} covers psql as well.
 */
class PsqlTest {
    private static final TestCallService CALLS = new TestCallService();
    private static PgWireServer server;

    @BeforeAll
    static void start() throws InterruptedException {
        server = PgWireServer.start(new PgWireConfig("127.0.0.1", 0, AuthMode.PASSWORD, "thresher",
                PgJdbcTest.PASSWORD, "acme", Limits.DEFAULTS), CALLS);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    record Run(int exitCode, String stdout, String stderr) {
    }

    private static Run psql(String password, String... extra) throws IOException, InterruptedException {
        Path psql = onPath("psql");
        assumeTrue(psql != null, "psql is not on the PATH");
        List<String> command = new ArrayList<>(List.of(psql.toString(), "-h", "127.0.0.1", "-p",
                Integer.toString(server.port()), "-U", "thresher", "-d", "thresher", "-X", "-At"));
        command.addAll(List.of(extra));
        return run(new ProcessBuilder(command), password);
    }

    /** Runs a psql process with {@code password}, bounded to 60 s. */
    private static Run run(ProcessBuilder pb, String password) throws IOException, InterruptedException {
        pb.environment().put("PGPASSWORD", password);
        pb.environment().put("PGCONNECT_TIMEOUT", "10");
        Path out = Files.createTempFile("psql", ".out");
        Path err = Files.createTempFile("psql", ".err");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("psql did not finish within 60 s");
        }
        Run run = new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8).strip(),
                Files.readString(err, StandardCharsets.UTF_8).strip());
        Files.delete(out);
        Files.delete(err);
        return run;
    }

    private static Path onPath(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path candidate = Path.of(dir, name);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    @Test
    void psqlRunsACall() throws Exception {
        Run run = psql(PgJdbcTest.PASSWORD, "-c", "CALL BINDING x('{}')");
        assertThat(run.exitCode()).as(run.stderr()).isZero();
        assertThat(run.stdout()).isEqualTo(TestCallService.RESULT);
        // the call id notice goes to stderr, before the answer; SET thresher.call_id_notice = off silences it
        assertThat(run.stderr()).matches("(?s)NOTICE:  call call-\\d+ recorded\\s+DETAIL:  call-\\d+");
        Run quiet = psql(PgJdbcTest.PASSWORD, "-c", "SET thresher.call_id_notice = off", "-c", "CALL BINDING x('{}')");
        assertThat(quiet.exitCode()).as(quiet.stderr()).isZero();
        assertThat(quiet.stdout().lines()).containsExactly("SET", TestCallService.RESULT);
        assertThat(quiet.stderr()).isEmpty();
    }

    @Test
    void psqlConnectsWithReadWriteSessionAttributesAndShows() throws Exception {
        Path psql = onPath("psql");
        assumeTrue(psql != null, "psql is not on the PATH");
        ProcessBuilder pb = new ProcessBuilder(psql.toString(), "-X", "-At", "-c", "SHOW transaction_read_only",
                "-c", "BEGIN", "-c", "CALL BINDING x('{}')", "-c", "COMMIT",
                "host=127.0.0.1 port=" + server.port() + " user=thresher dbname=thresher target_session_attrs=read-write");
        Run run = run(pb, PgJdbcTest.PASSWORD);
        assertThat(run.exitCode()).as(run.stderr()).isZero();
        assertThat(run.stdout().lines()).containsExactly("off", "BEGIN", TestCallService.RESULT, "COMMIT");
    }

    @Test
    void psqlSeesSqlStatesAndWrongPasswords() throws Exception {
        Run unsupported = psql(PgJdbcTest.PASSWORD, "-v", "VERBOSITY=verbose", "-c", "SELECT 2 + 2");
        assertThat(unsupported.exitCode()).isEqualTo(1);
        assertThat(unsupported.stderr()).contains("ERROR:  0A000:");

        Run wrong = psql("wrong", "-c", "CALL BINDING x('{}')");
        assertThat(wrong.exitCode()).isEqualTo(2);
        assertThat(wrong.stderr()).contains("password authentication failed");
    }
}
