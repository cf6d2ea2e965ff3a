package dev.thresher.topology;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class SlotsTest {
    @Test
    void fnv1a64MatchesThePublishedVectors() {
        assertThat(Slots.fnv1a64(new byte[0])).isEqualTo(0xcbf29ce484222325L);
        assertThat(Slots.fnv1a64("a".getBytes(StandardCharsets.US_ASCII))).isEqualTo(0xaf63dc4c8601ec8cL);
        assertThat(Slots.fnv1a64("foobar".getBytes(StandardCharsets.US_ASCII))).isEqualTo(0x85944171f73967e8L);
    }

    @Test
    void splitMix64FinalizerMatchesTheReferenceGenerator() {
        // SplitMix64 seeded with 0 returns mix(0 + golden gamma) first.
        assertThat(Slots.splitMix64(0x9e3779b97f4a7c15L)).isEqualTo(0xe220a8397b1dcdafL);
    }

    /** Golden vectors: only ever added to. A change here re-homes every key of every cluster. */
    @Test
    void goldenVectors() {
        assertThat(Slots.ofLong(1)).isEqualTo(Slots.ofBytes(new byte[] {0, 0, 0, 0, 0, 0, 0, 1}));
        assertThat(Slots.ofLong(1)).isEqualTo(GOLDEN_LONG_1);
        assertThat(Slots.ofLong(-1)).isEqualTo(GOLDEN_LONG_MINUS_1);
        assertThat(Slots.ofLong(42)).isEqualTo(GOLDEN_LONG_42);
        assertThat(Slots.ofText("")).isEqualTo(GOLDEN_TEXT_EMPTY);
        assertThat(Slots.ofText("thresher")).isEqualTo(GOLDEN_TEXT_THRESHER);
        assertThat(Slots.ofText("Zürich")).isEqualTo(GOLDEN_TEXT_ZURICH);
        assertThat(Slots.ofUuid(new UUID(0x0123456789abcdefL, 0xfedcba9876543210L))).isEqualTo(GOLDEN_UUID);
    }

    @Test
    void slotsAreInRangeAndSpreadEvenly() {
        int[] perPartition = new int[16];
        for (long k = 1; k <= 160_000; k++) {
            int s = Slots.ofLong(k);
            assertThat(s).isBetween(0, Slots.COUNT - 1);
            perPartition[s / 1024]++;
        }
        for (int n : perPartition) {
            assertThat(n).isBetween(9_000, 11_000);
        }
    }

    // Cross-checked against an independent implementation of the brief's definition.
    static final int GOLDEN_LONG_1 = 297;
    static final int GOLDEN_LONG_MINUS_1 = 11477;
    static final int GOLDEN_LONG_42 = 14556;
    static final int GOLDEN_TEXT_EMPTY = 10395;
    static final int GOLDEN_TEXT_THRESHER = 12989;
    static final int GOLDEN_TEXT_ZURICH = 14941;
    static final int GOLDEN_UUID = 8633;
}
