package dev.thresher.cellhost;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.dylibso.chicory.wabt.Wat2Wasm;
import dev.thresher.bindings.abi.HttpRequestCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** HTTP handlers in cells: the request on fd 0, the response imports, nested calls and their bounds (guest-abi.md §8). */
class HandlerCellTest {
    private static CellHost host;
    private static final Component HANDLER = Component.of(Wat2Wasm.parse(resource("script_handler.wat")));

    @BeforeAll
    static void start() {
        host = CellHost.create(Limits.DEFAULTS);
    }

    @AfterAll
    static void stop() {
        host.close();
    }

    private static String resource(String name) {
        try (InputStream in = HandlerCellTest.class.getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Deadline inMillis(long ms) {
        return Deadline.afterMillis(System.nanoTime(), ms);
    }

    /** The script handler's ops, as the body of a request. */
    static final class Ops {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        private Ops op(char c) {
            out.write(c);
            return this;
        }

        private Ops u32(int v) {
            out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
            return this;
        }

        private Ops str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            return u32(b.length).bytes(b);
        }

        private Ops bytes(byte[] b) {
            out.writeBytes(b);
            return this;
        }

        Ops status(int s) {
            return op('S').u32(s);
        }

        Ops header(String name, String value) {
            return op('H').str(name).str(value);
        }

        Ops body(String s) {
            return op('B').str(s);
        }

        Ops echo() {
            return op('E');
        }

        Ops call(String descriptor, String args) {
            return op('C').str(descriptor).str(args);
        }

        Ops returnLastCode() {
            return op('X');
        }

        Ops returns(int v) {
            return op('R').u32(v);
        }

        Ops fail(String message) {
            return op('F').str(message);
        }

        Ops writeMemory(int n) {
            return op('W').u32(n);
        }

        Ops trap() {
            return op('T');
        }

        Ops loopForever() {
            return op('L');
        }

        byte[] request() {
            return HttpRequestCodec.encode(new HttpRequestCodec.Request(0, "POST", "/run", "/run", List.of(), List.of(),
                    List.of(), out.toByteArray()));
        }
    }

    /** A nested-call stand-in: records what it was asked, answers what the test says. */
    static final class FakeCalls implements NestedCalls {
        final List<String> calls = new CopyOnWriteArrayList<>();
        final List<ThresherException> refusals = new CopyOnWriteArrayList<>();
        volatile java.util.function.BiFunction<String, Deadline, Outcome> answer =
                (args, d) -> new Outcome(0, "{\"ok\":true}".getBytes(StandardCharsets.UTF_8), null);

        @Override
        public Outcome call(String descriptor, String argumentsJson, Deadline deadline) {
            calls.add(descriptor + " " + argumentsJson);
            return answer.apply(argumentsJson, deadline);
        }

        @Override
        public Outcome refused(ThresherException failure) {
            refusals.add(failure);
            return new Outcome(failure.code().code(), ("refused " + failure.code().name()).getBytes(StandardCharsets.UTF_8),
                    failure);
        }

        static Outcome failed(ThresherException e) {
            return new Outcome(e.code().code(), ("failed " + e.code().name()).getBytes(StandardCharsets.UTF_8), e);
        }
    }

    private static HandlerOutcome handle(Ops ops, NestedCalls calls) {
        return host.handle(HANDLER, ops.request(), inMillis(30_000), calls);
    }

    private static void assertCode(ThrowingCallable call, ErrorCode code) {
        assertThatThrownBy(call).isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(code));
    }

