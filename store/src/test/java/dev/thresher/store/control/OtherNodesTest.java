package dev.thresher.store.control;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.topology.Host;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link OtherNodes} on a real PostgreSQL: the nodes a connection budget counts besides the one booting. */
class OtherNodesTest {
    @Test
    void theOtherNodesAndEachShardsOtherCandidatesAreCountedNotTheNodeItself() {
        // kills: the host_id <> ? conditions (the booting node counted twice), counting standbys out of candidates
        try (HikariDataSource pool = Pools.open("other-nodes-test", TestPostgres.newDatabase(), null, null, 2)) {
            ControlStore.migrate(pool);
            ControlStore store = new ControlStore(pool);
            store.putShard(1, "jdbc:postgresql://one/db");
            store.putShard(2, "jdbc:postgresql://two/db");
            store.topology().registerHost(new Host("n1", 1, "127.0.0.1", 7001), null, null, List.of(2));
            store.topology().registerHost(new Host("n2", 2, "127.0.0.1", 7002), null, null, List.of());
            store.topology().registerHost(new Host("n3", 2, "127.0.0.1", 7003), null, null, List.of(1));

            OtherNodes others = store.topology().otherNodes("n1");
            assertThat(OtherNodes.besides(pool, "n1")).isEqualTo(others);
            assertThat(others.count()).isEqualTo(2);
            assertThat(others.candidates()).isEqualTo(Map.of(1, 1, 2, 2));
            assertThat(others.controlServer()).matches(".+:\\d+");
            assertThat(OtherNodes.besides(pool, "n4").count()).isEqualTo(3);
        }
    }
}
