package dev.thresher.cellhost;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Partial;
import dev.thresher.cellhost.TestGuests.Script;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class CellHostTest {
    private static CellHost host;

    @BeforeAll
    static void start() {
        host = CellHost.create(Limits.DEFAULTS);
    }

    @AfterAll
    static void stop() {
        host.close();
    }

    private static Deadline inSeconds(long s) {
        return Deadline.afterMillis(System.nanoTime(), TimeUnit.SECONDS.toMillis(s));
    }

    private static RunOutcome run(Component c, Script s) {
        return host.run(c, s.bytes(), "{}", inSeconds(30));
    }

    private static ReduceOutcome reduce(Script s) {
        return host.reduce(TestGuests.scriptGuest(), s.bytes(), "{}", inSeconds(30));
    }

    /** Waits until the host has started {@code n} guests; fails after 30 s rather than spin for ever. */
    private static void awaitGuestStarts(CellHost h, long n) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (h.guestStarts() < n) {
            assertThat(System.nanoTime() - until).as("waiting for %d guest starts, saw %d", n, h.guestStarts()).isNegative();
            Thread.sleep(1);
        }
    }

    private static void assertCode(ThrowingCallable call, ErrorCode code) {
        assertThatThrownBy(call).isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(code));
    }

    @Test
    void engineIsNamed() {
        assertThat(host.engineName()).isNotBlank();
        assertThat(host.optimizing()).isEqualTo(!"Interpreted".equals(host.engineName()));
    }

    @Test
    void emitRoundTripKeepsKeysValuesOrderAndNanBits() {
        double nan = Double.longBitsToDouble(0x7ff8_0000_0000_0123L);
        double signalling = Double.longBitsToDouble(0x7ff0_0000_0000_0001L);
        Script s = new Script().emit("p1/eu/sum", 12.5).emit("ключ/ü", -0.0).emit("nan", nan)
                .emit("snan", signalling).emit("inf", Double.NEGATIVE_INFINITY).emitArguments();
        RunOutcome out = host.run(TestGuests.scriptGuest(), s.bytes(), "{\"limit\":10}", inSeconds(30));
        assertThat(out.partials()).extracting(Partial::key)
                .containsExactly("p1/eu/sum", "ключ/ü", "nan", "snan", "inf", "{\"limit\":10}");
        assertThat(out.partials()).extracting(p -> Double.doubleToRawLongBits(p.value())).containsExactly(
                Double.doubleToRawLongBits(12.5), Double.doubleToRawLongBits(-0.0), 0x7ff8_0000_0000_0123L,
                0x7ff0_0000_0000_0001L, Double.doubleToRawLongBits(Double.NEGATIVE_INFINITY), Double.doubleToRawLongBits(12.0));
        assertThat(out.emitCount()).isEqualTo(6);
        assertThat(out.guestNanos()).isPositive();

        // The same cell again, with other input: nothing of the previous invocation leaks in.
        RunOutcome again = host.run(TestGuests.scriptGuest(), new Script().emitArguments().bytes(), "[]", inSeconds(30));
        assertThat(again.partials()).containsExactly(new Partial("[]", 2.0));
    }

    @Test
    void emitLimitFailsTheRunWhateverTheGuestDoesNext() {
        Script ignoring = new Script();
        for (int i = 0; i < 65; i++) {
            ignoring.emit("k" + i, i);
        }
        assertCode(() -> run(TestGuests.scriptGuest(), ignoring), ErrorCode.EMIT_LIMIT_EXCEEDED);

        Script stopping = new Script();
        for (int i = 0; i < 100; i++) {
            stopping.emitOrStop("k" + i, i);
        }
        assertCode(() -> run(TestGuests.scriptGuest(), stopping), ErrorCode.EMIT_LIMIT_EXCEEDED);

        Script thenFailing = new Script();
        for (int i = 0; i < 65; i++) {
            thenFailing.emit("k" + i, i);
        }
        thenFailing.trap();
        assertCode(() -> run(TestGuests.scriptGuest(), thenFailing), ErrorCode.EMIT_LIMIT_EXCEEDED);

        Script exactly64 = new Script();
        for (int i = 0; i < 64; i++) {
            exactly64.emit("k" + i, i);
        }
        assertThat(run(TestGuests.scriptGuest(), exactly64).partials()).hasSize(64);
    }

    @Test
    void malformedKeysAreRefused() {
        assertCode(() -> run(TestGuests.scriptGuest(), new Script().emit("x".repeat(1025), 1)), ErrorCode.PARTIAL_MALFORMED);
        assertThat(run(TestGuests.scriptGuest(), new Script().emit("x".repeat(1024), 1)).partials()).hasSize(1);
        assertCode(() -> run(TestGuests.scriptGuest(), new Script().emit(new byte[] {'a', (byte) 0xff}, 1)),
                ErrorCode.PARTIAL_MALFORMED);
        assertCode(() -> run(TestGuests.scriptGuest(), new Script().emit(new byte[] {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, 1)),
                ErrorCode.PARTIAL_MALFORMED);
        assertCode(() -> run(TestGuests.scriptGuest(), new Script().emit("", 1)), ErrorCode.PARTIAL_MALFORMED);
    }

    @Test
    void trapsAreGuestTrapsAndTheNextCallWorks() {
        for (Script s : List.of(new Script().trap(), new Script().outOfBounds(), new Script().recurseForever())) {
            long starts = host.guestStarts();
            assertThatThrownBy(() -> run(TestGuests.scriptGuest(), s)).isInstanceOfSatisfying(ThresherException.class, e -> {
                assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP);
                assertThat(e.getMessage()).isNotBlank();
                assertThat(CellHost.refusedBeforeGuest(e)).isFalse();
            });
            assertThat(host.guestStarts()).isEqualTo(starts + 1);
            assertThat(run(TestGuests.scriptGuest(), new Script().emit("ok", 1)).partials())
                    .containsExactly(new Partial("ok", 1));
        }
    }

    @Test
    void guestReportedFailureCarriesTheMessage() {
        assertThatThrownBy(() -> run(TestGuests.scriptGuest(), new Script().fail("region column missing")))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE);
                    assertThat(e.getMessage()).isEqualTo("region column missing");
                });
        assertCode(() -> run(TestGuests.scriptGuest(), new Script().status(3)), ErrorCode.GUEST_REPORTED_FAILURE);
    }

    /** A loop is stopped by its deadline, not before it (the bound on "not after it" is the test's timeout). */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void infiniteLoopStopsAtTheDeadlineAndTheCellStaysUsable() {
        for (long ms : new long[] {300, 100}) {
            long starts = host.guestStarts();
            Deadline deadline = Deadline.afterMillis(System.nanoTime(), ms);
            assertThatThrownBy(() -> host.run(TestGuests.scriptGuest(), new Script().loopForever().bytes(), "{}", deadline))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED);
                        assertThat(CellHost.refusedBeforeGuest(e)).as("stopped mid-run: the guest ran").isFalse();
                    });
            assertThat(deadline.passed()).as("the loop ran until its deadline").isTrue();
            assertThat(host.guestStarts()).isEqualTo(starts + 1);
        }
        assertThat(run(TestGuests.scriptGuest(), new Script().emit("after", 2)).partials())
                .containsExactly(new Partial("after", 2));
    }

    @Test
    void pastDeadlineNeverStartsTheGuest() {
        run(TestGuests.scriptGuest(), new Script());
        long starts = host.guestStarts();
        assertCode(() -> host.run(TestGuests.scriptGuest(), new Script().emit("x", 1).bytes(), "{}", new Deadline(System.nanoTime() - 1)),
                ErrorCode.DEADLINE_EXCEEDED);
        assertCode(() -> host.reduce(TestGuests.scriptGuest(), new Script().nul().bytes(), "{}", new Deadline(System.nanoTime())),
                ErrorCode.DEADLINE_EXCEEDED);
        // Also for a component that has no cell yet: it is not even instantiated.
        assertCode(() -> host.run(TestGuests.compile(";; fresh\n" + "(module)"), new byte[0], "{}", new Deadline(System.nanoTime() - 1)),
                ErrorCode.DEADLINE_EXCEEDED);
        assertThat(host.guestStarts()).isEqualTo(starts);
        assertThatThrownBy(() -> host.run(TestGuests.scriptGuest(), new Script().bytes(), "{}", new Deadline(System.nanoTime() - 1)))
                .satisfies(e -> assertThat(CellHost.refusedBeforeGuest(e)).isTrue());
    }

    @Test
    void wrongAbiVersionIsAMismatch() {
        assertThatThrownBy(() -> run(TestGuests.scriptGuest(2), new Script())).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.GUEST_ABI_MISMATCH);
            assertThat(e.getMessage()).contains("2");
        });
        assertCode(() -> run(TestGuests.compile("(module (memory (export \"memory\") 1))"), new Script()),
                ErrorCode.GUEST_ABI_MISMATCH);
        assertCode(() -> run(TestGuests.compile("""
                (module (memory (export "memory") 1)
                  (func (export "thresher_abi_version") (result i32) (i32.const 1))
                  (func (export "run") (param i32 i32) (result i32) (i32.const 0)))"""), new Script()),
                ErrorCode.GUEST_ABI_MISMATCH);
        assertCode(() -> run(TestGuests.compile("""
                (module (memory (export "memory") 1)
                  (func (export "thresher_abi_version") (result i32) (i32.const 1))
                  (func (export "run") (param i32) (result i32) (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))"""), new Script()),
                ErrorCode.GUEST_ABI_MISMATCH);
    }

    @Test
    void exportSignaturesAreCheckedBeforeAnyExportIsCalled() {
        try (CellHost fresh = CellHost.create(Limits.DEFAULTS)) {
            for (String exports : List.of(
                    """
                    (func (export "thresher_abi_version") (result i32) (i32.const 1))
                    (func (export "run") (param i32) (result i32) (i32.const 0))
                    (func (export "reduce") (param i32 i32) (result i32) (i32.const 0))""",
                    """
                    (func (export "thresher_abi_version") (result i32) (i32.const 1))
                    (func (export "run") (param i32 i32) (result i32) (i32.const 0))
                    (func (export "reduce") (param i32 i64) (result i32) (i32.const 0))""",
                    """
                    (func (export "thresher_abi_version") (result i32) (i32.const 1))
                    (func (export "run") (param i32 i32) (i32.const 0) (drop))
                    (func (export "reduce") (param i32 i32) (result i32) (i32.const 0))""",
                    """
                    (func (export "thresher_abi_version") (param i32) (result i32) (i32.const 1))
                    (func (export "run") (param i32 i32) (result i32) (i32.const 0))
                    (func (export "reduce") (param i32 i32) (result i32) (i32.const 0))""")) {
                Component c = TestGuests.compile("(module (import \"thresher\" \"fail\" (func (param i32 i32)))"
                        + " (memory (export \"memory\") 1)" + exports + ")");
                assertThatThrownBy(() -> fresh.run(c, new Script().bytes(), "{}", inSeconds(30)))
                        .isInstanceOfSatisfying(ThresherException.class, e -> {
                            assertThat(e.code()).as(exports).isEqualTo(ErrorCode.GUEST_ABI_MISMATCH);
                            assertThat(e.getMessage()).contains("has type");
                        });
            }
            assertThat(fresh.guestStarts()).as("no run or reduce entered guest code").isZero();
            // A start function may not emit.
            Component emitsAtStart = TestGuests.compile("""
                    (module (import "thresher" "emit" (func $emit (param i32 i32 f64) (result i32)))
                      (memory (export "memory") 1) (data (i32.const 0) "k")
                      (func $start (drop (call $emit (i32.const 0) (i32.const 1) (f64.const 1))))
                      (start $start)
                      (func (export "thresher_abi_version") (result i32) (i32.const 1))
                      (func (export "run") (param i32 i32) (result i32) (i32.const 0))
                      (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""");
            assertCode(() -> fresh.run(emitsAtStart, new Script().bytes(), "{}", inSeconds(30)),
                    ErrorCode.GUEST_INVALID_MODULE);
            // A well-formed guest with imports before its functions passes the check.
            assertThat(WasmSignatures.exportedFunctions(TestGuests.scriptGuest().wasm()))
                    .containsEntry("run", WasmSignatures.FuncType.i32s(2, 1))
                    .containsEntry("reduce", WasmSignatures.FuncType.i32s(2, 1))
                    .containsEntry("thresher_abi_version", WasmSignatures.FuncType.i32s(0, 1));
        }
    }

    @Test
    void guestMemoryIsBoundedByTheLimit() {
        // run emits what memory.grow by 100 pages returned: the old size in pages, or -1.
        String growing = """
                (module (import "thresher" "emit" (func $emit (param i32 i32 f64) (result i32)))
                  (memory (export "memory") %s) (data (i32.const 0) "g")
                  (func (export "thresher_abi_version") (result i32) (i32.const 1))
                  (func (export "run") (param i32 i32) (result i32)
                    (drop (call $emit (i32.const 0) (i32.const 1) (f64.convert_i32_s (memory.grow (i32.const 100)))))
                    (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""";
        Limits twoMiB = Limits.fromProperties(Map.of("limits.guestMemoryMaxBytes", Long.toString(2L << 20),
                "limits.batchMaxBytes", Long.toString(1L << 20)));
        try (CellHost small = CellHost.create(twoMiB); CellHost large = CellHost.create(Limits.DEFAULTS)) {
            Component undeclared = TestGuests.compile(growing.formatted("1"));
            assertThat(small.run(undeclared, new Script().bytes(), "{}", inSeconds(30)).partials().get(0).value())
                    .as("101 pages asked, 32 allowed: refused inside the guest").isEqualTo(-1.0);
            assertThat(large.run(undeclared, new Script().bytes(), "{}", inSeconds(30)).partials().get(0).value())
                    .as("under the default cap the same growth succeeds").isEqualTo(1.0);
            Component declaredSmaller = TestGuests.compile(growing.formatted("1 50"));
            assertThat(large.run(declaredSmaller, new Script().bytes(), "{}", inSeconds(30)).partials().get(0).value())
                    .as("a smaller maximum the module declares is kept").isEqualTo(-1.0);
            assertCode(() -> small.run(TestGuests.compile(growing.formatted("200")), new Script().bytes(), "{}", inSeconds(30)),
                    ErrorCode.GUEST_INVALID_MODULE);
            assertCode(() -> small.run(TestGuests.compile("""
                    (module (import "env" "memory" (memory 1))
                      (func (export "thresher_abi_version") (result i32) (i32.const 1)))"""), new Script().bytes(), "{}",
                    inSeconds(30)), ErrorCode.GUEST_INVALID_MODULE);
            assertThat(small.guestStarts()).isEqualTo(1);
        }
    }

    @Test
    void aFailingGuestsOutputComesWithItsFailure() {
        // run writes "checking row 7", NUL, "!", newline to stderr, then traps or fails as told by its data
        String printing = """
                (module
                  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
                  (import "thresher" "fail" (func $fail (param i32 i32)))
                  (memory (export "memory") 1)
                  (data (i32.const 16) "checking row 7\\00!\\n")
                  (data (i32.const 64) "bad\\00row")
                  (func (export "thresher_abi_version") (result i32) (i32.const 1))
                  (func (export "run") (param i32 i32) (result i32)
                    (i32.store (i32.const 0) (i32.const 16))
                    (i32.store (i32.const 4) (i32.const 17))
                    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
                    %s)
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""";
        try (CellHost host = CellHost.create(Limits.DEFAULTS)) {
            assertThatThrownBy(() -> host.run(TestGuests.compile(printing.formatted("unreachable")), new Script().bytes(), "{}",
                    inSeconds(30))).isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_TRAP);
                        assertThat(e.getMessage()).endsWith("\nguest output:\nchecking row 7\uFFFD!");
                    });
            assertThatThrownBy(() -> host.run(TestGuests.compile(printing.formatted(
                    "(call $fail (i32.const 64) (i32.const 7)) (i32.const 1)")), new Script().bytes(), "{}", inSeconds(30)))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE);
                        assertThat(e.getMessage()).isEqualTo("bad\uFFFDrow\nguest output:\nchecking row 7\uFFFD!");
                    });
            // a run that succeeds keeps its output to itself
            assertThat(host.run(TestGuests.compile(printing.formatted("(i32.const 0)")), new Script().bytes(), "{}",
                    inSeconds(30)).partials()).isEmpty();
        }
    }

    @Test
    void guestTablesAreBoundedLikeMemories() {
        // run emits what table.grow by %s elements returned: the old size, or -1
        String growing = """
                (module (import "thresher" "emit" (func $emit (param i32 i32 f64) (result i32)))
                  (memory (export "memory") 1) (data (i32.const 0) "t")
                  (table %s funcref)
                  (func (export "thresher_abi_version") (result i32) (i32.const 1))
                  (func (export "run") (param i32 i32) (result i32)
                    (drop (call $emit (i32.const 0) (i32.const 1)
                      (f64.convert_i32_s (table.grow (ref.null func) (i32.const %d)))))
                    (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""";
        try (CellHost host = CellHost.create(Limits.DEFAULTS)) {
            assertThat(host.run(TestGuests.compile(growing.formatted("1", 99_999)), new Script().bytes(), "{}", inSeconds(30))
                    .partials().get(0).value()).as("to the bound: granted").isEqualTo(1.0);
            assertThat(host.run(TestGuests.compile(growing.formatted("1", 100_000)), new Script().bytes(), "{}", inSeconds(30))
                    .partials().get(0).value()).as("past the bound, with no maximum declared: refused in the guest").isEqualTo(-1.0);
            assertThat(host.run(TestGuests.compile(growing.formatted("1 10", 20)), new Script().bytes(), "{}", inSeconds(30))
                    .partials().get(0).value()).as("a smaller declared maximum is kept").isEqualTo(-1.0);
            assertCode(() -> host.run(TestGuests.compile(growing.formatted("100001", 1)), new Script().bytes(), "{}",
                    inSeconds(30)), ErrorCode.GUEST_INVALID_MODULE);
        }
    }

    @Test
    void anErrorOutOfTheGuestDiscardsTheInstance() {
        java.util.concurrent.atomic.AtomicInteger closedSandboxes = new java.util.concurrent.atomic.AtomicInteger();
        WasmEngine failing = new WasmEngine() {
            @Override
            public String implementationName() {
                return "test engine";
            }

            @Override
            public boolean optimizing() {
                return true;
            }

            @Override
            public WasmSandbox newSandbox(String component, java.io.InputStream in, java.io.OutputStream out, java.io.OutputStream err) {
                return new WasmSandbox() {
                    @Override
                    public void instantiate(String name, byte[] wasm, HostImports imports) { }

                    @Override
                    public boolean hasFunction(String export) {
                        return true;
                    }

                    @Override
                    public boolean hasMemory(String export) {
                        return true;
                    }

                    @Override
                    public int callI32(String export, int... args) {
                        if (export.equals("thresher_abi_version")) {
                            return 1;
                        }
                        throw new StackOverflowError("host stack exhausted");
                    }

                    @Override
                    public long memoryBytes() {
                        return 65_536;
                    }

                    @Override
                    public byte[] readMemory(long address, int length) {
                        return new byte[length];
                    }

                    @Override
                    public void interrupt() { }

                    @Override
                    public void cancel() { }

                    @Override
                    public void close() {
                        closedSandboxes.incrementAndGet();
                    }
                };
            }

            @Override
            public void close() { }
        };
        try (CellHost host = new CellHost(Limits.DEFAULTS, failing)) {
            Component c = TestGuests.scriptGuest();
            assertThatThrownBy(() -> host.run(c, new Script().bytes(), "{}", Deadline.afterMillis(System.nanoTime(), 300)))
                    .isInstanceOf(StackOverflowError.class);
            assertThat(host.liveCells()).as("the instance is discarded").isZero();
            assertThat(closedSandboxes).hasValue(1);
        }
    }

    @Test
    void invalidModulesAndDigestMismatchesAreRefused() {
        byte[] wasm = TestGuests.scriptGuest().wasm();
        assertCode(() -> new Component("sha256:" + "0".repeat(64), wasm), ErrorCode.GUEST_INVALID_MODULE);
        assertCode(() -> new Component("md5:abc", wasm), ErrorCode.GUEST_INVALID_MODULE);
        assertThat(Component.of(wasm).digest()).matches("sha256:[0-9a-f]{64}").isEqualTo(TestGuests.scriptGuest().digest());
        assertCode(() -> run(Component.of(new byte[] {0, 'a', 's', 'm', 1, 0, 0, 0, 9}), new Script()),
                ErrorCode.GUEST_INVALID_MODULE);
        assertCode(() -> run(Component.of("not wasm at all".getBytes()), new Script()), ErrorCode.GUEST_INVALID_MODULE);
        assertCode(() -> run(TestGuests.compile("""
                (module (import "thresher" "no_such_import" (func)) (memory (export "memory") 1))"""), new Script()),
                ErrorCode.GUEST_INVALID_MODULE);
    }

    @Test
    void jsonWriterBuildsTheResult() {
        ReduceOutcome out = reduce(new Script().beginObject()
                .key("eu").beginObject().key("sum").number(12.5).key("count").integer(3).endObject()
                .key("tags").beginArray().string("a\"b\n").string("ü€𝄞").bool(true).bool(false).nul().endArray()
                .key("big").integer(Long.MIN_VALUE).key("tiny").number(5e-324)
                .endObject());
        assertThat(out.resultJson()).isEqualTo(
                "{\"eu\":{\"sum\":12.5,\"count\":3},\"tags\":[\"a\\\"b\\n\",\"ü€𝄞\",true,false,null],"
                        + "\"big\":-9223372036854775808,\"tiny\":4.9E-324}");
        assertThat(reduce(new Script().number(1)).resultJson()).isEqualTo("1.0");
        assertThat(reduce(new Script().beginObject().endObject()).resultJson()).isEqualTo("{}");
        assertThat(reduce(new Script().resultJson(" {\"a\": [1, 2.50]} ")).resultJson()).isEqualTo("{\"a\": [1, 2.50]}");
    }

    @Test
    void jsonWriterMisuseIsAnInvalidResult() {
        List<Script> misuse = new ArrayList<>(List.of(
                new Script(),                                                     // no result at all
                new Script().beginObject(),                                       // unbalanced
                new Script().beginObject().endArray(),                            // mismatched close
                new Script().endObject(),                                         // close at top level
                new Script().key("a"),                                            // key outside an object
                new Script().beginArray().key("a").endArray(),                    // key inside an array
                new Script().beginObject().number(1).endObject(),                 // value without key
                new Script().beginObject().key("a").key("b").endObject(),         // key after key
                new Script().beginObject().key("a").nul().key("a").nul().endObject(), // duplicate key
                new Script().number(1).number(2),                                 // two top-level values
                new Script().beginObject().endObject().beginObject().endObject(), // two top-level values
                new Script().number(Double.NaN),                                  // non-finite
                new Script().number(Double.POSITIVE_INFINITY),                    // non-finite
                new Script().stringBytes(new byte[] {(byte) 0xc3}),               // invalid UTF-8
                new Script().resultJson("{\"a\":"),                               // not JSON
                new Script().resultJson("1 2"),                                   // two values
                new Script().resultJson(""),                                      // empty
                new Script().resultJson("NaN"),                                   // not JSON
                new Script().nul().resultJson("1"),                               // both ways
                new Script().resultJson("1").nul(),                               // both ways
                new Script().emit("k", 1).nul()));                                // emit during reduce
        for (Script s : misuse) {
            assertCode(() -> reduce(s), ErrorCode.GUEST_INVALID_RESULT);
        }
        assertCode(() -> run(TestGuests.scriptGuest(), new Script().beginObject()), ErrorCode.GUEST_INVALID_RESULT);
        assertCode(() -> run(TestGuests.scriptGuest(), new Script().resultJson("1")), ErrorCode.GUEST_INVALID_RESULT);
        // The cell is still fine for well-behaved calls.
        assertThat(reduce(new Script().bool(true)).resultJson()).isEqualTo("true");
    }

    @Test
    void resultLargerThanTheLimitIsRefused() {
        Limits small = Limits.fromProperties(Map.of("limits.resultMaxBytes", "100"));
        try (CellHost smallHost = CellHost.create(small)) {
            Script big = new Script().beginArray();
            for (int i = 0; i < 40; i++) {
                big.integer(i);
            }
            big.endArray();
            assertCode(() -> smallHost.reduce(TestGuests.scriptGuest(), big.bytes(), "{}", inSeconds(30)),
                    ErrorCode.RESULT_TOO_LARGE);
            assertCode(() -> smallHost.reduce(TestGuests.scriptGuest(), new Script().resultJson("\"" + "x".repeat(120) + "\"").bytes(),
                    "{}", inSeconds(30)), ErrorCode.RESULT_TOO_LARGE);
            assertThat(smallHost.reduce(TestGuests.scriptGuest(), new Script().integer(7).bytes(), "{}", inSeconds(30))
                    .resultJson()).isEqualTo("7");
        }
    }

    @Test
    void oneCellPerDigestAndBrokenCellsAreReplaced() {
        try (CellHost fresh = CellHost.create(Limits.DEFAULTS)) {
            Component c = TestGuests.scriptGuest();
            fresh.run(c, new Script().bytes(), "{}", inSeconds(30));
            fresh.run(c, new Script().bytes(), "{}", inSeconds(30));
            assertThat(fresh.liveCells()).isEqualTo(1);
            assertCode(() -> fresh.run(c, new Script().trap().bytes(), "{}", inSeconds(30)), ErrorCode.GUEST_TRAP);
            assertThat(fresh.liveCells()).isZero();
            fresh.run(c, new Script().bytes(), "{}", inSeconds(30));
            assertThat(fresh.liveCells()).isEqualTo(1);
            assertThat(fresh.guestStarts()).isEqualTo(4);
        }
    }

    @Test
    void callersQueueForABusyCellAndGiveUpAtTheirDeadline() throws Exception {
        try (CellHost fresh = CellHost.create(Limits.DEFAULTS)) {
            Component c = TestGuests.scriptGuest();
            fresh.run(c, new Script().bytes(), "{}", inSeconds(30));
            var looping = java.util.concurrent.CompletableFuture.runAsync(() -> fresh.run(c, new Script().loopForever().bytes(),
                    "{}", new Deadline(System.nanoTime() + TimeUnit.SECONDS.toNanos(2))));
            awaitGuestStarts(fresh, 2);
            assertCode(() -> fresh.run(c, new Script().bytes(), "{}", new Deadline(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200))),
                    ErrorCode.DEADLINE_EXCEEDED);
            assertThat(fresh.guestStarts()).isEqualTo(2);
            assertThatThrownBy(looping::join).hasCauseInstanceOf(ThresherException.class)
                    .cause().satisfies(e -> assertThat(((ThresherException) e).code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
            assertThat(fresh.run(c, new Script().emit("next", 1).bytes(), "{}", inSeconds(30)).partials()).hasSize(1);
        }
    }

    @Test
    void reduceHasItsOwnCellAndDoesNotQueueBehindARun() throws Exception {
        try (CellHost fresh = CellHost.create(Limits.DEFAULTS)) {
            Component c = TestGuests.scriptGuest();
            fresh.run(c, new Script().bytes(), "{}", inSeconds(30));
            var looping = new java.util.concurrent.FutureTask<>(() -> fresh.run(c, new Script().loopForever().bytes(),
                    "{}", new Deadline(System.nanoTime() + TimeUnit.SECONDS.toNanos(6))));
            Thread.ofPlatform().daemon().start(looping);
            awaitGuestStarts(fresh, 2);
            // The run cell is busy until its deadline (6 s); a reduce that may wait 4 s at most still runs.
            assertThat(fresh.reduce(c, new Script().integer(7).bytes(), "{}",
                    Deadline.afterMillis(System.nanoTime(), 4_000)).resultJson()).isEqualTo("7");
            assertThat(fresh.liveCells()).isEqualTo(2);
            assertThatThrownBy(() -> looping.get(30, TimeUnit.SECONDS)).cause()
                    .satisfies(e -> assertThat(((ThresherException) e).code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
        }
    }

    @Test
    void onlyTheEngineAdapterImportsGraalVm() throws Exception {
        try (var files = java.nio.file.Files.walk(java.nio.file.Path.of("src/main/java"))) {
            List<String> importing = files.filter(f -> f.toString().endsWith(".java"))
                    .filter(f -> {
                        try {
                            return java.nio.file.Files.readString(f).contains("import org.graalvm");
                        } catch (java.io.IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    })
                    .map(f -> f.getFileName().toString()).toList();
            assertThat(importing).containsExactly("GraalWasmEngine.java");
        }
    }

    @Test
    void procExitIsAGuestReportedFailure() {
        Component exiting = TestGuests.compile("""
                (module
                  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
                  (memory (export "memory") 1)
                  (func (export "thresher_abi_version") (result i32) (i32.const 1))
                  (func (export "run") (param i32 i32) (result i32) (call $exit (i32.const 9)) (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""");
        assertCode(() -> run(exiting, new Script()), ErrorCode.GUEST_REPORTED_FAILURE);
        assertCode(() -> run(exiting, new Script()), ErrorCode.GUEST_REPORTED_FAILURE);
    }
}
