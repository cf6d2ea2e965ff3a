package dev.thresher.bench;

import dev.thresher.coordinator.CallPhases;
import dev.thresher.server.DevCluster;
import dev.thresher.server.Node;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Thresher over pgwire with pgjdbc: each client holds one connection to one node (clients are spread over
 * the nodes) and one {@link PreparedStatement} {@code CALL BINDING <name>('{}')}, executed past pgjdbc's
 * {@code prepareThreshold} (5) in the warm-up, so measured calls run a server-side named statement.
 */
final class ThresherPeer implements Peer {
    private final DevCluster cluster;

    ThresherPeer(DevCluster cluster) {
        this.cluster = cluster;
    }

    @Override
    public String name() {
        return "thresher";
    }

    @Override
    public String description() {
        return "Thresher: `CALL BINDING <name>('{}')`, a pgjdbc prepared statement on one of the "
                + cluster.nodes().size() + " nodes (clients round-robin over nodes); guests run on GraalWasm";
    }

    @Override
    public Client open(Shape shape, int index) throws Exception {
        Node node = cluster.nodes().get(index % cluster.nodes().size());
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        // in clear, as the PostgreSQL peers' connections are (the embedded servers offer no TLS): the same transport
        p.setProperty("sslmode", "disable");
        Connection c = DriverManager.getConnection("jdbc:postgresql://" + node.pgwireAddress() + "/thresher", p);
        PreparedStatement s = c.prepareStatement("CALL BINDING " + shape.binding() + "('{}')");
        return new Client() {
            @Override
            public Object call() throws Exception {
                try (ResultSet rs = s.executeQuery()) {
                    if (!rs.next()) {
                        throw new IllegalStateException("CALL BINDING returned no row");
                    }
                    return rs.getString(1);
                }
            }

            @Override
            public Answer answer(Object raw) {
                return Answer.ofJson((String) raw);
            }

            @Override
            public void close() throws SQLException {
                s.close();
                c.close();
            }
        };
    }

    /** Every node's call-phase totals, summed: a call is timed on the node that coordinated it. */
    CallPhases.Snapshot phases() {
        List<Node> nodes = cluster.nodes();
        long calls = 0;
        Map<CallPhases.Phase, Long> nanos = new EnumMap<>(CallPhases.Phase.class);
        for (Node n : nodes) {
            CallPhases.Snapshot s = n.coordinator().phases().snapshot();
            calls += s.calls();
            s.totalNanos().forEach((phase, v) -> nanos.merge(phase, v, Long::sum));
        }
        return new CallPhases.Snapshot(calls, nanos);
    }
}
