package dev.thresher.server.node;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.store.ConnectionBudget.Verdict;
import dev.thresher.store.ConnectionBudget;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A node's connection budget counts every pool its process opens: the table service's (a {@link TableAdmin} kept for
 * the node's life) beside the call path's, the upkeep's, the cache's {@code LISTEN} and the shard reads'.
 */
class NodeConnectionsTest {
    /** The default node: 8 call-path connections, 3 upkeep, 8 shard reads and 4 for a leader replica. */
    private static final NodeConnections NODE = new NodeConnections(8, 3, 8 + 4);

    @Test
    void theTableServicesPoolsAreCountedAgainstTheControlAndEachCandidateShardDatabase() throws Exception {
        // fails when the table service's pools (2 control, 4 per shard database) are left out of the figures
        try (EmbeddedPostgres pg = EmbeddedPostgres.builder().start();
             TableAdmin admin = new TableAdmin(pg.getJdbcUrl("postgres", "postgres"), null, null,
                     new PrintStream(PrintStream.nullOutputStream()))) {
            int tableControl = ((HikariDataSource) admin.controlDb()).getMaximumPoolSize();
            assertThat(NODE.control()).isEqualTo(8 + 3 + NodeConnections.LISTEN + tableControl).isEqualTo(14);

            // the shard pool a load or an insert writes through, held at its most
            String shardUrl = pg.getJdbcUrl("postgres", "postgres") + "&ApplicationName=table-shard-pool";
            List<Connection> held = new ArrayList<>();
            try {
                for (int i = 0; i < TableAdmin.SHARD_POOL_SIZE; i++) {
                    held.add(admin.shardConnection(shardUrl));
                }
                try (Connection c = pg.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
                     ResultSet rs = s.executeQuery(
                             "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'table-shard-pool'")) {
                    rs.next();
                    int opened = rs.getInt(1);
                    assertThat(opened).isEqualTo(TableAdmin.SHARD_POOL_SIZE);
                    assertThat(NODE.candidateShard()).isEqualTo(8 + 4 + opened);
                }
            } finally {
                for (Connection c : held) {
                    c.close();
                }
            }
        }
    }

    @Test
    void apartTheControlAndEachShardServerAreBudgetedAloneAndEveryNodesTableServiceCountsOnEveryShard() {
        // three nodes, each the home of one shard database on its own server, node 1 standing by for shard 2
        List<ConnectionBudget> budgets = NODE.budgets("10.0.0.1:5432", new TreeMap<>(Map.of(1, "10.0.0.2:5432", 2, "10.0.0.3:5432")),
                2, Map.of(1, 0, 2, 1, 3, 1), key -> 97);
        assertThat(budgets).extracting(ConnectionBudget::database)
                .containsExactly("control database", "shard database 1", "shard database 2");
        assertThat(budgets.get(0)).isEqualTo(new ConnectionBudget("control database", 14, 3, 97, 42));
        // shard 1: this node reads (12) and every node may write (3 × 4)
        assertThat(budgets.get(1)).isEqualTo(new ConnectionBudget("shard database 1", 16, 3, 97, 12 + 12));
        // shard 2: two candidates read (2 × 12), every node may write
        assertThat(budgets.get(2)).isEqualTo(new ConnectionBudget("shard database 2", 16, 3, 97, 24 + 12));
    }

    @Test
    void databasesOnOneServerAreOneBudget() {
        // the dev cluster's layout: control and both candidate shard databases on one server
        List<ConnectionBudget> budgets = NODE.budgets("127.0.0.1:5432", new TreeMap<>(Map.of(1, "127.0.0.1:5432", 2, "127.0.0.1:5432")),
                2, Map.of(1, 1, 2, 1, 3, 1), key -> 297);
        assertThat(budgets).containsExactly(new ConnectionBudget("control and shard databases 1, 2 (one server,"
                + " 127.0.0.1:5432)", 14 + 16 + 16, 3, 297, 42 + (24 + 12) * 2));
        assertThat(budgets.get(0).verdict()).isEqualTo(Verdict.FITS);
    }

    @Test
    void aNodeThatFitsOnlyWithoutItsTableServiceIsRefused() {
        // 8 + 3 + 1 = 12 fit a server allowing 12; the table service's 2 do not
        ConnectionBudget control = NODE.budgets("10.0.0.1:5432", Map.of(1, "10.0.0.2:5432"), 0, Map.of(), key -> 12)
                .get(0);
        assertThat(control.verdict()).isEqualTo(Verdict.NODE_DOES_NOT_FIT);
        assertThatThrownBy(() -> control.check(LoggerFactory.getLogger(NodeConnectionsTest.class)))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION);
                    assertThat(e).hasMessageContaining("this node opens at most 14 connections");
                });
    }

    @Test
    void aDatabaseWhoseAddressIsUnknownIsAServerOfItsOwn() {
        // a Unix socket has no address: the control database and the shard database are not taken for one server
        Map<Integer, String> unknown = new TreeMap<>();
        unknown.put(1, null);
        List<ConnectionBudget> budgets = NODE.budgets(null, unknown, 0, Map.of(), key -> switch (key) {
            case "control" -> 50;
            case "shard-1" -> 60;
            default -> throw new AssertionError(key);
        });
        assertThat(budgets).extracting(ConnectionBudget::database, ConnectionBudget::available)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("control database", 50),
                        org.assertj.core.groups.Tuple.tuple("shard database 1", 60));
    }
}