    /** The body of a response whose script made calls: per call, its u32 code then its outcome bytes. */
    private static int code(byte[] body, int at) {
        return ByteBuffer.wrap(body, at, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }

    @Test
    void theGuestReadsItsRequestAndBuildsItsResponse() {
        Ops ops = new Ops().status(201).header("Content-Type", "text/plain").header("X-Thing", "a b\tc").body("hello ")
                .body("world");
        HandlerOutcome o = handle(ops, new FakeCalls());
        assertThat(o.status()).isEqualTo(201);
        assertThat(o.headers()).containsExactly(Map.entry("content-type", "text/plain"), Map.entry("x-thing", "a b\tc"));
        assertThat(new String(o.body(), StandardCharsets.UTF_8)).isEqualTo("hello world");
        assertThat(o.nestedCalls()).isZero();
        Ops echo = new Ops().echo();
        assertThat(handle(echo, new FakeCalls()).body()).as("fd 0 yields the request exactly").isEqualTo(echo.request());
        assertThat(handle(new Ops(), new FakeCalls()).status()).as("200 unless set").isEqualTo(200);
    }

    @Test
    void aNestedCallsOutcomeIsReadFromFdZeroAfterItAndASecondCallIsRefusedTyped() {
        FakeCalls calls = new FakeCalls();
        HandlerOutcome o = handle(new Ops().call("revenue_by_region", "{\"a\":1}").call("revenue_by_region", "{}"), calls);
        assertThat(calls.calls).containsExactly("revenue_by_region {\"a\":1}");
        byte[] ok = "{\"ok\":true}".getBytes(StandardCharsets.UTF_8);
        assertThat(code(o.body(), 0)).isZero();
        assertThat(Arrays.copyOfRange(o.body(), 4, 4 + ok.length)).isEqualTo(ok);
        assertThat(code(o.body(), 4 + ok.length)).isEqualTo(ErrorCode.NESTED_CALL_LIMIT_EXCEEDED.code());
        assertThat(new String(o.body(), 8 + ok.length, o.body().length - 8 - ok.length, StandardCharsets.UTF_8))
                .isEqualTo("refused NESTED_CALL_LIMIT_EXCEEDED");
        assertThat(calls.refusals).singleElement().satisfies(e -> assertThat(e.getMessage())
                .contains("limits.nestedCallsPerRequest"));
        assertThat(o.nestedCalls()).isEqualTo(2);

        // the limit is a limit: two are allowed where it says two
        Limits two = Limits.fromProperties(Map.of("limits.nestedCallsPerRequest", "2"));
        try (CellHost h = CellHost.create(two)) {
            FakeCalls c2 = new FakeCalls();
            h.handle(HANDLER, new Ops().call("a", "{}").call("b", "{}").call("c", "{}").request(), inMillis(30_000), c2);
            assertThat(c2.calls).containsExactly("a {}", "b {}");
            assertThat(c2.refusals).extracting(ThresherException::code).containsExactly(ErrorCode.NESTED_CALL_LIMIT_EXCEEDED);
        }
    }

    @Test
    void returningTheCallsCodePassesItsFailureThroughAndAnyOtherStatusIsTheGuests() {
        FakeCalls calls = new FakeCalls();
        calls.answer = (args, d) -> FakeCalls.failed(new ThresherException(ErrorCode.TARGET_STALE, "moved"));
        assertThatThrownBy(() -> handle(new Ops().call("x", "{}").returnLastCode(), calls))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.TARGET_STALE);
                    assertThat(e.getMessage()).isEqualTo("moved");
                    assertThat(e.guestCodeRan()).isTrue();
                });
        assertThatThrownBy(() -> handle(new Ops().call("x", "{}").fail("not that").returns(5), calls))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.GUEST_REPORTED_FAILURE);
                    assertThat(e.getMessage()).isEqualTo("not that");
                });
        assertThatThrownBy(() -> handle(new Ops().returns(7), calls)).hasMessage("guest handle returned status 7");
    }

    @Test
    void badCallsAreRefusedWithoutBeingMade() {
        FakeCalls calls = new FakeCalls();
        HandlerOutcome empty = handle(new Ops().call("", "{}"), calls);
        assertThat(code(empty.body(), 0)).isEqualTo(ErrorCode.INVALID_ARGUMENTS.code());
        Limits small = Limits.fromProperties(Map.of("limits.directCallPayloadBytes", "10"));
        try (CellHost h = CellHost.create(small)) {
            HandlerOutcome big = h.handle(HANDLER, new Ops().call("x", "{\"a\": 12345678}").request(), inMillis(30_000), calls);
            assertThat(code(big.body(), 0)).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE.code());
        }
        assertThat(calls.calls).isEmpty();
    }

    @Test
    void theResponseIsCheckedAsTheGuestBuildsIt() {
        assertCode(() -> handle(new Ops().status(99), new FakeCalls()), ErrorCode.GUEST_INVALID_RESULT);
        assertCode(() -> handle(new Ops().status(600), new FakeCalls()), ErrorCode.GUEST_INVALID_RESULT);
        assertCode(() -> handle(new Ops().header("Content-Length", "5"), new FakeCalls()), ErrorCode.GUEST_INVALID_RESULT);
        assertCode(() -> handle(new Ops().header("bad name", "x"), new FakeCalls()), ErrorCode.GUEST_INVALID_RESULT);
        assertCode(() -> handle(new Ops().header("x-a", "line\r\nx-b: y"), new FakeCalls()), ErrorCode.GUEST_INVALID_RESULT);
        Ops many = new Ops();
        for (int i = 0; i < 33; i++) {
            many.header("x-h" + i, "v");
        }
        assertCode(() -> handle(many, new FakeCalls()), ErrorCode.GUEST_INVALID_RESULT);
        Limits small = Limits.fromProperties(Map.of("limits.httpResponseMaxBytes", "1000"));
        try (CellHost h = CellHost.create(small)) {
            assertThat(h.handle(HANDLER, new Ops().writeMemory(1000).request(), inMillis(30_000), new FakeCalls()).body())
                    .hasSize(1000);
            assertCode(() -> h.handle(HANDLER, new Ops().writeMemory(600).writeMemory(401).request(), inMillis(30_000),
                    new FakeCalls()), ErrorCode.RESULT_TOO_LARGE);
        }
        assertCode(() -> handle(new Ops().writeMemory(5 << 20), new FakeCalls()), ErrorCode.RESULT_TOO_LARGE);
    }

    @Test
    void trapsAndTheDeadlineEndTheInvocationTypedAndTheNextOneRuns() {
        assertCode(() -> handle(new Ops().trap(), new FakeCalls()), ErrorCode.GUEST_TRAP);
        long t0 = System.nanoTime();
        assertCode(() -> host.handle(HANDLER, new Ops().loopForever().request(), inMillis(300), new FakeCalls()),
                ErrorCode.DEADLINE_EXCEEDED);
        assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(5_000);
        assertThat(handle(new Ops().body("again"), new FakeCalls()).body()).isEqualTo("again".getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void theNestedCallIsGivenTheRequestsDeadlineAndItsWaitIsNotGuestTime() {
        handle(new Ops(), new FakeCalls()); // an instantiated cell: the deadline below is the call's to use
        FakeCalls calls = new FakeCalls();
        List<Long> given = new ArrayList<>();
        calls.answer = (args, d) -> {
            given.add(d.remainingMillis());
            long wait = d.remainingNanos();
            try {
                Thread.sleep(TimeUnit.NANOSECONDS.toMillis(Math.max(0, wait)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return FakeCalls.failed(new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the nested call ran out of time"));
        };
        long t0 = System.nanoTime();
        assertCode(() -> host.handle(HANDLER, new Ops().call("slow", "{}").returnLastCode().request(), inMillis(2_000), calls),
                ErrorCode.DEADLINE_EXCEEDED);
        assertThat(given).singleElement().satisfies(ms -> assertThat(ms).isBetween(1_000L, 2_000L));
        assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(5_000);

        FakeCalls quick = new FakeCalls();
        quick.answer = (args, d) -> {
            try {
                Thread.sleep(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return new NestedCalls.Outcome(0, "1".getBytes(StandardCharsets.UTF_8), null);
        };
        HandlerOutcome o = handle(new Ops().call("x", "{}"), quick);
        assertThat(TimeUnit.NANOSECONDS.toMillis(o.guestNanos())).as("the wait is the call's, not the guest's").isLessThan(900);
    }

    @Test
    void aHandlerWaitingForItsNestedCallHoldsOneCellAndOthersRunBesideIt() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        FakeCalls held = new FakeCalls();
        held.answer = (args, d) -> {
            entered.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return new NestedCalls.Outcome(0, "{}".getBytes(StandardCharsets.UTF_8), null);
        };
        CompletableFuture<HandlerOutcome> first = CompletableFuture.supplyAsync(() -> handle(new Ops().call("x", "{}"), held));
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
        long starts = host.guestStarts();
        for (int i = 0; i < 3; i++) {
            assertThat(handle(new Ops().body("beside"), new FakeCalls()).body()).isEqualTo("beside".getBytes(StandardCharsets.UTF_8));
        }
        assertThat(host.guestStarts()).isEqualTo(starts + 3);
        assertThat(first).isNotDone();
        release.countDown();
        assertThat(code(first.get(30, TimeUnit.SECONDS).body(), 0)).isZero();
    }

    @Test
    void aHandlerModuleIsHeldToTheHandlerAbi() {
        String exports = """
                (memory (export "memory") 1 1)
                (func (export "thresher_handler_abi_version") (result i32) (i32.const %d))
                (func (export "handle") (param i32) (result i32) (i32.const 0))""";
        Component emits = Component.of(Wat2Wasm.parse("(module (import \"thresher\" \"emit\" (func (param i32 i32 f64)"
                + " (result i32))) " + exports.formatted(1) + ")"));
        assertThatThrownBy(() -> host.handle(emits, new Ops().request(), inMillis(30_000), new FakeCalls()))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.GUEST_INVALID_MODULE);
                    assertThat(e.getMessage()).contains("import thresher.emit: not a function the host provides to an HTTP"
                            + " handler");
                });
        Component version2 = Component.of(Wat2Wasm.parse("(module " + exports.formatted(2) + ")"));
        assertCode(() -> host.handle(version2, new Ops().request(), inMillis(30_000), new FakeCalls()),
                ErrorCode.GUEST_ABI_MISMATCH);
        // a run-and-reduce component is no handler: its imports are not a handler's
        assertCode(() -> host.handle(TestGuests.scriptGuest(), new Ops().request(), inMillis(30_000), new FakeCalls()),
                ErrorCode.GUEST_INVALID_MODULE);
        assertThat(GuestModuleCheck.checkHandler(emits.wasm(), 256L << 20).imports()).containsExactly(
                "import thresher.emit: not a function the host provides to an HTTP handler (only run and reduce import it)");
        assertThat(GuestModuleCheck.checkHandler(HANDLER.wasm(), 256L << 20).all()).isEmpty();
        assertThat(GuestModuleCheck.checkHandler(TestGuests.scriptGuest().wasm(), 256L << 20).exports()).containsExactly(
                "export thresher_handler_abi_version: missing; the HTTP handler ABI needs it with type () -> (i32)",
                "export handle: missing; the HTTP handler ABI needs it with type (i32) -> (i32)");
        // and run and reduce may not make calls
        byte[] calling = Wat2Wasm.parse("""
                (module
                  (import "thresher" "call" (func (param i32 i32 i32 i32) (result i32)))
                  (memory (export "memory") 1)
                  (func (export "thresher_abi_version") (result i32) (i32.const 2))
                  (func (export "run") (param i32) (result i32) (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))""");
        assertThat(GuestModuleCheck.problems(calling, 2, 256L << 20)).containsExactly(
                "import thresher.call: not a function the host provides to run and reduce (only an HTTP handler imports it)");
    }
}
