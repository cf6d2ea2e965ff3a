package dev.thresher.store.shard;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.Selector;
import dev.thresher.limits.Deadline;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import dev.thresher.store.shard.ShardReader.Mode;
import dev.thresher.topology.Partition;
import dev.thresher.topology.Slots;
import java.io.StringReader;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.postgresql.PGConnection;

/**
 * The partition read, {@link Mode#JDBC} against {@link Mode#COPY}, on embedded PostgreSQL: a table of
 * {@code (order_id bigint, region text, amount double precision, thresher_slot int)} with 50,000 rows,
 * indexed on the slot, read one partition of exactly 3,125 rows (slots 0-1023) through a pool of one
 * connection. The rows are loaded {@code clustered} (in slot order, as the dev cluster loads them: the
 * partition's rows fill about 25 pages of their own) or {@code scattered} (in id order: they are every
 * 16th row, on every one of the table's ~370 pages). Both readers are warmed up, then read in turns
 * (the order alternating each round) so that drift in the machine hits both alike; each read is timed
 * around {@code ShardReader.read}. Prints µs per read per trial and over all trials (p50, p90, p99,
 * mean). Not a test: nothing runs it but the command below.
 *
 * <p>Run (from the repository root; the command is also in {@code docs/benchmarks.md}):
 * <pre>
 * export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
 * ./mvnw -B -q -pl store -am install -DskipTests
 * ./mvnw -B -q -pl store dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test.classpath
 * $JAVA_HOME/bin/java -Xms1g -Xmx1g -cp store/target/test-classes:store/target/classes:$(cat store/target/test.classpath) \
 *     dev.thresher.store.shard.ShardReadBench [reads-per-trial] [trials] [warmup-reads] [clustered|scattered]
 * </pre>
 * Defaults: 1,000 reads per trial each way, 3 trials, 1,000 warm-up reads each way, clustered.
 */
public final class ShardReadBench {
    private static final int TABLE_ROWS = 50_000;
    private static final int PARTITIONS = 16;
    private static final int SLOTS_PER_PARTITION = Slots.COUNT / PARTITIONS;
    private static final List<String> REGIONS = List.of(
            "africa", "antarctica", "asia", "europe", "middle_east", "north_america", "oceania", "south_america");

    private ShardReadBench() {}

    public static void main(String[] args) throws Exception {
        int reads = args.length > 0 ? Integer.parseInt(args[0]) : 1_000;
        int trials = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 1_000;
        boolean clustered = args.length <= 3 || switch (args[3]) {
            case "clustered" -> true;
            case "scattered" -> false;
            default -> throw new IllegalArgumentException("layout is clustered or scattered, not " + args[3]);
        };
        try (HikariDataSource pool = Pools.open("shard-read-bench", TestPostgres.newDatabase(), null, null, 1)) {
            load(pool, clustered);
            Partition partition = new Partition(1, "bench", "orders", 0, SLOTS_PER_PARTITION - 1, 1, 1);
            Selector selector = Selector.parse("SELECT region, amount FROM orders");
            ShardReader jdbc = new ShardReader(pool, Mode.JDBC);
            ShardReader copy = new ShardReader(pool, Mode.COPY);

            byte[] a = read(jdbc, partition, selector).bytes();
            ShardBatch b = read(copy, partition, selector);
            if (!Arrays.equals(a, b.bytes())) {
                throw new IllegalStateException("the two paths disagree");
            }
            System.out.printf(Locale.ROOT, "partition %d: %d rows (%s), %d batch bytes; java %s, %s, %d cpus%n", partition.id(),
                    b.rowCount(), clustered ? "clustered" : "scattered", b.bytes().length, System.getProperty("java.version"), serverVersion(pool),
                    Runtime.getRuntime().availableProcessors());

            for (int i = 0; i < warmup; i++) {
                read(jdbc, partition, selector);
                read(copy, partition, selector);
            }
            long[] allJdbc = new long[reads * trials];
            long[] allCopy = new long[reads * trials];
            for (int t = 0; t < trials; t++) {
                long[] j = new long[reads];
                long[] c = new long[reads];
                for (int i = 0; i < reads; i++) {
                    if (i % 2 == 0) {
                        j[i] = timed(jdbc, partition, selector);
                        c[i] = timed(copy, partition, selector);
                    } else {
                        c[i] = timed(copy, partition, selector);
                        j[i] = timed(jdbc, partition, selector);
                    }
                }
                System.arraycopy(j, 0, allJdbc, t * reads, reads);
                System.arraycopy(c, 0, allCopy, t * reads, reads);
                System.out.printf(Locale.ROOT, "trial %d: %s | %s%n", t + 1, summary("jdbc", j), summary("copy", c));
            }
            System.out.printf(Locale.ROOT, "all %d reads each way:%n  %s%n  %s%n", reads * trials,
                    summary("jdbc", allJdbc), summary("copy", allCopy));
            System.out.printf(Locale.ROOT, "copy/jdbc: p50 %.2f, mean %.2f%n",
                    percentile(allCopy, 0.50) / percentile(allJdbc, 0.50), mean(allCopy) / mean(allJdbc));
        }
    }

