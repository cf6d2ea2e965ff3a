package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.cli.Main;
import dev.thresher.server.dev.DevCluster;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code thresher component test} against the real cluster: over the cluster's own table its result equals the
 * call's, and a failing guest's output reaches both the harness and a psql caller.
 */
class ComponentHarnessIT {
    private static final Path SAMPLE = Path.of(System.getProperty("thresher.repo", "..")).toAbsolutePath().normalize()
            .resolve("examples/revenue_by_region");

    @TempDir
    Path tmp;

    /** What {@code thresher args...} printed and its exit code, as "code:output". */
    static String thresher(String... args) {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        PrintStream old = System.out;
        int exit;
        try {
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            exit = new CommandLine(new Main()).execute(args);
        } finally {
            System.setOut(old);
        }
        return exit + ":" + printed.toString(StandardCharsets.UTF_8);
    }

    private static String resultLine(String out) {
        return out.lines().filter(l -> l.startsWith("result: ")).findFirst().orElseThrow(() -> new AssertionError(out))
                .substring("result: ".length());
    }

    @Test
    void overTheClustersOwnTableTheHarnessAnswersExactlyAsTheCall() throws Exception {
        DevCluster cluster = Cluster.get();
        String dev = cluster.endpointsFile().getParent().toString();
        String out = thresher("component", "test", SAMPLE.toString(), "--table", "orders", "--dev", dev);
        assertThat(out).startsWith("0:").contains("in 16 partitions");
        String called;
        try (Connection c = Cluster.connect(0); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
            rs.next();
            called = rs.getString(1);
        }
        ObjectMapper json = new ObjectMapper();
        assertThat(json.readTree(resultLine(out))).isEqualTo(json.readTree(called));
        assertThat(thresher("component", "test", SAMPLE.toString(), "--table", "no_such_table", "--dev", dev))
                .as("a table the cluster does not have is the node's refusal").isEqualTo("1:");
    }

    @Test
    void aFailingGuestsOutputReachesTheHarnessAndAPsqlCaller() throws Exception {
        Files.writeString(tmp.resolve("thresher.json"), """
                {"manifestVersion": 1, "binding": "noisy", "module": "noisy.wat", "abiVersion": 2,
                 "selector": "SELECT region, amount FROM orders"}""");
        Files.writeString(tmp.resolve("noisy.wat"), """
                (module
                  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
                  (memory (export "memory") 1)
                  (data (i32.const 16) "amount out of range in row 3")
                  (func (export "thresher_abi_version") (result i32) (i32.const 2))
                  (func (export "run") (param i32) (result i32)
                    (i32.store (i32.const 0) (i32.const 16))
                    (i32.store (i32.const 4) (i32.const 28))
                    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
                    unreachable)
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""");
        Path rows = tmp.resolve("rows.csv");
        Files.writeString(rows, "region,amount:float8\neu,1\n");
        assertThat(thresher("component", "test", tmp.toString(), "--csv", rows.toString()))
                .startsWith("1:").contains("guest output:\namount out of range in row 3");

        DevCluster cluster = Cluster.get();
        Cluster.bindings().deployDir(DevCluster.TENANT, "test", tmp);
        Process p = new ProcessBuilder(List.of("psql", "-X", "-At", "postgresql://" + DevCluster.USER + ":"
                + DevCluster.PASSWORD + "@" + cluster.nodes().get(0).pgwireAddress() + "/thresher", "-c", "CALL BINDING noisy()"))
                .redirectErrorStream(true).start();
        String psql = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(psql).isNotZero();
        assertThat(psql).contains("guest trapped").contains("guest output:\namount out of range in row 3");
    }
}
