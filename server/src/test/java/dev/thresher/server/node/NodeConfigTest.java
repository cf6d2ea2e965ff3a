package dev.thresher.server.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.limits.Limits;
import dev.thresher.pgwire.AuthMode;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
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
        assertThat(c.pgwireAuth()).isEqualTo(AuthMode.SCRAM);
        assertThat(c.failpointsEnabled()).isFalse();
        assertThat(c.bindHost()).isEqualTo("127.0.0.1");
        assertThat(c.pgwirePort()).isEqualTo(5433);
        assertThat(c.limits()).isEqualTo(Limits.DEFAULTS);
        assertThat(c.tenant()).isEqualTo("default");
    }

    @Test
    void theAdvertisedWireAddressIsTheBoundOneUnlessConfigured() {
        NodeConfig plain = NodeConfig.fromProperties(minimal());
        assertThat(plain.advertisedWireHost()).isEqualTo("127.0.0.1");
        assertThat(plain.advertisedWirePort(41000)).isEqualTo(41000);
        Map<String, String> p = minimal();
        p.put("node.wireAdvertisedHost", "10.0.0.7");
        p.put("node.wireAdvertisedPort", "9000");
        NodeConfig proxied = NodeConfig.fromProperties(p);
        assertThat(proxied.advertisedWireHost()).isEqualTo("10.0.0.7");
        assertThat(proxied.advertisedWirePort(41000)).isEqualTo(9000);
        p.put("node.wireAdvertisedPort", "70000");
        assertThatThrownBy(() -> NodeConfig.fromProperties(p)).hasMessageContaining("node.wireAdvertisedPort");
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
    void aMistypedKeyIsRefusedNotIgnored() {
        Map<String, String> p = minimal();
        p.put("node.httpport", "9999");
        p.put("pgwire.pasword", "secret");
        assertThatThrownBy(() -> NodeConfig.fromProperties(p))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown configuration key 'node.httpport'; did you mean node.httpPort?")
                .hasMessageContaining("unknown configuration key 'pgwire.pasword'; the keys are");
    }

    @Test
    void trustIsRefusedOffLoopback() {
        Map<String, String> p = minimal();
        p.put("pgwire.auth", "trust");
        p.put("node.bindHost", "10.0.0.11");
        assertThatThrownBy(() -> NodeConfig.fromProperties(p)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pgwire.auth trust admits users without a password: only on a loopback");
        p.put("pgwire.auth", "scram-sha-256");
        assertThat(NodeConfig.fromProperties(p).pgwireAuth()).isEqualTo(AuthMode.SCRAM);
    }

    @Test
    void everyProblemIsNamedAtOnce() {
        Map<String, String> p = new HashMap<>();
        p.put("node.pgwirePort", "five");
        p.put("pgwire.auth", "md5");
        p.put("limits.rowsPerBatch", "0");
        assertThatThrownBy(() -> NodeConfig.fromProperties(p))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("node.id is required")
                .hasMessageContaining("node.shardId is required")
                .hasMessageContaining("control.jdbcUrl is required")
                .hasMessageContaining("node.pgwirePort is not an integer")
                .hasMessageContaining("pgwire.auth must be scram-sha-256, password or trust")
                .hasMessageContaining("rowsPerBatch must be positive");
    }

    @Test
    void anEnvironmentVariableSetsTheKeyWhoseUppercasedNameItIs() {
        assertThat(NodeConfig.environmentOverrides(Map.of(
                "THRESHER_LIMITS_CALLDEADLINEMS", "5000",
                "THRESHER_NODE_HTTPPORT", "9000",
                "THRESHER_CONTROL_JDBCURL", "jdbc:postgresql://db/c",
                "THRESHER_NODE_ID", "n7")))
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "limits.callDeadlineMs", "5000",
                        "node.httpPort", "9000",
                        "control.jdbcUrl", "jdbc:postgresql://db/c",
                        "node.id", "n7"));
    }

    @Test
    void theLauncherAndLoggingVariablesAndOtherVariablesAreNotConfiguration() {
        assertThat(NodeConfig.environmentOverrides(Map.of(
                "THRESHER_JAVA_OPTS", "-Xmx1g",
                "THRESHER_SKIP_BUILD", "1",
                "THRESHER_LOG_LEVEL", "DEBUG",
                "PATH", "/usr/bin",
                "thresher_node_id", "lowercase is not ours"))).isEmpty();
    }

    @Test
    void unknownThresherVariablesAreRefusedByName() {
        Map<String, String> env = Map.of(
                "THRESHER_LIMITS_CALLDEADLINE", "5000",
                "THRESHER_NODE_HTTP_PORT", "9000",
                "THRESHER_NODE_ID", "n7");
        assertThatThrownBy(() -> NodeConfig.environmentOverrides(env))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("THRESHER_LIMITS_CALLDEADLINE, THRESHER_NODE_HTTP_PORT")
                .hasMessageNotContaining("THRESHER_NODE_ID,");
    }

    @Test
    void everyKeyHasItsOwnVariable() {
        Set<String> variables = new HashSet<>();
        for (String key : NodeConfig.keys()) {
            String variable = NodeConfig.environmentVariable(key);
            assertThat(variables.add(variable)).as("%s names one key only", variable).isTrue();
            assertThat(NodeConfig.RESERVED_VARIABLES).doesNotContain(variable);
            assertThat(NodeConfig.environmentOverrides(Map.of(variable, "v"))).containsExactly(Map.entry(key, "v"));
        }
        assertThat(NodeConfig.keys()).contains("node.httpPort", "limits.callDeadlineMs", "limits.maxCallDeadlineMs");
    }

    @Test
    void theEnvironmentOverridesTheProperties() {
        Map<String, String> p = minimal();
        p.put("node.httpPort", "8000");
        p.put("limits.callDeadlineMs", "20000");
        NodeConfig c = NodeConfig.fromPropertiesAndEnvironment(p, Map.of(
                "THRESHER_NODE_HTTPPORT", "9000", "THRESHER_LIMITS_CALLDEADLINEMS", "5000", "THRESHER_JAVA_OPTS", "-ea"));
        assertThat(c.httpPort()).isEqualTo(9000);
        assertThat(c.limits().callDeadlineMs()).isEqualTo(5000);
    }

    @Test
    void unknownVariablesAndBadKeysAreNamedInOneMessage() {
        Map<String, String> p = minimal();
        p.remove("node.id");
        assertThatThrownBy(() -> NodeConfig.fromPropertiesAndEnvironment(p, Map.of(
                "THRESHER_NODE_HTTPPORTT", "9000", "THRESHER_LIMITS_ROWSPERBATCH", "0")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("THRESHER_NODE_HTTPPORTT")
                .hasMessageContaining("node.id is required")
                .hasMessageContaining("rowsPerBatch must be positive");
    }
}
