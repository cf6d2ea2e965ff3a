package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Each contract guest on the real cell host, over real row batches of 3 partitions: the outcome the
 * whole-system tests rely on when they bind it.
 */
class ContractGuestsTest {
    private static final Limits LIMITS = Limits.DEFAULTS;
    private static final List<Column> COLUMNS = List.of(Column.of("region", ColumnType.TEXT), Column.of("amount", ColumnType.FLOAT64));
    /** Rows of partitions 0, 1 and 2. */
    private static final int[] ROWS = {3, 2, 4};
    private static final String ARGS = "{\"limit\": 10}";

    private static CellHost host;

    @BeforeAll
    static void start() {
        host = CellHost.create(LIMITS);
    }

    @AfterAll
    static void stop() {
        host.close();
    }

    /** Partition {@code partition}'s batch of the selector: rows alternate between "eu" and "us". */
    private static byte[] batch(int partition) {
        RowBatchBuilder b = new RowBatchBuilder(partition, COLUMNS, LIMITS.rowsPerBatch(), LIMITS.batchMaxBytes());
        for (int r = 0; r < ROWS[partition]; r++) {
            b.startRow();
            b.setText(0, r % 2 == 0 ? "eu" : "us").setDouble(1, 1.25 * (r + 1));
        }
        return b.finish();
    }

    private static Component guest(String name) {
        return Component.of(ContractGuests.wasm(name));
    }

    private static Deadline inSeconds(long s) {
        return Deadline.afterMillis(System.nanoTime(), TimeUnit.SECONDS.toMillis(s));
    }

    private static RunOutcome run(String guest, int partition) {
        return host.run(guest(guest), batch(partition), ARGS, inSeconds(30));
    }

    /** Runs every partition and merges the partials, sorted as the coordinator passes them to reduce. */
    private static List<Partial> runAll(String guest) {
        List<Partial> merged = new ArrayList<>();
        for (int p = 0; p < ROWS.length; p++) {
            merged.addAll(run(guest, p).partials());
        }
        return merged.stream().sorted().toList();
    }

    private static String reduce(String guest, List<Partial> partials) {
        return host.reduce(guest(guest), PartialsCodec.encode(partials), ARGS, inSeconds(30)).resultJson();
    }

