package dev.thresher.bench;

import dev.thresher.server.dev.DevCluster;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;

/** PostgreSQL's own GROUP BY on one database holding every row: one connection and one prepared query per client. */
final class PgSinglePeer implements Peer {
    private final String url;

    PgSinglePeer(String url) {
        this.url = url;
    }

    @Override
    public String name() {
        return "pg-single";
    }

    @Override
    public String description() {
        return "PostgreSQL GROUP BY on one database holding all rows (same embedded server), one pgjdbc prepared query";
    }

    @Override
    public Client open(Shape shape, int index) throws Exception {
        Connection c = DriverManager.getConnection(url, DevCluster.USER, DevCluster.PASSWORD);
        PreparedStatement s = c.prepareStatement(shape.sql());
        return new Client() {
            @Override
            public Object call() throws Exception {
                return PgFanoutPeer.groups(s, shape);
            }

            @SuppressWarnings("unchecked")
            @Override
            public Answer answer(Object raw) {
                return Answer.of((Map<String, double[]>) raw);
            }

            @Override
            public void close() throws SQLException {
                s.close();
                c.close();
            }
        };
    }
}
