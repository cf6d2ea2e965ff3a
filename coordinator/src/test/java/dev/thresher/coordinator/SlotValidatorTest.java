package dev.thresher.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Partial;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.wire.WireMessage.ShardRunResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class SlotValidatorTest {
    private static final CallPlan PLAN = CallPlanner.plan(UUID.fromString("00000000-0000-0000-0000-000000000002"),
            Plans.BINDING, Plans.topology(3), Limits.DEFAULTS);

    private static ShardRunResult result(int slot, List<Partial> partials) {
        return result(slot, partials.size(), partials);
    }

    private static ShardRunResult result(int slot, int emits, List<Partial> partials) {
        ShardTarget t = PLAN.targets().get(slot);
        return new ShardRunResult(slot, t.wireId(), t.partition().id(), t.partition().epoch(), 10, emits, 1, 1, partials);
    }

    private static Map<Integer, ShardRunResult> complete() {
        Map<Integer, ShardRunResult> m = new HashMap<>();
        m.put(2, result(2, List.of(new Partial("p2/b", 2), new Partial("p2/a", 1))));
        m.put(0, result(0, List.of(new Partial("p0/z", 3))));
        m.put(1, result(1, List.of()));
        return m;
    }

    @Test
    void completeDisjointSlotsMergeSortedByKey() {
        assertThat(SlotValidator.validate(PLAN, complete(), Limits.DEFAULTS)).extracting(Partial::key)
                .containsExactly("p0/z", "p2/a", "p2/b");
    }

    @Test
    void eachViolationHasItsOwnCode() {
        var missing = complete();
        missing.remove(1);
        assertCode(missing, ErrorCode.SLOT_MISSING);

        var stale = complete();
        ShardTarget t = PLAN.targets().get(1);
        stale.put(1, new ShardRunResult(1, t.wireId(), t.partition().id(), t.partition().epoch() - 1, 0, 0, 0, 0, List.of()));
        assertCode(stale, ErrorCode.SLOT_STALE);

        var wrongWire = complete();
        wrongWire.put(1, new ShardRunResult(1, "other", t.partition().id(), t.partition().epoch(), 0, 0, 0, 0, List.of()));
        assertCode(wrongWire, ErrorCode.SLOT_STALE);

        var emits = complete();
        emits.put(1, result(1, 65, List.of()));
        assertCode(emits, ErrorCode.EMIT_LIMIT_EXCEEDED);

        var nan = complete();
        nan.put(1, result(1, List.of(new Partial("p1/x", Double.NaN))));
        assertCode(nan, ErrorCode.PARTIAL_NON_NUMERIC);

        var inf = complete();
        inf.put(1, result(1, List.of(new Partial("p1/x", Double.NEGATIVE_INFINITY))));
        assertCode(inf, ErrorCode.PARTIAL_NON_NUMERIC);

        var empty = complete();
        empty.put(1, result(1, List.of(new Partial("", 1))));
        assertCode(empty, ErrorCode.PARTIAL_MALFORMED);

        var twiceInOne = complete();
        twiceInOne.put(1, result(1, List.of(new Partial("k", 1), new Partial("k", 2))));
        assertCode(twiceInOne, ErrorCode.PARTIAL_MALFORMED);

        var shared = complete();
        shared.put(1, result(1, List.of(new Partial("p0/z", 1))));
        assertCode(shared, ErrorCode.PARTIAL_KEY_DUPLICATED);
    }

    @Test
    void slotAndMergedBoundsAreEnforced() {
        Limits small = Limits.fromProperties(Map.of("limits.partialEntriesPerSlot", "4"));
        var big = complete();
        big.put(1, result(1, List.of(new Partial("p1/1", 1), new Partial("p1/2", 1), new Partial("p1/3", 1),
                new Partial("p1/4", 1), new Partial("p1/5", 1))));
        assertCode(big, ErrorCode.SLOT_TOO_LARGE, small);

        var merged = complete();
        merged.put(1, result(1, List.of(new Partial("p1/1", 1), new Partial("p1/2", 1))));
        assertCode(merged, ErrorCode.MERGED_PARTIALS_TOO_LARGE, small);
    }

    @Test
    void theLowestSlotsViolationSurfacesWhateverTheArrivalOrder() {
        var m = complete();
        m.put(2, result(2, List.of(new Partial("p2/x", Double.NaN))));
        m.put(1, result(1, 65, List.of()));
        List<Integer> order = new ArrayList<>(List.of(2, 1, 0));
        Map<Integer, ShardRunResult> arrived = new java.util.LinkedHashMap<>();
        order.forEach(i -> arrived.put(i, m.get(i)));
        assertCode(arrived, ErrorCode.EMIT_LIMIT_EXCEEDED);
    }

    private static void assertCode(Map<Integer, ShardRunResult> results, ErrorCode code) {
        assertCode(results, code, Limits.DEFAULTS);
    }

    private static void assertCode(Map<Integer, ShardRunResult> results, ErrorCode code, Limits limits) {
        assertThatThrownBy(() -> SlotValidator.validate(PLAN, results, limits))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(code));
    }
}
