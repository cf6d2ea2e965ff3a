package dev.thresher.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.limits.Limits;
import dev.thresher.pgwire.AuthMode;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NodeConfigTest {
    private static Map<String, String> minimal() {
        Map<String, String> p = new HashMap<>();
        p.put("node.id", "n1");
        p.put("node.shardId", "1");
        p.put("control.jdbcUrl", "jdbc:postgresql://db/control");
        p.put("shard.jdbcUrl", "jdbc:postgresql://db/shard1");
        return p;
    }

    @Test
    void defaultsAreSafeForProduction() {
        NodeConfig c = NodeConfig.fromProperties(minimal());
        assertThat(c.pgwireAuth()).isEqualTo(AuthMode.PASSWORD);
        assertThat(c.failpointsEnabled()).isFalse();
        assertThat(c.bindHost()).isEqualTo("127.0.0.1");
        assertThat(c.pgwirePort()).isEqualTo(5433);
        assertThat(c.limits()).isEqualTo(Limits.DEFAULTS);
        assertThat(c.tenant()).isEqualTo("default");
    }

    @Test
    void keysMapToTheirFields() {
        Map<String, String> p = minimal();
        p.put("node.pgwirePort", "6543");
        p.put("pgwire.auth", "trust");
        p.put("failpoints.enabled", "true");
        p.put("limits.shardConcurrency", "4");
        p.put("tenant", "acme");
        NodeConfig c = NodeConfig.fromProperties(p);
        assertThat(c.pgwirePort()).isEqualTo(6543);
        assertThat(c.pgwireAuth()).isEqualTo(AuthMode.TRUST);
        assertThat(c.failpointsEnabled()).isTrue();
        assertThat(c.limits().shardConcurrency()).isEqualTo(4);
        assertThat(c.tenant()).isEqualTo("acme");
    }

    @Test
    void everyProblemIsNamedAtOnce() {
        Map<String, String> p = new HashMap<>();
        p.put("node.pgwirePort", "five");
        p.put("pgwire.auth", "scram");
        p.put("limits.rowsPerBatch", "0");
        assertThatThrownBy(() -> NodeConfig.fromProperties(p))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("node.id is required")
                .hasMessageContaining("node.shardId is required")
                .hasMessageContaining("control.jdbcUrl is required")
                .hasMessageContaining("node.pgwirePort is not an integer")
                .hasMessageContaining("pgwire.auth must be trust or password")
                .hasMessageContaining("rowsPerBatch must be positive");
    }
}
