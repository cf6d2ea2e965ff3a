package dev.thresher.server.cli;

import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.BindingAdmin;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code thresher component test} over CSV rows: the sample's result from the real host code, the CSV's types,
 * NULLs and errors, a v1 guest's one-batch bound, and a failing guest's output in what the command prints.
 */
class ComponentHarnessTest {
    private static final Path SAMPLE = Path.of(System.getProperty("thresher.repo", "..")).toAbsolutePath().normalize()
            .resolve("examples/revenue_by_region");
    private static final Selector SELECTOR = Selector.parse("SELECT region, amount FROM orders");

    @TempDir
    Path tmp;

    private static ComponentHarness.Rows csv(String text) throws Exception {
        return ComponentHarness.readCsv(new StringReader(text), SELECTOR);
    }

    private static BindingAdmin.Checked sample() throws Exception {
        BindingAdmin.Package p = BindingAdmin.read(SAMPLE, Limits.DEFAULTS);
        return BindingAdmin.check(p.manifest(), p.module(), Limits.DEFAULTS);
    }

    @Test
    void theSampleOverCsvRowsGivesTheSumsAndCountsPerRegion() throws Exception {
        ComponentHarness h = new ComponentHarness(Limits.DEFAULTS);
        ComponentHarness.Rows rows = csv("id,amount,region\n1,1.5,eu\n2,2.0,us\n3,-0.25,eu\n4,4.0,us\n5,8,asia\n");
        assertThat(rows.columns()).containsExactly(new Column("region", ColumnType.TEXT, false),
                new Column("amount", ColumnType.FLOAT64, false));
        ComponentHarness.Outcome o = h.run(sample(), h.deal(rows, 2, 2), "{}");
        assertThat(o.failure()).isNull();
        assertThat(o.runs()).extracting(ComponentHarness.PartitionRun::rows).containsExactly(2, 3);
        assertThat(o.resultJson()).isEqualTo("{\"asia\":{\"sum\":8.0,\"count\":1},\"eu\":{\"sum\":1.25,\"count\":2},"
                + "\"us\":{\"sum\":6.0,\"count\":2}}");
        // dealt to more partitions than rows: the empty ones run over batches of no rows
        assertThat(h.run(sample(), h.deal(rows, 8, 2), "{}").resultJson()).isEqualTo(o.resultJson());
    }

    @Test
    void csvColumnsAreTypedByTheHeaderOrByTheirValuesAndUnquotedEmptyIsNull() throws Exception {
        Selector s = Selector.parse("SELECT a, b, c, d, e FROM t");
        ComponentHarness.Rows rows = ComponentHarness.readCsv(new StringReader(
                "a,b,c:float8,d:text?,e\n1,x,2,\"\",true\n-3,,4.5,y,f\n"), s);
        assertThat(rows.columns()).containsExactly(new Column("a", ColumnType.INT64, false), new Column("b", ColumnType.TEXT, true),
                new Column("c", ColumnType.FLOAT64, false), new Column("d", ColumnType.TEXT, true),
                new Column("e", ColumnType.BOOL, false));
        assertThat(rows.rows().get(0)).containsExactly(1L, "x", 2.0, "", true);
        assertThat(rows.rows().get(1)).containsExactly(-3L, null, 4.5, "y", false);
    }

    @Test
    void badCsvIsRefusedNamingTheLineAndColumn() {
        assertThatThrownBy(() -> csv("region,price\neu,1\n")).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS);
            assertThat(e.getMessage()).contains("has no column amount");
        });
        assertThatThrownBy(() -> csv("region,amount:float8\neu,1\nus,lots\n")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).isEqualTo("line 3, column amount: 'lots' is not float64"));
        assertThatThrownBy(() -> csv("region,amount\neu\n")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).contains("line 2: 1 fields; the header has 2"));
        assertThatThrownBy(() -> csv("region,amount:money\n")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).contains("type 'money' is not one a batch carries"));
    }

    @Test
    void aGuestOfAbiOneTakesOneBatchAsOnTheCluster() throws Exception {
        StringBuilder many = new StringBuilder("region,amount:float8\n"); // untyped, 1 would read as int8
        for (int i = 0; i < 4_097; i++) {
            many.append("eu,1\n");
        }
        ComponentHarness h = new ComponentHarness(Limits.DEFAULTS);
        ComponentHarness.Outcome o = h.run(sample(), h.deal(csv(many.toString()), 1, 1), "{}");
        assertThat(o.failure().code()).isEqualTo(ErrorCode.BATCH_TOO_MANY_ROWS);
        // the sample speaks ABI 2: the same rows arrive as two batches
        ComponentHarness.Outcome paged = h.run(sample(), h.deal(csv(many.toString()), 1, 2), "{}");
        assertThat(paged.resultJson()).as(String.valueOf(paged.failure())).isEqualTo("{\"eu\":{\"sum\":4097.0,\"count\":4097}}");
    }

    @Test
    void aFailingGuestsOutputIsPrintedWithItsTypedErrorAndTheCommandFails() throws Exception {
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
        Files.writeString(rows, "region,amount\neu,1\n");
        java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
        PrintStream old = System.out;
        int exit;
        try {
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            exit = new CommandLine(new Main()).execute("component", "test", tmp.toString(), "--csv", rows.toString());
        } finally {
            System.setOut(old);
        }
        String out = printed.toString(StandardCharsets.UTF_8);
        assertThat(exit).as(out).isEqualTo(1);
        assertThat(out).contains("partition 0: 1 rows, failed")
                .contains("ERROR 4001 GUEST_TRAP (terminal): partition 0: guest trapped")
                .contains("guest output:\namount out of range in row 3");
    }
}
