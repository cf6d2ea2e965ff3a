package dev.thresher.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.topology.Leadership;
import dev.thresher.topology.Topology;
import java.util.HashMap;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class CallPlannerTest {
    private static final UUID CALL = UUID.fromString("00000000-0000-0000-0000-000000000001");

    @Test
    void plansOneSlotPerPartitionInSlotOrderWithDerivedWireIdentities() {
        CallPlan plan = CallPlanner.plan(CALL, Plans.BINDING, Plans.topology(16), Limits.DEFAULTS);
        assertThat(plan.targets()).hasSize(16);
        for (int i = 0; i < 16; i++) {
            ShardTarget t = plan.targets().get(i);
            assertThat(t.runIndex()).isEqualTo(i);
            assertThat(t.partition().slotLo()).isEqualTo(i * 1024);
            assertThat(t.leader().hostId()).isEqualTo("h" + (i % 3 + 1));
            assertThat(t.wireId()).isEqualTo(CALL + "/shard/" + i);
        }
        assertThat(plan.reduceWireId()).isEqualTo(CALL + "/reduce");
        assertThat(CallPlanner.plan(CALL, Plans.BINDING, Plans.topology(16), Limits.DEFAULTS)).isEqualTo(plan);
    }

    @Test
    void moreThanTheSlotLimitIsATypedErrorNotATruncation() {
        assertThat(CallPlanner.plan(CALL, Plans.BINDING, Plans.topology(64), Limits.DEFAULTS).targets()).hasSize(64);
        assertThatThrownBy(() -> CallPlanner.plan(CALL, Plans.BINDING, Plans.topology(65), Limits.DEFAULTS))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.TOO_MANY_COORDINATION_SLOTS));
    }

    @Test
    void aPartitionWithoutALiveLeaderUnderItsEpochIsCellUnavailable() {
        Topology base = Plans.topology(4);
        var expired = new HashMap<>(base.leaders());
        Leadership l = expired.get(99);
        expired.put(99, new Leadership(99, l.hostId(), l.epoch(), Plans.NOW));
        assertUnavailable(new Topology(base.partitions(), expired, base.hosts(), Plans.NOW));

        var staleEpoch = new HashMap<>(base.leaders());
        staleEpoch.put(99, new Leadership(99, l.hostId(), 6, l.leaseUntil()));
        assertUnavailable(new Topology(base.partitions(), staleEpoch, base.hosts(), Plans.NOW));

        var none = new HashMap<>(base.leaders());
        none.remove(99);
        assertUnavailable(new Topology(base.partitions(), none, base.hosts(), Plans.NOW));
    }

    @Test
    void aTableWithoutPartitionsIsAnInvalidSelector() {
        Topology t = Plans.topology(4);
        assertThatThrownBy(() -> CallPlanner.plan(CALL, new dev.thresher.bindings.Binding("other-tenant", "b", 1,
                Plans.BINDING.componentDigest(), Plans.BINDING.selector()), t, Limits.DEFAULTS))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SELECTOR));
    }

    @Test
    void aTableWhosePartitionsDoNotTileIsRefusedNotAnsweredWithoutTheMissingRows() {
        Topology whole = Plans.topology(4);
        List<dev.thresher.topology.Partition> parts = whole.partitions();
        // Without partition 3 (slots 12288..16383): a gap at the end.
        Topology gap = new Topology(parts.stream().filter(p -> p.slotLo() != 12288).toList(), whole.leaders(),
                whole.hosts(), Plans.NOW);
        assertThatThrownBy(() -> CallPlanner.plan(CALL, Plans.BINDING, gap, Limits.DEFAULTS))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE);
                    assertThat(e.getMessage()).contains("slots 12288..16383 are in no partition");
                });
        // One more partition over slots of another: an overlap.
        List<dev.thresher.topology.Partition> overlapping = new java.util.ArrayList<>(parts);
        overlapping.add(new dev.thresher.topology.Partition(7, "t", "orders", 0, 10, 1, 7));
        Topology overlap = new Topology(overlapping, whole.leaders(), whole.hosts(), Plans.NOW);
        assertThatThrownBy(() -> CallPlanner.plan(CALL, Plans.BINDING, overlap, Limits.DEFAULTS))
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PARTITIONS_DO_NOT_TILE));
    }

    private static void assertUnavailable(Topology t) {
        assertThatThrownBy(() -> CallPlanner.plan(CALL, Plans.BINDING, t, Limits.DEFAULTS))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.CELL_UNAVAILABLE);
                    assertThat(e.getMessage()).contains("partition 99");
                });
    }
}
