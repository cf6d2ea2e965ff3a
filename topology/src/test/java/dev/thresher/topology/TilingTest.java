package dev.thresher.topology;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TilingTest {
    private static Partition p(int id, int lo, int hi) {
        return new Partition(id, "t", "orders", lo, hi, 1, 1);
    }

    @Test
    void partitionsThatCoverEverySlotOnceTileInAnyOrder() {
        assertThat(Tiling.problem(List.of(p(1, 0, Slots.COUNT - 1)))).isEmpty();
        List<Partition> sixteen = new ArrayList<>();
        for (int i = 15; i >= 0; i--) {
            sixteen.add(p(i, i * 1024, i * 1024 + 1023));
        }
        assertThat(Tiling.problem(sixteen)).isEmpty();
        assertThat(Tiling.problem(List.of(p(1, 0, 0), p(2, 1, Slots.COUNT - 1)))).isEmpty();
    }

    @Test
    void gapsAtTheStartInTheMiddleAndAtTheEndAreNamed() {
        assertThat(Tiling.problem(List.of())).contains("it has no partitions");
        assertThat(Tiling.problem(List.of(p(1, 1, Slots.COUNT - 1)))).contains("slot 0 is in no partition");
        assertThat(Tiling.problem(List.of(p(1, 0, 1023), p(2, 2048, Slots.COUNT - 1))))
                .contains("slots 1024..2047 are in no partition");
        assertThat(Tiling.problem(List.of(p(1, 0, 8191)))).contains("slots 8192..16383 are in no partition");
    }

    @Test
    void overlapsAreNamedWithBothPartitionsAndTheSharedSlots() {
        assertThat(Tiling.problem(List.of(p(1, 0, 2047), p(2, 2000, Slots.COUNT - 1))))
                .contains("partitions 1 and 2 both hold slots 2000..2047");
        assertThat(Tiling.problem(List.of(p(1, 0, Slots.COUNT - 1), p(2, 5, 5))))
                .contains("partitions 1 and 2 both hold slot 5");
    }
}
