package dev.thresher.bench;

import dev.thresher.cellhost.Component;
import dev.thresher.limits.Limits;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.store.control.ControlStore;
import dev.thresher.topology.Slots;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

/**
 * One set of rows and every peer over it: a dev cluster (an embedded PostgreSQL for its shard databases and
 * one for its control database, apart as docs/deployment.md advises for production; three
 * nodes keeping leader replicas, the sample binding and the bench's own two), a database holding all rows on
 * the shard databases' PostgreSQL, an embedded Hazelcast cluster loaded with the same rows, and the rows in arrays for the
 * Java loop. With {@value ThresherPeer#SQL_NAME} among the peers, a second dev cluster as the first (its own
 * embedded PostgreSQL servers, the same seed, so the same rows in the same partitions) whose nodes keep no replicas
 * ({@code limits.replicaMemoryBytes=0}).
 */
final class Dataset implements AutoCloseable {
    static final String SINGLE_DB = "bench_single";

    final int rows;
    final int partitions;
    final int capsBuckets;
    final DevCluster cluster;
    final ThresherPeer thresher;
    /** The dev cluster without leader replicas, or null when {@value ThresherPeer#SQL_NAME} is not measured. */
    final DevCluster sqlCluster;
    /** Thresher on {@link #sqlCluster}, or null. */
    final ThresherPeer thresherSql;
    final Map<String, Shape> shapes = new LinkedHashMap<>();
    final List<Peer> peers = new ArrayList<>();
    final Map<String, String> postgresSettings = new LinkedHashMap<>();
    Rows data;
    private HazelcastCluster hazelcast;
    private String hazelcastSqlProblem;

    private Dataset(int rows, int partitions, DevCluster cluster, DevCluster sqlCluster) {
        this.rows = rows;
        this.partitions = partitions;
        this.capsBuckets = Shape.capsBuckets(partitions, Limits.DEFAULTS.emitsPerInvocation(), Limits.DEFAULTS.partialEntriesPerSlot());
        this.cluster = cluster;
        this.thresher = new ThresherPeer(ThresherPeer.NAME, cluster);
        this.sqlCluster = sqlCluster;
        this.thresherSql = sqlCluster == null ? null : new ThresherPeer(ThresherPeer.SQL_NAME, sqlCluster);
    }

    /** The limits of {@code thresher}'s nodes: the defaults with leader replicas on (256 MiB per node). */
    static Limits withReplicas() {
        return Limits.fromProperties(Map.of("limits.replicaMemoryBytes", Long.toString(256L << 20)));
    }

    /** The limits of {@value ThresherPeer#SQL_NAME}'s nodes: the defaults with no leader replicas. */
    static Limits withoutReplicas() {
        return Limits.fromProperties(Map.of("limits.replicaMemoryBytes", "0"));
    }

    /** The most rows any partition gets, with DevCluster's layout (equal slot ranges) and keys 1..rows. */
    static int maxPartitionRows(int rows, int partitions) {
        int width = Slots.COUNT / partitions;
        int[] count = new int[partitions];
        for (long id = 1; id <= rows; id++) {
            count[Math.min(Slots.ofLong(id) / width, partitions - 1)]++;
        }
        int max = 0;
        for (int c : count) {
            max = Math.max(max, c);
        }
        return max;
    }

