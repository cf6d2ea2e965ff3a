package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import dev.thresher.store.CountingDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The control-database work of one call, counted on every node's call-path pool: the coordinator
 * records the invocation (1 transaction), takes the reduce lease with the published slots (1) and
 * journals the reduction with the result (1); each leader host looks its wire identities up in the
 * journal (1) and journals and publishes all its slots (1). Bindings and topology come from the
 * node's cache (its own pool, refreshed by notifications and a poll of {@code limits.topologyPollMs}), so a
 * warm call reads neither on the call path. A change that makes a call cost more fails here.
 */
class ControlStatementBudgetIT {
    /** Dev cluster: 16 partitions led by 3 hosts. */
    private static final int HOSTS = 3;
    private static final long TRANSACTIONS_PER_CALL = 3 + 2L * HOSTS;
    /**
     * Executions, each one round trip: coordinator 3 (the record; the lease with the slots and any journaled
     * reduction, three statements sent together; the journaled reduction with the result, three statements sent
     * together); each host 2 (the lookup; journal and publish as one statement).
     */
    private static final long STATEMENTS_PER_CALL = 3 + 2L * HOSTS;

    @Test
    void oneWarmCallStaysWithinItsControlDatabaseBudget() throws Exception {
        DevCluster cluster = Cluster.get();
        List<Node> nodes = cluster.nodes();
        try (Connection c = Cluster.connect(0);
             PreparedStatement ps = c.prepareStatement("CALL BINDING revenue_by_region(?)")) {
            call(ps); // warm: the node's cache holds the binding after the first call
            CountingDataSource.Snapshot[] before = snapshots(nodes);
            call(ps);
            long statements = 0;
            long transactions = 0;
            for (int i = 0; i < nodes.size(); i++) {
                CountingDataSource.Snapshot d = nodes.get(i).callPathControlStatements().since(before[i]);
                statements += d.statements();
                transactions += d.transactions();
            }
            assertThat(transactions).as("control-database transactions of one call").isEqualTo(TRANSACTIONS_PER_CALL);
            assertThat(statements).as("control-database statements of one call").isEqualTo(STATEMENTS_PER_CALL);
        }
    }

    private static void call(PreparedStatement ps) throws Exception {
        ps.setString(1, "{}");
        try (ResultSet rs = ps.executeQuery()) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).contains(DevCluster.REGIONS.get(0));
        }
    }

    private static CountingDataSource.Snapshot[] snapshots(List<Node> nodes) {
        return nodes.stream().map(n -> n.callPathControlStatements().snapshot()).toArray(CountingDataSource.Snapshot[]::new);
    }
}
