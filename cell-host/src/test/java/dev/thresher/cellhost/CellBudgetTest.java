package dev.thresher.cellhost;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.dylibso.chicory.wabt.Wat2Wasm;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The node's guest memory budget: cells reserve their memory maximum, idle cells are evicted least
 * recently used first to admit a new one, and a cell that cannot be admitted is refused typed and
 * retryable before any guest code; twenty components of the largest memory called in turn never
 * exhaust the node.
 */
class CellBudgetTest {
    private static final long MIB = 1L << 20;

    /** A v2 guest whose memory maximum is {@code pages} and whose id tells components apart. */
    private static Component guest(int id, int pages, boolean spin) {
        return Component.of(Wat2Wasm.parse("""
                (module
                  (memory (export "memory") 1 %d)
                  (global $id i32 (i32.const %d))
                  (func (export "thresher_abi_version") (result i32) (i32.const 2))
                  (func (export "run") (param i32) (result i32) %s (i32.const 0))
                  (func (export "reduce") (param i32 i32) (result i32) (i32.const 0)))"""
                .formatted(pages, id, spin ? "(loop $l (br $l))" : "")));
    }

    private static Limits limits(long budgetBytes) {
        Map<String, String> p = new HashMap<>();
        p.put("limits.guestMemoryMaxBytes", Long.toString(64 * MIB));
        p.put("limits.guestMemoryBudgetBytes", Long.toString(budgetBytes));
        return Limits.fromProperties(p);
    }

    private static Deadline seconds(long s) {
        return Deadline.afterMillis(System.nanoTime(), TimeUnit.SECONDS.toMillis(s));
    }

    @Test
    void twentyComponentsOfTheLargestMemoryCalledInTurnEvictTheLeastRecentlyUsed() {
        GraalWasmEngine engine = new GraalWasmEngine();
        try (CellHost host = new CellHost(limits(256 * MIB), engine)) {
            for (int i = 0; i < 20; i++) {
                host.run(guest(i, 1024, false), RowBatchStream.of(new byte[8]), "{}", seconds(30)); // 64 MiB each
                assertThat(host.reservedBytes()).isLessThanOrEqualTo(256 * MIB);
            }
            assertThat(host.liveCells()).isEqualTo(4);
            assertThat(host.evictions()).isEqualTo(16);
            assertThat(engine.engines()).as("an evicted component's compiled code goes with its cell").isEqualTo(4);
            // a guest declaring no maximum reserves the cap; one declaring a small maximum, only that
            host.run(guest(100, 16, false), RowBatchStream.of(new byte[8]), "{}", seconds(30));
            assertThat(host.reservedBytes()).isEqualTo(3 * 64 * MIB + MIB);
        }
    }

    @Test
    void aDemandLeasePinsACellAgainstEvictionUntilItIsClosedOrLapses() {
        Map<String, String> p = new HashMap<>();
        p.put("limits.guestMemoryMaxBytes", Long.toString(64 * MIB));
        p.put("limits.guestMemoryBudgetBytes", Long.toString(128 * MIB));
        p.put("limits.activationLeaseMs", "60000");
        try (CellHost host = CellHost.create(Limits.fromProperties(p))) {
            Component a = guest(1, 1024, false);
            Component b = guest(2, 1024, false);
            Component c = guest(3, 1024, false);
            CellHost.Demand demand = host.demand(a.digest());
            host.run(a, RowBatchStream.of(new byte[8]), "{}", seconds(30));
            host.run(b, RowBatchStream.of(new byte[8]), "{}", seconds(30));
            // a is the least recently used, but pinned: b makes room for c
            host.run(c, RowBatchStream.of(new byte[8]), "{}", seconds(30));
            assertThat(host.evictions()).isEqualTo(1);
            long starts = host.instantiations();
            host.run(a, RowBatchStream.of(new byte[8]), "{}", seconds(30));
            assertThat(host.instantiations()).as("a kept its activation").isEqualTo(starts);
            // with a and c live and a pinned, c is the only one to make room; pinning c too leaves none
            CellHost.Demand demandC = host.demand(c.digest());
            assertThatThrownBy(() -> host.run(b, RowBatchStream.of(new byte[8]), "{}", seconds(30)))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.CELL_UNAVAILABLE);
                        assertThat(e.getMessage()).contains("pinned by calls in flight");
                    });
            demand.close();
            demand.close(); // once
            host.run(b, RowBatchStream.of(new byte[8]), "{}", seconds(30));
            assertThat(host.instantiations()).isEqualTo(starts + 1);
            demandC.close();
        }
    }

    @Test
    void aDemandLeaseLapsesAfterTheActivationLease() throws Exception {
        Map<String, String> p = new HashMap<>();
        p.put("limits.guestMemoryMaxBytes", Long.toString(64 * MIB));
        p.put("limits.guestMemoryBudgetBytes", Long.toString(64 * MIB));
        p.put("limits.activationLeaseMs", "1");
        try (CellHost host = CellHost.create(Limits.fromProperties(p))) {
            Component a = guest(1, 1024, false);
            CellHost.Demand never = host.demand(a.digest()); // never closed: its holder died, say
            host.run(a, RowBatchStream.of(new byte[8]), "{}", seconds(30));
            Thread.sleep(5); // past the 1 ms lease, so the pin no longer holds
            host.run(guest(2, 1024, false), RowBatchStream.of(new byte[8]), "{}", seconds(30));
            assertThat(host.evictions()).isGreaterThanOrEqualTo(1);
            never.close();
        }
    }

    @Test
    void aCellThatCannotBeAdmittedBecauseEveryCellIsBusyIsRefusedRetryablyBeforeItsGuest() throws Exception {
        try (CellHost host = CellHost.create(limits(64 * MIB))) {
            CountDownLatch running = new CountDownLatch(1);
            CompletableFuture<?> spinner = CompletableFuture.runAsync(() -> {
                running.countDown();
                assertThatThrownBy(() -> host.run(guest(1, 1024, true), RowBatchStream.of(new byte[8]), "{}",
                        Deadline.afterMillis(System.nanoTime(), 2_000)))
                        .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.DEADLINE_EXCEEDED));
            });
            assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (host.guestStarts() < 1) {
                assertThat(System.nanoTime()).isLessThan(until);
                Thread.sleep(1);
            }
            long starts = host.guestStarts();
            assertThatThrownBy(() -> host.run(guest(2, 1024, false), RowBatchStream.of(new byte[8]), "{}", seconds(30)))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.CELL_UNAVAILABLE);
                        assertThat(e.getMessage()).contains("guest memory budget is full");
                        assertThat(CellHost.refusedBeforeGuest(e)).isTrue();
                    });
            assertThat(host.guestStarts()).isEqualTo(starts);
            spinner.get(30, TimeUnit.SECONDS);
            // once the spinner's cell is free (discarded at its deadline), the other component gets in
            host.run(guest(2, 1024, false), RowBatchStream.of(new byte[8]), "{}", seconds(30));
        }
    }
}