    static Dataset start(Path workDir, int rows, int partitions, List<String> peerNames, Progress progress) throws Exception {
        progress.say("starting the dev cluster: embedded PostgreSQL for the shard databases and another for the control"
                + " database, " + rows + " orders in " + partitions + " partitions over 3 shard databases, 3 nodes (work dir "
                + workDir + ")");
        DevCluster cluster = DevCluster.start(new DevCluster.Options(workDir, 0, rows, partitions, 3, 42, withReplicas(), false)
                .withControlApart());
        DevCluster sqlCluster = null;
        if (peerNames.contains(ThresherPeer.SQL_NAME)) {
            Path sqlDir = workDir.resolveSibling(workDir.getFileName() + "-sql");
            progress.say("starting a second dev cluster for " + ThresherPeer.SQL_NAME + ": the same, with limits.replicaMemoryBytes=0"
                    + " (work dir " + sqlDir + ")");
            try {
                sqlCluster = DevCluster.start(new DevCluster.Options(sqlDir, 0, rows, partitions, 3, 42, withoutReplicas(), false)
                        .withControlApart());
            } catch (Exception e) {
                cluster.close();
                throw e;
            }
        }
        Dataset d = new Dataset(rows, partitions, cluster, sqlCluster);
        try {
            d.setUp(peerNames, progress);
            return d;
        } catch (Exception e) {
            d.close();
            throw e;
        }
    }