    private static void assertCode(ThrowingCallable call, ErrorCode code) {
        assertThatThrownBy(call).isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(code));
    }

    @Test
    void everyGuestCompilesToOneCachedModule() {
        for (String name : ContractGuests.NAMES) {
            byte[] wasm = ContractGuests.wasm(name);
            assertThat(wasm).as(name).startsWith(0x00, 0x61, 0x73, 0x6d);   // "\0asm"
            wasm[0] = 1;   // a copy: the cache keeps its own
            assertThat(ContractGuests.wasm(name)).as(name).startsWith(0x00);
        }
        assertThatThrownBy(() -> ContractGuests.wasm("no_such_guest")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void rowCountEmitsEachPartitionsRowsAndReducesToTheirSum() {
        List<Partial> partials = runAll("row_count");
        assertThat(partials).containsExactly(new Partial("p0/rows", 3), new Partial("p1/rows", 2), new Partial("p2/rows", 4));
        assertThat(reduce("row_count", partials)).isEqualTo("{\"rows\":9}");
    }

    @Test
    void rowCountRefusesABatchOfAnotherSelector() {
        RowBatchBuilder b = new RowBatchBuilder(0, List.of(Column.of("region", ColumnType.TEXT), Column.of("amount", ColumnType.INT64)),
                LIMITS.rowsPerBatch(), LIMITS.batchMaxBytes());
        b.startRow();
        b.setText(0, "eu").setLong(1, 3);
        byte[] other = b.finish();
        assertCode(() -> host.run(guest("row_count"), other, ARGS, inSeconds(30)), ErrorCode.GUEST_REPORTED_FAILURE);
    }

    @Test
    void emit65ExceedsTheEmitLimitInEveryPartition() {
        for (int p = 0; p < ROWS.length; p++) {
            int partition = p;
            assertCode(() -> run("emit_65", partition), ErrorCode.EMIT_LIMIT_EXCEEDED);
        }
        assertThat(reduce("emit_65", List.of(new Partial("p0/k0", 1), new Partial("p0/k1", 1)))).isEqualTo("{\"entries\":2}");
    }

    @Test
    void nanPartialIsCarriedByTheHostUnjudged() {
        List<Partial> partials = runAll("nan_partial");
        assertThat(partials).extracting(Partial::key).containsExactly("p0/x", "p1/x", "p2/x");
        assertThat(partials).allSatisfy(p -> assertThat(p.value()).isNaN());
        assertThat(reduce("nan_partial", partials)).isEqualTo("{\"entries\":3}");
    }

    @Test
    void constantKeyEmitsTotalFromEveryPartition() {
        for (int p = 0; p < ROWS.length; p++) {
            assertThat(run("constant_key", p).partials()).containsExactly(new Partial("total", ROWS[p]));
        }
        // The host does not judge duplicates either; the coordinator does, before any reduce.
        assertThat(reduce("constant_key", List.of(new Partial("total", 3), new Partial("total", 2)))).isEqualTo("{\"entries\":2}");
    }

    @Test
    void spinIsStoppedAtItsDeadline() {
        // A reduce first, so that the cell exists and the 300 ms go to the guest, not to instantiation.
        assertThat(reduce("spin", List.of(new Partial("p0/x", 1)))).isEqualTo("{}");
        long started = host.guestStarts();
        Deadline deadline = Deadline.afterMillis(System.nanoTime(), 300);
        assertCode(() -> host.run(guest("spin"), batch(0), ARGS, deadline), ErrorCode.DEADLINE_EXCEEDED);
        assertThat(host.guestStarts()).as("the guest was running when the deadline struck").isEqualTo(started + 1);
        // The interrupted cell was discarded; a fresh one reduces.
        assertThat(reduce("spin", List.of())).isEqualTo("{}");
    }

    @Test
    void spinRowsReturnsWithoutRowsAndSpinsWithThem() {
        RowBatchBuilder empty = new RowBatchBuilder(0, COLUMNS, LIMITS.rowsPerBatch(), LIMITS.batchMaxBytes());
        assertThat(host.run(guest("spin_rows"), empty.finish(), ARGS, inSeconds(30)).partials()).isEmpty();
        long started = host.guestStarts();
        assertCode(() -> host.run(guest("spin_rows"), batch(0), ARGS, Deadline.afterMillis(System.nanoTime(), 300)),
                ErrorCode.DEADLINE_EXCEEDED);
        assertThat(host.guestStarts()).isEqualTo(started + 1);
    }

    @Test
    void aBindingsBudgetsBoundItsEmitsAndItsPartialBytes() {
        Budgets tenEmits = new Budgets(0, 0, 0, 0, 10, 0);
        assertThatThrownBy(() -> host.run(guest("emit_65"), RowBatchStream.of(batch(0)), ARGS, inSeconds(30), tenEmits))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.EMIT_LIMIT_EXCEEDED);
                    assertThat(e.getMessage()).contains("more than 10 partials (its binding's budgets.emits)");
                });
        // p0/k0 .. p0/k64: 5 or 6 key bytes and 8 per value, 13 or 14 each
        Budgets hundredBytes = new Budgets(0, 0, 0, 100, 0, 0);
        assertThatThrownBy(() -> host.run(guest("emit_65"), RowBatchStream.of(batch(0)), ARGS, inSeconds(30), hundredBytes))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.SLOT_TOO_LARGE);
                    assertThat(e.getMessage()).contains("passed 100 bytes (its binding's budgets.outputBytes");
                });
        // row_count emits p0/rows: 7 key bytes and 8 for its value
        assertThat(host.run(guest("row_count"), RowBatchStream.of(batch(0)), ARGS, inSeconds(30), new Budgets(0, 0, 0, 15, 1, 0))
                .partials()).hasSize(1);
        assertThatThrownBy(() -> host.run(guest("row_count"), RowBatchStream.of(batch(0)), ARGS, inSeconds(30),
                new Budgets(0, 0, 0, 14, 1, 0))).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.SLOT_TOO_LARGE));
    }

    @Test
    void regionTotalsCountsAndSumsEachRegionLengthAndReducesToEveryPartial() {
        RowBatchBuilder b = new RowBatchBuilder(7, COLUMNS, LIMITS.rowsPerBatch(), LIMITS.batchMaxBytes());
        String[] regions = {"a", "bb", "ccc", "a", "ccc", "ccc"};
        for (int r = 0; r < regions.length; r++) {
            b.startRow();
            b.setText(0, regions[r]).setDouble(1, r + 1);
        }
        List<Partial> partials = host.run(guest("region_totals"), b.finish(), ARGS, inSeconds(30)).partials();
        assertThat(partials).containsExactly(new Partial("p7/1c", 2), new Partial("p7/1s", 5), new Partial("p7/2c", 1),
                new Partial("p7/2s", 2), new Partial("p7/3c", 3), new Partial("p7/3s", 14));
        RowBatchBuilder empty = new RowBatchBuilder(8, COLUMNS, LIMITS.rowsPerBatch(), LIMITS.batchMaxBytes());
        assertThat(host.run(guest("region_totals"), empty.finish(), ARGS, inSeconds(30)).partials()).isEmpty();
        List<Partial> merged = new ArrayList<>(partials);
        merged.add(new Partial("p9/1c", 4));
        assertThat(reduce("region_totals", merged.stream().sorted().toList())).isEqualTo(
                "{\"p7/1c\":2,\"p7/1s\":5,\"p7/2c\":1,\"p7/2s\":2,\"p7/3c\":3,\"p7/3s\":14,\"p9/1c\":4}");
        RowBatchBuilder tooLong = new RowBatchBuilder(0, COLUMNS, LIMITS.rowsPerBatch(), LIMITS.batchMaxBytes());
        tooLong.startRow();
        tooLong.setText(0, "ten bytes!").setDouble(1, 1);
        assertCode(() -> host.run(guest("region_totals"), tooLong.finish(), ARGS, inSeconds(30)),
                ErrorCode.GUEST_REPORTED_FAILURE);
    }

    @Test
    void trapTrapsInRun() {
        for (int p = 0; p < ROWS.length; p++) {
            int partition = p;
            assertCode(() -> run("trap", partition), ErrorCode.GUEST_TRAP);
        }
        assertThat(reduce("trap", List.of())).isEqualTo("{}");
    }

    @Test
    void reduceTrapRunsWellThenTrapsInReduce() {
        List<Partial> partials = runAll("reduce_trap");
        assertThat(partials).containsExactly(new Partial("p0/rows", 3), new Partial("p1/rows", 2), new Partial("p2/rows", 4));
        assertCode(() -> reduce("reduce_trap", partials), ErrorCode.GUEST_TRAP);
    }
}