    private static void load(HikariDataSource pool, boolean clustered) throws SQLException, java.io.IOException {
        Random random = new Random(1);
        String[] rowsById = new String[TABLE_ROWS];
        Integer[] ids = new Integer[TABLE_ROWS];
        int[] slots = new int[TABLE_ROWS];
        for (int id = 0; id < TABLE_ROWS; id++) {
            // Partition p holds the ids with id % 16 == p: 3,125 each, one slot in 1,024 for every 16th id.
            slots[id] = (id % PARTITIONS) * SLOTS_PER_PARTITION + (id / PARTITIONS) % SLOTS_PER_PARTITION;
            double amount = Math.round(random.nextDouble() * 100_000) / 100.0;
            rowsById[id] = id + "\t" + REGIONS.get(random.nextInt(REGIONS.size())) + "\t" + amount + "\t" + slots[id] + "\n";
            ids[id] = id;
        }
        if (clustered) {
            // In slot order, as the dev cluster loads: a partition's rows sit together on disk. Otherwise in
            // id order: a partition's rows are every 16th row of the table, on every page.
            Arrays.sort(ids, java.util.Comparator.comparingInt((Integer id) -> slots[id]).thenComparingInt(id -> id));
        }
        StringBuilder rows = new StringBuilder();
        for (int id : ids) {
            rows.append(rowsById[id]);
        }
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("""
                    CREATE TABLE orders (
                        order_id bigint PRIMARY KEY,
                        region text NOT NULL,
                        amount double precision NOT NULL,
                        %s integer NOT NULL)""".formatted(ShardReader.SLOT_COLUMN));
            s.execute("CREATE INDEX orders_by_slot ON orders (" + ShardReader.SLOT_COLUMN + ")");
            c.unwrap(PGConnection.class).getCopyAPI().copyIn(
                    "COPY orders (order_id, region, amount, " + ShardReader.SLOT_COLUMN + ") FROM STDIN",
                    new StringReader(rows.toString()));
            s.execute("VACUUM ANALYZE orders");
        }
    }

    private static String serverVersion(HikariDataSource pool) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW server_version")) {
            rs.next();
            return "PostgreSQL " + rs.getString(1);
        }
    }

    private static ShardBatch read(ShardReader reader, Partition partition, Selector selector) {
        return reader.read(partition, selector, 4096, 8 << 20, Deadline.after(Duration.ofSeconds(10)));
    }

    private static long timed(ShardReader reader, Partition partition, Selector selector) {
        long t0 = System.nanoTime();
        ShardBatch batch = read(reader, partition, selector);
        long t = System.nanoTime() - t0;
        if (batch.rowCount() != TABLE_ROWS / PARTITIONS) {
            throw new IllegalStateException(batch.rowCount() + " rows");
        }
        return t;
    }

    private static String summary(String name, long[] nanos) {
        return String.format(Locale.ROOT, "%s p50 %6.0f µs  p90 %6.0f  p99 %6.0f  mean %6.0f", name,
                percentile(nanos, 0.50) / 1e3, percentile(nanos, 0.90) / 1e3, percentile(nanos, 0.99) / 1e3,
                mean(nanos) / 1e3);
    }

    private static double percentile(long[] nanos, double q) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    }

    private static double mean(long[] nanos) {
        return Arrays.stream(nanos).average().orElse(0);
    }
}
