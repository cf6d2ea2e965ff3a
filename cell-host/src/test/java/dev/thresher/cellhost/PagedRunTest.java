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
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Guest ABI v2: a partition's batches streamed to one {@code run} through fd 0. */
class PagedRunTest {
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

    /** A stream over the given batches that counts how many the host pulled. */
    private static final class Counting implements RowBatchStream {
        final List<byte[]> batches;
        final AtomicInteger pulled = new AtomicInteger();
        final int failAt;

        Counting(List<byte[]> batches, int failAt) {
            this.batches = batches;
            this.failAt = failAt;
        }

        @Override
        public byte[] next() {
            int i = pulled.getAndIncrement();
            if (i == failAt) {
                throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "shard database went away at batch " + i);
            }
            return i < batches.size() ? batches.get(i) : null;
        }
    }

    private static List<byte[]> randomBatches(long seed, int... sizes) {
        Random r = new Random(seed);
        List<byte[]> out = new ArrayList<>();
        for (int size : sizes) {
            byte[] b = new byte[size];
            r.nextBytes(b);
            out.add(b);
        }
        return out;
    }

    private static int[] sizes(int n, int size) {
        int[] sizes = new int[n];
        java.util.Arrays.fill(sizes, size);
        return sizes;
    }

    private static List<Partial> expected(List<byte[]> batches) {
        List<Partial> out = new ArrayList<>();
        for (byte[] b : batches) {
            long sum = 0;
            for (byte x : b) {
                sum += x & 0xff;
            }
            out.add(new Partial("len", b.length));
            out.add(new Partial("sum", sum));
        }
        out.add(new Partial("frames", batches.size()));
        return out;
    }

    @Test
    void theVersionIsReadFromRunsTypeWithoutRunningTheGuest() {
        assertThat(host.abiVersion(TestGuests.pagedGuest(2))).isEqualTo(2);
        assertThat(host.abiVersion(TestGuests.scriptGuest())).isEqualTo(1);
    }

    @Test
    void everyBatchArrivesWholeAndInOrderWithinOneInvocation() {
        List<byte[]> batches = randomBatches(7, 48, 4099, 200_000, 8);
        Counting stream = new Counting(batches, -1);
        long startsBefore = host.guestStarts();
        RunOutcome out = host.run(TestGuests.pagedGuest(2), stream, "{}", inSeconds(30));
        assertThat(out.partials()).containsExactlyElementsOf(expected(batches));
        assertThat(host.guestStarts() - startsBefore).isEqualTo(1);
        assertThat(stream.pulled.get()).isEqualTo(batches.size() + 1); // the last pull found the end
    }

    @Test
    void noBatchesIsJustTheEndFrame() {
        assertThat(host.run(TestGuests.pagedGuest(2), RowBatchStream.of(), "{}", inSeconds(30)).partials())
                .containsExactly(new Partial("frames", 0));
    }

    @Test
    void aBatchIsPulledOnlyWhenTheGuestReadsOnSoAGuestThatStopsEarlyLeavesTheRestUnread() {
        Counting stream = new Counting(randomBatches(3, 64, 64, 64, 64), -1);
        RunOutcome out = host.run(TestGuests.pagedGuest(2), stream, "1", inSeconds(30));
        assertThat(out.partials()).hasSize(3);
        assertThat(stream.pulled.get()).isEqualTo(1);
        // and the next invocation on the same cell starts from its own input, not the leftovers
        List<byte[]> next = randomBatches(4, 16);
        assertThat(host.run(TestGuests.pagedGuest(2), RowBatchStream.of(next.get(0)), "{}", inSeconds(30)).partials())
                .containsExactlyElementsOf(expected(next));
    }

    @Test
    void theEmitBoundHoldsForTheWholeInvocationNotPerBatch() {
        // two emits per batch: 32 batches make 64 emits and the end's 65th
        List<byte[]> batches = randomBatches(5, sizes(32, 8));
        assertThatThrownBy(() -> host.run(TestGuests.pagedGuest(2), RowBatchStream.of(batches.toArray(byte[][]::new)), "{}",
                inSeconds(30)))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.EMIT_LIMIT_EXCEEDED));
        List<byte[]> fewer = randomBatches(5, sizes(31, 8));
        assertThat(host.run(TestGuests.pagedGuest(2), RowBatchStream.of(fewer.toArray(byte[][]::new)), "{}", inSeconds(30))
                .partials()).hasSize(63);
    }

    @Test
    void aBatchThatCannotBeReadIsTheRunsOutcomeWhateverTheGuestDoesThen() {
        // the guest traps on input that ends early; the host reports why it ended
        Counting stream = new Counting(randomBatches(9, 32, 32, 32), 1);
        assertThatThrownBy(() -> host.run(TestGuests.pagedGuest(2), stream, "{}", inSeconds(30)))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.STORE_UNAVAILABLE);
                    assertThat(e.getMessage()).contains("at batch 1");
                    assertThat(CellHost.refusedBeforeGuest(e)).isFalse();
                });
        assertThat(stream.pulled.get()).isEqualTo(2);
    }

    @Test
    void anEmptyBatchWouldReadAsTheEndFrameAndIsRefused() {
        assertThatThrownBy(() -> host.run(TestGuests.pagedGuest(2), RowBatchStream.of(new byte[8], new byte[0]), "{}",
                inSeconds(30))).isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL_ERROR);
                    assertThat(e).hasRootCauseInstanceOf(IllegalArgumentException.class);
                });
    }

    @Test
    void aSingleBatchRunOfAV2GuestIsAStreamOfOne() {
        List<byte[]> one = randomBatches(11, 100);
        assertThat(host.run(TestGuests.pagedGuest(2), one.get(0), "{}", inSeconds(30)).partials())
                .containsExactlyElementsOf(expected(one));
    }

    @Test
    void aV1GuestTakesExactlyOneBatchFromAStream() {
        byte[] script = new Script().emit("k", 1).bytes();
        assertThat(host.run(TestGuests.scriptGuest(), RowBatchStream.of(script), "{}", inSeconds(30)).partials())
                .containsExactly(new Partial("k", 1));
        assertThatThrownBy(() -> host.run(TestGuests.scriptGuest(), RowBatchStream.of(script, script), "{}", inSeconds(30)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void runMustBeTypedForTheVersionTheGuestStates() {
        // a v2 run saying it speaks v1, a v1 run saying v2, and a version nobody speaks
        for (Component c : List.of(TestGuests.pagedGuest(1), TestGuests.scriptGuest(2), TestGuests.pagedGuest(3))) {
            assertThatThrownBy(() -> host.run(c, RowBatchStream.of(new byte[8]), "{}", inSeconds(30)))
                    .isInstanceOfSatisfying(ThresherException.class,
                            e -> assertThat(e.code()).isEqualTo(ErrorCode.GUEST_ABI_MISMATCH));
        }
    }
}
