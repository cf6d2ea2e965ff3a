package dev.thresher.limits;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class LimitsTest {
    @Test
    void defaultsAreTheContractTable() {
        Limits l = Limits.DEFAULTS;
        assertThat(l.callDeadlineMs()).isEqualTo(30_000);
        assertThat(l.shardConcurrency()).isEqualTo(8);
        assertThat(l.rowsPerBatch()).isEqualTo(4_096);
        assertThat(l.emitsPerInvocation()).isEqualTo(64);
        assertThat(l.partialEntriesPerSlot()).isEqualTo(1_024);
        assertThat(l.coordinationSlots()).isEqualTo(64);
        assertThat(l.reduceLeaseMs()).isEqualTo(30_000);
        assertThat(l.activationLeaseMs()).isEqualTo(60_000);
        assertThat(l.activationWindowMs()).isEqualTo(15_000);
        assertThat(l.coordinationRetentionMs()).isEqualTo(600_000);
        assertThat(l.nestedCallsPerRequest()).isEqualTo(1);
        assertThat(l.directCallPayloadBytes()).isEqualTo(1 << 20);
        assertThat(l.attemptBudget()).isEqualTo(2);
        assertThat(l.httpRequestTimeoutMs()).isEqualTo(30_000);
        assertThat(l.httpMaxConnections()).isEqualTo(1_024);
        assertThat(l.guestMemoryMaxBytes()).isEqualTo(256L << 20);
        assertThat(l.handlerConcurrency()).isEqualTo(16);
        assertThat(l.httpResponseMaxBytes()).isEqualTo(1 << 20);
    }

    @Test
    void guestMemoryMustHoldABatch() {
        assertThat(Limits.fromProperties(Map.of("limits.guestMemoryMaxBytes", "67108864")).guestMemoryMaxBytes())
                .isEqualTo(64L << 20);
        assertThatThrownBy(() -> Limits.fromProperties(Map.of("limits.guestMemoryMaxBytes", "1048576")))
                .hasMessageContaining("guestMemoryMaxBytes (1048576) is smaller than batchMaxBytes");
    }

    @Test
    void httpBoundsAreOverridableAndMustBePositive() {
        Limits l = Limits.fromProperties(Map.of("limits.httpRequestTimeoutMs", "500", "limits.httpMaxConnections", "2"));
        assertThat(l.httpRequestTimeoutMs()).isEqualTo(500);
        assertThat(l.httpMaxConnections()).isEqualTo(2);
        assertThatThrownBy(() -> Limits.fromProperties(Map.of("limits.httpRequestTimeoutMs", "0", "limits.httpMaxConnections", "-1")))
                .hasMessageContaining("httpRequestTimeoutMs must be positive")
                .hasMessageContaining("httpMaxConnections must be positive");
    }

    @Test
    void pgwireResourceBoundsHaveDefaultsAndMustBePositive() {
        Limits d = Limits.DEFAULTS;
        assertThat(d.pgwireMaxConnections()).isEqualTo(500);
        assertThat(d.pgwireConnectionsPerUser()).isEqualTo(100);
        assertThat(d.pgwireIdleSessionTimeoutMs()).isEqualTo(3_600_000);
        assertThat(d.pgwireStatementBytesPerConnection()).isEqualTo(16 << 20);
        assertThat(d.pgwireStatementsPerQuery()).isEqualTo(1_000);
        Limits l = Limits.fromProperties(Map.of("limits.pgwireMaxConnections", "3", "limits.pgwireConnectionsPerUser", "2",
                "limits.pgwireIdleSessionTimeoutMs", "250", "limits.pgwireStatementBytesPerConnection", "1024",
                "limits.pgwireStatementsPerQuery", "10"));
        assertThat(List.of(l.pgwireMaxConnections(), l.pgwireConnectionsPerUser(), l.pgwireStatementBytesPerConnection(),
                l.pgwireStatementsPerQuery())).containsExactly(3, 2, 1024, 10);
        assertThat(l.pgwireIdleSessionTimeoutMs()).isEqualTo(250);
        assertThatThrownBy(() -> Limits.fromProperties(Map.of("limits.pgwireMaxConnections", "0",
                "limits.pgwireIdleSessionTimeoutMs", "-1", "limits.pgwireStatementsPerQuery", "0")))
                .hasMessageContaining("pgwireMaxConnections must be positive")
                .hasMessageContaining("pgwireIdleSessionTimeoutMs must be positive")
                .hasMessageContaining("pgwireStatementsPerQuery must be positive");
    }

    @Test
    void propertiesOverrideByKey() {
        Limits l = Limits.fromProperties(Map.of("limits.shardConcurrency", "4", "limits.rowsPerBatch", "1_000", "other", "x"));
        assertThat(l.shardConcurrency()).isEqualTo(4);
        assertThat(l.rowsPerBatch()).isEqualTo(1000);
        assertThat(l.emitsPerInvocation()).isEqualTo(64);
        assertThat(Limits.fromProperties(Map.of())).isEqualTo(Limits.DEFAULTS);
    }

    @Test
    void badValuesAreRefusedWithEveryKeyNamed() {
        assertThatThrownBy(() -> Limits.fromProperties(Map.of("limits.shardConcurency", "4")))
                .hasMessageContaining("unknown limit 'limits.shardConcurency'");
        assertThatThrownBy(() -> Limits.fromProperties(Map.of("limits.rowsPerBatch", "many")))
                .hasMessageContaining("limits.rowsPerBatch is not an integer");
        assertThatThrownBy(() -> Limits.fromProperties(Map.of("limits.emitsPerInvocation", "0", "limits.callDeadlineMs", "60000")))
                .hasMessageContaining("emitsPerInvocation must be positive")
                .hasMessageContaining("exceeds maxCallDeadlineMs");
        assertThatThrownBy(() -> Limits.fromProperties(Map.of("limits.rowsPerBatch", "99999999999")))
                .hasMessageContaining("does not fit in 32 bits");
    }

    @Test
    void everyComponentHasAKey() {
        assertThat(Limits.DEFAULTS.asMap()).hasSize(Limits.class.getRecordComponents().length);
    }
}
