package dev.thresher.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ShardRunRow;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class ShardRunValidatorTest {
    private static final CallPlan PLAN = CallPlanner.plan(UUID.fromString("00000000-0000-0000-0000-000000000002"),
            Plans.BINDING, Plans.topology(3), Limits.DEFAULTS);

    private static ShardRunRow slot(int slot, List<Partial> partials) {
        return slot(slot, partials.size(), partials);
    }

    private static ShardRunRow slot(int slot, int emits, List<Partial> partials) {
        ShardTarget t = PLAN.targets().get(slot);
        long epoch = t.partition().epoch();
        return new ShardRunRow(slot, t.partition().id(), epoch, t.wireId(), t.leader().hostId(), 10, emits, partials.size(),
                PartialsCodec.encode(partials), true, epoch);
    }

    private static ShardRunRow with(ShardRunRow r, long epoch, long currentEpoch, boolean live, String wireId) {
        return new ShardRunRow(r.runIndex(), r.partitionId(), epoch, wireId, r.hostId(), r.rowCount(), r.emitCount(),
                r.entryCount(), r.partials(), live, currentEpoch);
    }

    private static List<ShardRunRow> complete() {
        List<ShardRunRow> m = new ArrayList<>();
        m.add(slot(2, List.of(new Partial("p2/b", 2), new Partial("p2/a", 1))));
        m.add(slot(0, List.of(new Partial("p0/z", 3))));
        m.add(slot(1, List.of()));
        return m;
    }

    private static List<ShardRunRow> replace(int index, ShardRunRow row) {
        List<ShardRunRow> m = new ArrayList<>(complete().stream().filter(r -> r.runIndex() != index).toList());
        m.add(row);
        return m;
    }

    @Test
    void completeDisjointSlotsMergeSortedByKeyWhateverTheirOrder() {
        assertThat(ShardRunValidator.validate(PLAN.targets(), complete(), Limits.DEFAULTS)).extracting(Partial::key)
                .containsExactly("p0/z", "p2/a", "p2/b");
        assertThat(ShardRunValidator.validate(PLAN.targets(), complete().reversed(), Limits.DEFAULTS))
                .isEqualTo(ShardRunValidator.validate(PLAN.targets(), complete(), Limits.DEFAULTS));
    }

    @Test
    void eachViolationHasItsOwnCode() {
        ShardRunRow one = slot(1, List.of());
        long epoch = one.epoch();
        assertCode(complete().stream().filter(r -> r.runIndex() != 1).toList(), ErrorCode.SLOT_MISSING);
        assertCode(replace(1, with(one, epoch, epoch, false, one.wireId())), ErrorCode.SLOT_EXPIRED);
        assertCode(replace(1, with(one, epoch - 1, epoch - 1, true, one.wireId())), ErrorCode.TARGET_STALE);
        assertCode(replace(1, with(one, epoch, epoch + 1, true, one.wireId())), ErrorCode.SLOT_STALE);
        assertCode(replace(1, with(one, epoch, epoch, true, "another/wire")), ErrorCode.SLOT_STALE);
        assertCode(replace(1, slot(1, 65, List.of())), ErrorCode.EMIT_LIMIT_EXCEEDED);
        assertCode(replace(1, slot(1, List.of(new Partial("p1/x", Double.NaN)))), ErrorCode.PARTIAL_NON_NUMERIC);
        assertCode(replace(1, slot(1, List.of(new Partial("p1/x", Double.NEGATIVE_INFINITY)))), ErrorCode.PARTIAL_NON_NUMERIC);
        assertCode(replace(1, slot(1, List.of(new Partial("", 1)))), ErrorCode.PARTIAL_MALFORMED);
        assertCode(replace(1, slot(1, List.of(new Partial("k", 1), new Partial("k", 2)))), ErrorCode.PARTIAL_MALFORMED);
        assertCode(replace(1, slot(1, List.of(new Partial("p0/z", 1)))), ErrorCode.PARTIAL_KEY_DUPLICATED);
        ShardRunRow garbage = new ShardRunRow(1, one.partitionId(), epoch, one.wireId(), one.hostId(), 0, 0, 1,
                new byte[] {1, 2, 3}, true, epoch);
        assertCode(replace(1, garbage), ErrorCode.PARTIAL_MALFORMED);
    }

    @Test
    void slotAndMergedBoundsAreEnforced() {
        Limits small = Limits.fromProperties(Map.of("limits.partialEntriesPerSlot", "4"));
        assertCode(replace(1, slot(1, List.of(new Partial("p1/1", 1), new Partial("p1/2", 1), new Partial("p1/3", 1),
                new Partial("p1/4", 1), new Partial("p1/5", 1)))), ErrorCode.SLOT_TOO_LARGE, small);
        assertCode(replace(1, slot(1, List.of(new Partial("p1/1", 1), new Partial("p1/2", 1)))),
                ErrorCode.MERGED_PARTIALS_TOO_LARGE, small);
    }

    /** Exactly at each bound is accepted; one past it is refused (the bounds are inclusive, as the contract says). */
    @Test
    void everyBoundIsInclusive() {
        Limits small = Limits.fromProperties(Map.of("limits.partialEntriesPerSlot", "4", "limits.emitsPerInvocation", "3",
                "limits.partialKeyMaxBytes", "6"));
        // Slot 1 with exactly 4 entries (the slot bound), 3 emits (the emit bound) and 6-byte keys; slots 0 and 2
        // hold none, so the merged set is exactly 4 entries too (the merged bound).
        List<Partial> four = List.of(new Partial("p1/k11", 1), new Partial("p1/k12", 2), new Partial("p1/k13", 3),
                new Partial("p1/k14", 4));
        List<ShardRunRow> atTheBounds = List.of(slot(0, List.of()), slot(1, 3, four), slot(2, List.of()));
        assertThat(ShardRunValidator.validate(PLAN.targets(), atTheBounds, small)).hasSize(4);
        assertCode(List.of(slot(0, List.of()), slot(1, 4, four), slot(2, List.of())), ErrorCode.EMIT_LIMIT_EXCEEDED, small);
        assertCode(List.of(slot(0, List.of()), slot(1, 3, List.of(new Partial("p1/k111", 1))), slot(2, List.of())),
                ErrorCode.PARTIAL_MALFORMED, small);
        assertCode(List.of(slot(0, List.of(new Partial("p0/a", 1))), slot(1, 3, four), slot(2, List.of())),
                ErrorCode.MERGED_PARTIALS_TOO_LARGE, small);
    }

    @Test
    void aSlotWhoseEntryCountDisagreesWithItsPartialsIsMalformed() {
        ShardRunRow one = slot(1, List.of(new Partial("p1/a", 1)));
        ShardRunRow claimsTwo = new ShardRunRow(1, one.partitionId(), one.epoch(), one.wireId(), one.hostId(), one.rowCount(),
                one.emitCount(), 2, one.partials(), true, one.epoch());
        assertCode(replace(1, claimsTwo), ErrorCode.PARTIAL_MALFORMED);
    }

    @Test
    void theLowestSlotsViolationSurfacesWhateverTheArrivalOrder() {
        List<ShardRunRow> m = new ArrayList<>();
        m.add(slot(2, List.of(new Partial("p2/x", Double.NaN))));
        m.add(slot(1, 65, List.of()));
        m.add(slot(0, List.of()));
        assertCode(m, ErrorCode.EMIT_LIMIT_EXCEEDED);
    }

    private static void assertCode(List<ShardRunRow> slots, ErrorCode code) {
        assertCode(slots, code, Limits.DEFAULTS);
    }

    private static void assertCode(List<ShardRunRow> slots, ErrorCode code, Limits limits) {
        assertThatThrownBy(() -> ShardRunValidator.validate(PLAN.targets(), slots, limits))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(code));
    }
}
