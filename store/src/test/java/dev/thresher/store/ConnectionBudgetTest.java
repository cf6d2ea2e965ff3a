package dev.thresher.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class ConnectionBudgetTest {
    @Test
    void aNodeFitsTheClusterMayNotAndANodeThatCannotFitIsRefused() {
        assertThat(new ConnectionBudget("control", 12, 3, 97).verdict()).isEqualTo(ConnectionBudget.Verdict.FITS);
        assertThat(new ConnectionBudget("control", 12, 9, 97).verdict()).isEqualTo(ConnectionBudget.Verdict.CLUSTER_DOES_NOT_FIT);
        assertThat(new ConnectionBudget("control", 12, 8, 96).verdict()).isEqualTo(ConnectionBudget.Verdict.FITS);
        assertThat(new ConnectionBudget("control", 12, 8, 95).verdict()).isEqualTo(ConnectionBudget.Verdict.CLUSTER_DOES_NOT_FIT);
        ConnectionBudget tooSmall = new ConnectionBudget("shard 1", 12, 1, 11);
        assertThat(tooSmall.verdict()).isEqualTo(ConnectionBudget.Verdict.NODE_DOES_NOT_FIT);
        assertThatThrownBy(() -> tooSmall.check(LoggerFactory.getLogger(ConnectionBudgetTest.class)))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION);
                    assertThat(e.getMessage()).contains("shard 1").contains("at most 12").contains("allows 11");
                });
    }

    @Test
    void nodesThatOpenDifferentNumbersAreJudgedByWhatTheyOpenTogether() {
        // 12 here, 3 nodes, 20 between them: fits 20 where 3 nodes each opening 12 would not
        ConnectionBudget mixed = new ConnectionBudget("shard 1", 12, 3, 20, 20);
        assertThat(mixed.verdict()).isEqualTo(ConnectionBudget.Verdict.FITS);
        assertThat(mixed.describe()).contains("at most 12 connections, 3 node(s) at most 20;");
        assertThat(new ConnectionBudget("shard 1", 12, 3, 19, 20).verdict())
                .isEqualTo(ConnectionBudget.Verdict.CLUSTER_DOES_NOT_FIT);
        assertThat(new ConnectionBudget("shard 1", 12, 3, 11, 20).verdict())
                .isEqualTo(ConnectionBudget.Verdict.NODE_DOES_NOT_FIT);
    }

    @Test
    void theServersAllowanceIsMaxConnectionsLessTheReserved() throws Exception {
        try (HikariDataSource db = Pools.open("budget-test", TestPostgres.newDatabase(), null, null, 2);
             var c = db.getConnection(); var s = c.createStatement();
             var rs = s.executeQuery("SELECT current_setting('max_connections')::int, "
                     + "current_setting('superuser_reserved_connections')::int, "
                     + "coalesce(current_setting('reserved_connections', true)::int, 0)")) {
            rs.next();
            assertThat(ConnectionBudget.available(db)).isEqualTo(rs.getInt(1) - rs.getInt(2) - rs.getInt(3)).isPositive();
        }
    }
}