    private void setUp(List<String> peerNames, Progress progress) throws Exception {
        bind(cluster, progress);
        if (sqlCluster != null) {
            bind(sqlCluster, progress);
        }
        shapes.put("near-empty", Shape.nearEmpty());
        shapes.put("groupby", Shape.byRegion(DevCluster.SAMPLE_BINDING));
        shapes.put("caps", Shape.byBucket(capsBuckets));

        try (Connection c = DriverManager.getConnection(cluster.shardUrl(1), DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            for (String setting : List.of("server_version", "fsync", "synchronous_commit", "full_page_writes", "shared_buffers",
                    "max_parallel_workers_per_gather")) {
                try (ResultSet rs = s.executeQuery("SHOW " + setting)) {
                    rs.next();
                    postgresSettings.put(setting, rs.getString(1));
                }
            }
        }

        data = readRows();
        if (data.size() != rows) {
            throw new IllegalStateException("the shard databases hold " + data.size() + " orders, expected " + rows);
        }
        for (String name : peerNames) {
            switch (name) {
                case ThresherPeer.NAME -> peers.add(thresher);
                case ThresherPeer.SQL_NAME -> peers.add(thresherSql);
                case "pg-fanout" -> {
                    List<String> urls = new ArrayList<>();
                    for (int i = 1; i <= cluster.nodes().size(); i++) {
                        urls.add(cluster.shardUrl(i));
                    }
                    peers.add(new PgFanoutPeer(urls));
                }
                case "pg-rows" -> {
                    List<String> urls = new ArrayList<>();
                    for (int i = 1; i <= cluster.nodes().size(); i++) {
                        urls.add(cluster.shardUrl(i));
                    }
                    peers.add(new PgRowsPeer(urls));
                }
                case "pg-single" -> {
                    progress.say("copying the " + rows + " orders into one database, " + SINGLE_DB);
                    peers.add(new PgSinglePeer(createSingle()));
                }
                case "hazelcast-agg", "hazelcast-sql" -> {
                    if (hazelcast == null) {
                        progress.say("starting " + HazelcastCluster.MEMBERS + " embedded Hazelcast members and loading "
                                + rows + " orders");
                        hazelcast = HazelcastCluster.start(data);
                    }
                    if (name.equals("hazelcast-agg")) {
                        peers.add(new HazelcastAggPeer(hazelcast));
                    } else if (hazelcast.sqlProblem() == null) {
                        peers.add(new HazelcastSqlPeer(hazelcast));
                    } else {
                        hazelcastSqlProblem = hazelcast.sqlProblem();
                        progress.say("Hazelcast SQL is not usable, so not measured: " + hazelcastSqlProblem);
                    }
                }
                case "java" -> peers.add(new JavaLoopPeer(data));
                default -> throw new IllegalArgumentException("unknown peer '" + name + "'");
            }
        }
    }

    /** The bench's own two bindings on {@code c}: the sample component again (near-empty) and the caps guest. */
    private void bind(DevCluster c, Progress progress) throws Exception {
        ControlStore control = c.nodes().get(0).control();
        String sampleDigest = control.currentBinding(DevCluster.TENANT, DevCluster.SAMPLE_BINDING).orElseThrow().componentDigest();
        control.putBinding(DevCluster.TENANT, Shape.NEAR_EMPTY_BINDING, sampleDigest, Shape.NEAR_EMPTY_SELECTOR);
        byte[] caps = CapsGuest.wasm(capsBuckets);
        String capsDigest = Component.of(caps).digest();
        control.putPackage(capsDigest, caps);
        control.putBinding(DevCluster.TENANT, Shape.CAPS_BINDING, capsDigest, Shape.CAPS_SELECTOR);
        progress.say("bound " + Shape.NEAR_EMPTY_BINDING + " (" + sampleDigest.substring(0, 19) + "…, '" + Shape.NEAR_EMPTY_SELECTOR
                + "') and " + Shape.CAPS_BINDING + " (" + capsBuckets + " buckets, '" + Shape.CAPS_SELECTOR + "')"
                + (c == cluster ? "" : " on " + ThresherPeer.SQL_NAME + "'s cluster"));
    }

    /** The Thresher peers among {@link #peers}. */
    List<ThresherPeer> thresherPeers() {
        return peers.stream().filter(p -> p instanceof ThresherPeer).map(p -> (ThresherPeer) p).toList();
    }

    /** Why Hazelcast SQL was not measured, or null. */
    String hazelcastSqlProblem() {
        return hazelcastSqlProblem;
    }

    private Rows readRows() throws Exception {
        Rows.Builder b = new Rows.Builder();
        for (int i = 1; i <= cluster.nodes().size(); i++) {
            try (Connection c = DriverManager.getConnection(cluster.shardUrl(i), DevCluster.USER, DevCluster.PASSWORD);
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT order_id, region, amount FROM orders ORDER BY order_id")) {
                while (rs.next()) {
                    b.add(rs.getLong(1), rs.getString(2), rs.getDouble(3));
                }
            }
        }
        return b.build();
    }

    /** A database on the same PostgreSQL with every shard's rows copied in, as the shards lay them out. */
    private String createSingle() throws Exception {
        String shard1 = cluster.shardUrl(1);
        String url = shard1.replace("thresher_shard_1", SINGLE_DB);
        try (Connection c = DriverManager.getConnection(shard1, DevCluster.USER, DevCluster.PASSWORD);
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + SINGLE_DB + " OWNER " + DevCluster.USER);
        }
        try (Connection single = DriverManager.getConnection(url, DevCluster.USER, DevCluster.PASSWORD);
             Statement s = single.createStatement()) {
            s.execute("""
                    CREATE TABLE orders (
                        order_id bigint PRIMARY KEY,
                        region text NOT NULL,
                        amount double precision NOT NULL,
                        thresher_slot integer NOT NULL)""");
            CopyManager in = single.unwrap(PGConnection.class).getCopyAPI();
            for (int i = 1; i <= cluster.nodes().size(); i++) {
                ByteArrayOutputStream buf = new ByteArrayOutputStream();
                try (Connection shard = DriverManager.getConnection(cluster.shardUrl(i), DevCluster.USER, DevCluster.PASSWORD)) {
                    shard.unwrap(PGConnection.class).getCopyAPI()
                            .copyOut("COPY (SELECT order_id, region, amount, thresher_slot FROM orders) TO STDOUT", buf);
                }
                in.copyIn("COPY orders (order_id, region, amount, thresher_slot) FROM STDIN", new ByteArrayInputStream(buf.toByteArray()));
            }
            s.execute("CREATE INDEX orders_by_slot ON orders (thresher_slot)");
            s.execute("ANALYZE orders");
        }
        return url;
    }

    @Override
    public void close() {
        peers.forEach(Peer::close);
        if (hazelcast != null) {
            hazelcast.close();
        }
        if (sqlCluster != null) {
            sqlCluster.close();
        }
        cluster.close();
    }
}
