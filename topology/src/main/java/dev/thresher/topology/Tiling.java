package dev.thresher.topology;

import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Whether a table's partitions tile the slot space: every one of the {@value Slots#COUNT} slots in
 * exactly one partition. A gap would leave the rows of its slots out of every answer; an overlap
 * would count them twice. Both are refused: when partitions are written, and by a call over a table
 * whose partitions do not tile.
 */
public final class Tiling {
    private Tiling() {}

    /**
     * The first problem, in slot order, or empty when the partitions tile: a gap ("slots 1024..2047
     * are in no partition") or an overlap ("partitions 3 and 4 both hold slots 2000..2047").
     */
    public static Optional<String> problem(List<Partition> partitions) {
        if (partitions.isEmpty()) {
            return Optional.of("it has no partitions");
        }
        List<Partition> sorted = partitions.stream().sorted(Comparator.comparingInt(Partition::slotLo)
                .thenComparingInt(Partition::slotHi)).toList();
        int next = 0;
        Partition previous = null;
        for (Partition p : sorted) {
            if (p.slotLo() > next) {
                return Optional.of(range(next, p.slotLo() - 1) + " in no partition");
            }
            if (p.slotLo() < next) {
                int hi = Math.min(next - 1, p.slotHi());
                return Optional.of("partitions " + previous.id() + " and " + p.id() + " both hold "
                        + (p.slotLo() == hi ? "slot " + hi : "slots " + p.slotLo() + ".." + hi));
            }
            next = p.slotHi() + 1;
            previous = p;
        }
        if (next < Slots.COUNT) {
            return Optional.of(range(next, Slots.COUNT - 1) + " in no partition");
        }
        return Optional.empty();
    }

    private static String range(int lo, int hi) {
        return lo == hi ? "slot " + lo + " is" : "slots " + lo + ".." + hi + " are";
    }
}
