package dev.thresher.store.replica;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.store.TestPostgres;
import dev.thresher.store.replica.PgOutput.Begin;
import dev.thresher.store.replica.PgOutput.Commit;
import dev.thresher.store.replica.PgOutput.Delete;
import dev.thresher.store.replica.PgOutput.Insert;
import dev.thresher.store.replica.PgOutput.LogicalMessage;
import dev.thresher.store.replica.PgOutput.Message;
import dev.thresher.store.replica.PgOutput.Relation;
import dev.thresher.store.replica.PgOutput.RelationColumn;
import dev.thresher.store.replica.PgOutput.Truncate;
import dev.thresher.store.replica.PgOutput.Update;
import dev.thresher.store.replica.ReplicationSource.SlotInfo;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.replication.LogSequenceNumber;

/**
 * A temporary pgoutput slot streamed from a real PostgreSQL 17 ({@code wal_level=logical}): the exported
 * snapshot against the stream, every change kind decoded to the text PostgreSQL prints, commit order,
 * the freshness position with and without changes (also under asynchronous commit with a slow WAL
 * writer), and the slot's end with its connection.
 */
class ReplicationSourceTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final AtomicInteger SLOTS = new AtomicInteger();
    /** The text forms of an items row, as PostgreSQL's output functions print them. */
    private static final String ITEM_TEXT = "id::text, name, score::text, amount::text, boolout(flag)::text, data::text, note";

    private String url;
    private Connection db;
    private ReplicationSource source;

    @BeforeEach
    void schema() throws SQLException {
        url = TestPostgres.newDatabase();
        db = DriverManager.getConnection(url);
        try (Statement s = db.createStatement()) {
            s.execute("""
                    CREATE TABLE items (id int8 PRIMARY KEY, name text NOT NULL, score float8 NOT NULL,
                        amount numeric NOT NULL, flag bool NOT NULL, data bytea NOT NULL, note text);
                    CREATE TABLE events (region text NOT NULL, at int4 NOT NULL, id int8 NOT NULL, payload text,
                        PRIMARY KEY (region, at, id)) PARTITION BY LIST (region);
                    CREATE TABLE events_eu PARTITION OF events FOR VALUES IN ('eu') PARTITION BY RANGE (at);
                    CREATE TABLE events_eu_low PARTITION OF events_eu FOR VALUES FROM (MINVALUE) TO (100);
                    CREATE TABLE events_eu_high PARTITION OF events_eu FOR VALUES FROM (100) TO (MAXVALUE);
                    CREATE TABLE events_us PARTITION OF events FOR VALUES IN ('us');
                    CREATE TABLE audit (id int8, what text);
                    ALTER TABLE audit REPLICA IDENTITY FULL;
                    CREATE TABLE docs (id int8 PRIMARY KEY, body text, n int4);
                    ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
                    CREATE TABLE unpublished (id int8);
                    CREATE PUBLICATION pub FOR TABLE items, events, audit, docs WITH (publish_via_partition_root = true);
                    """);
        }
    }

    @AfterEach
    void close() throws SQLException {
        if (source != null) {
            source.close();
        }
        db.close();
    }

    private static String slotName() {
        return "replica_test_" + SLOTS.incrementAndGet();
    }

    private ReplicationSource connect() throws SQLException {
        return ReplicationSource.connect(url, null, null, Duration.ofSeconds(30));
    }

    private void sql(String... statements) throws SQLException {
        try (Statement s = db.createStatement()) {
            for (String statement : statements) {
                s.execute(statement);
            }
        }
    }

    /** Runs the statements as one transaction on the shared connection, committed. */
    private void transaction(String... statements) throws SQLException {
        db.setAutoCommit(false);
        try {
            sql(statements);
            db.commit();
        } finally {
            db.setAutoCommit(true);
        }
    }

    private List<String> row(String query) throws SQLException {
        try (Statement s = db.createStatement(); ResultSet r = s.executeQuery(query)) {
            assertThat(r.next()).as("a row from %s", query).isTrue();
            List<String> out = new ArrayList<>();
            for (int i = 1; i <= r.getMetaData().getColumnCount(); i++) {
                out.add(r.getString(i));
            }
            assertThat(r.next()).isFalse();
            return out;
        }
    }

    private int oid(String table) throws SQLException {
        return Integer.parseInt(row("SELECT '" + table + "'::regclass::oid::text").get(0));
    }

    private static List<String> strings(Tuple t) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) {
            out.add(t.isNull(i) ? null : t.isUnchanged(i) ? "<unchanged>" : new String(t.value(i), UTF_8));
        }
        return out;
    }

    private static String lsn(long position) {
        return LogSequenceNumber.valueOf(position).asString();
    }

    /** A transaction as streamed: its Begin, changes and Commit. */
    private record Txn(Begin begin, List<Message> changes, Commit commit) {
        List<Message> changes(Class<? extends Message> kind) {
            return changes.stream().filter(kind::isInstance).toList();
        }

        /**
         * Its row changes, in order, without the Relation messages among them: pgoutput sends a table's shape again
         * whenever its cached description was invalidated (an autovacuum or analyze of it, say), before any change.
         */
        List<Message> rowChanges() {
            return changes.stream().filter(m -> !(m instanceof Relation)).toList();
        }
    }

    /** Everything polled, split into whole transactions and messages outside any. */
    private static final class Polled {
        final List<Txn> transactions = new ArrayList<>();
        final List<Message> outside = new ArrayList<>();
        final Map<Integer, Relation> relations = new TreeMap<>();
        private Begin open;
        private List<Message> body;

        boolean inTransaction() {
            return open != null;
        }

        void add(Message m) {
            switch (m) {
                case Begin b -> {
                    assertThat(open).as("a Begin inside a transaction").isNull();
                    open = b;
                    body = new ArrayList<>();
                }
                case Commit c -> {
                    assertThat(open).as("a Commit outside a transaction").isNotNull();
                    assertThat(c.commitLsn()).isEqualTo(open.finalLsn());
                    assertThat(Long.compareUnsigned(c.endLsn(), c.commitLsn())).isPositive();
                    transactions.add(new Txn(open, List.copyOf(body), c));
                    open = null;
                    body = null;
                }
                default -> {
                    if (m instanceof Relation r) {
                        relations.put(r.oid(), r);
                    }
                    if (open != null) {
                        body.add(m);
                    } else {
                        outside.add(m);
                    }
                }
            }
        }

        List<LogicalMessage> fences() {
            return outside.stream().filter(LogicalMessage.class::isInstance).map(LogicalMessage.class::cast)
                    .filter(m -> m.prefix().equals(ReplicationSource.FENCE_PREFIX)).toList();
        }
    }

    /**
     * Takes a position on the ordinary connection, asks for a keepalive and polls until the source has
     * passed it outside any transaction: then everything committed before the position must be in {@code into}.
     */
    private long catchUp(Polled into) throws SQLException {
        long target = ReplicationSource.currentPosition(db);
        source.requestKeepalive();
        pollUntil(into, "server position " + lsn(target), WAIT,
                p -> Long.compareUnsigned(source.serverPosition(), target) >= 0 && !p.inTransaction());
        return target;
    }

    private void pollUntil(Polled into, String what, Duration timeout, Predicate<Polled> done) {
        TestPostgres.await(timeout, what, () -> {
            try {
                for (Message m = source.poll(); m != null; m = source.poll()) {
                    into.add(m);
                }
            } catch (SQLException e) {
                throw new AssertionError(e);
            }
            return done.test(into);
        });
    }

    private SlotInfo startStreaming() throws SQLException {
        source = connect();
        SlotInfo slot = source.createTemporarySlot(slotName());
        source.start("pub", slot.consistentPoint());
        return slot;
    }

    @Test
    void theSnapshotHoldsTheRowsBeforeTheSlotAndTheStreamEveryChangeAfterInCommitOrder() throws Exception {
        sql("""
                INSERT INTO items VALUES
                  (1, 'plain', 0.1, 12345678901234567890.000100, true, '\\x00ff10', NULL),
                  (2, E'tab\\there\\nline \\\\ back', -1e300, -0.5, false, '', 'ünïcødé €'),
                  (3, '', 'NaN', 'NaN', true, '\\x5c0a', '')""",
                "INSERT INTO events VALUES ('eu', 5, 1, 'low'), ('eu', 500, 2, 'high'), ('us', 7, 3, NULL)");

        source = connect();
        SlotInfo slot = source.createTemporarySlot(slotName());
        assertThat(slot.slotName()).startsWith("replica_test_");
        assertThat(slot.snapshotName()).isNotBlank();
        assertThat(slot.consistentPoint()).isNotZero();
        assertThat(source.slot()).isEqualTo(slot);
        // Committed after the slot: not in its snapshot, so it must arrive through the stream.
        sql("INSERT INTO items VALUES (10, 'after the slot', 2.5, 1, false, '\\x01', NULL)");

        List<List<String>> copied = new ArrayList<>();
        List<List<String>> selected = new ArrayList<>();
        List<List<String>> copiedEvents = new ArrayList<>();
        try (Connection reader = DriverManager.getConnection(url)) {
            reader.setAutoCommit(false);
            try (Statement s = reader.createStatement()) {
                s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
                s.execute("SET TRANSACTION SNAPSHOT '" + slot.snapshotName() + "'");
                var copy = reader.unwrap(PGConnection.class).getCopyAPI();
                copy.copyOut("COPY (SELECT id, name, score, amount, flag, data, note FROM items ORDER BY id) TO STDOUT",
                        CopyText.rowSink(7, t -> copied.add(strings(t))));
                copy.copyOut("COPY (SELECT region, at, id, payload FROM events ORDER BY id) TO STDOUT",
                        CopyText.rowSink(4, t -> copiedEvents.add(strings(t))));
                try (ResultSet r = s.executeQuery("SELECT " + ITEM_TEXT + " FROM items ORDER BY id")) {
                    while (r.next()) {
                        List<String> values = new ArrayList<>();
                        for (int i = 1; i <= 7; i++) {
                            values.add(r.getString(i));
                        }
                        selected.add(values);
                    }
                }
            }
            reader.rollback();
        }
        assertThat(copied).hasSize(3).isEqualTo(selected);
        assertThat(copied.get(0)).containsExactly("1", "plain", "0.1", "12345678901234567890.000100", "t", "\\x00ff10", null);
        assertThat(copied.get(1)).containsExactly(
                "2", "tab\there\nline \\ back", "-1e+300", "-0.5", "f", "\\x", "ünïcødé €");
        assertThat(copied.get(2)).containsExactly("3", "", "NaN", "NaN", "t", "\\x5c0a", "");
        assertThat(copiedEvents).containsExactly(
                List.of("eu", "5", "1", "low"), List.of("eu", "500", "2", "high"), Arrays.asList("us", "7", "3", null));

        source.start("pub", slot.consistentPoint());
        Polled polled = new Polled();

        List<String> inserted = row("INSERT INTO items VALUES (11, E'new\\tline', 1.5e-7, 0.000, false, "
                + "'\\xdeadbeef', 'x') RETURNING " + ITEM_TEXT);
        db.setAutoCommit(false);
        List<String> updated = row("UPDATE items SET score = 'Infinity', note = NULL WHERE id = 1 RETURNING " + ITEM_TEXT);
        sql("INSERT INTO items VALUES (12, 'same transaction', 3, 3, true, '\\x', NULL)");
        db.commit();
        sql("INSERT INTO items VALUES (99, 'rolled back', 0, 0, true, '\\x', NULL)",
                "INSERT INTO events VALUES ('us', 9, 99, 'rolled back')");
        db.rollback();
        db.setAutoCommit(true);
        sql("DELETE FROM items WHERE id = 2");
        List<String> rekeyed = row("UPDATE items SET id = 30 WHERE id = 3 RETURNING " + ITEM_TEXT);
        transaction("INSERT INTO events VALUES ('eu', 50, 4, 'eu low'), ('eu', 150, 5, 'eu high'), ('us', 1, 6, 'us')",
                "UPDATE events SET payload = 'changed' WHERE id = 1",
                "DELETE FROM events WHERE id = 3");
        sql("UPDATE events SET at = 250 WHERE id = 1"); // moves the row to another partition
        transaction("INSERT INTO audit VALUES (1, 'one'), (2, NULL)",
                "UPDATE audit SET what = 'uno' WHERE id = 1",
                "DELETE FROM audit WHERE id = 2");
        String body = "b".repeat(20_000);
        sql("INSERT INTO docs VALUES (1, '" + body + "', 1)", "UPDATE docs SET n = 2 WHERE id = 1");
        sql("INSERT INTO unpublished VALUES (1)");
        sql("TRUNCATE items, audit RESTART IDENTITY");
        catchUp(polled);

        int items = oid("items");
        int events = oid("events");
        int audit = oid("audit");
        int docs = oid("docs");
        assertThat(polled.relations.get(items)).isEqualTo(new Relation(items, "public", "items", 'd', List.of(
                new RelationColumn(true, "id", 20, -1), new RelationColumn(false, "name", 25, -1),
                new RelationColumn(false, "score", 701, -1), new RelationColumn(false, "amount", 1700, -1),
                new RelationColumn(false, "flag", 16, -1), new RelationColumn(false, "data", 17, -1),
                new RelationColumn(false, "note", 25, -1))));
        assertThat(polled.relations.get(events)).isEqualTo(new Relation(events, "public", "events", 'd', List.of(
                new RelationColumn(true, "region", 25, -1), new RelationColumn(true, "at", 23, -1),
                new RelationColumn(true, "id", 20, -1), new RelationColumn(false, "payload", 25, -1))));
        assertThat(polled.relations.get(audit).replicaIdentity()).isEqualTo('f');
        // A partition's own shape is sent too, after its root's; its changes name the root.
        assertThat(polled.relations).containsOnlyKeys(items, events, audit, docs, oid("events_eu_low"),
                oid("events_eu_high"), oid("events_us"));

        List<Txn> txns = polled.transactions;
        assertThat(txns).hasSize(11);
        for (int i = 1; i < txns.size(); i++) {
            assertThat(Long.compareUnsigned(txns.get(i).commit().endLsn(), txns.get(i - 1).commit().endLsn()))
                    .as("commit order").isPositive();
        }

        // The row committed between the slot and the COPY.
        assertThat(txns.get(0).changes(Insert.class)).singleElement().satisfies(m -> {
            assertThat(((Insert) m).relation()).isEqualTo(items);
            assertThat(strings(((Insert) m).row())).containsExactly("10", "after the slot", "2.5", "1", "f", "\\x01", null);
        });
        assertThat(strings(((Insert) txns.get(1).changes(Insert.class).get(0)).row())).isEqualTo(inserted);
        assertThat(inserted).containsExactly("11", "new\tline", "1.5e-07", "0.000", "f", "\\xdeadbeef", "x");

        List<Message> two = txns.get(2).rowChanges();
        assertThat(two).hasSize(2);
        Update update = (Update) two.get(0);
        assertThat(update.relation()).isEqualTo(items);
        assertThat(update.old()).isNull();
        assertThat(strings(update.row())).isEqualTo(updated);
        assertThat(updated).containsExactly(
                "1", "plain", "Infinity", "12345678901234567890.000100", "t", "\\x00ff10", null);
        assertThat(strings(((Insert) two.get(1)).row()).get(1)).isEqualTo("same transaction");

        Delete delete = (Delete) txns.get(3).rowChanges().get(0);
        assertThat(delete.relation()).isEqualTo(items);
        assertThat(delete.oldIsKey()).isTrue();
        assertThat(strings(delete.old())).containsExactly("2", null, null, null, null, null, null);

        Update rekey = (Update) txns.get(4).rowChanges().get(0);
        assertThat(rekey.oldIsKey()).isTrue();
        assertThat(strings(rekey.old())).containsExactly("3", null, null, null, null, null, null);
        assertThat(strings(rekey.row())).isEqualTo(rekeyed);

        // Partitions' changes arrive as their root's.
        List<Message> eventChanges = txns.get(5).rowChanges();
        assertThat(eventChanges).hasSize(5).allSatisfy(m -> assertThat(relationOf(m)).isEqualTo(events));
        assertThat(eventChanges.subList(0, 3)).map(m -> strings(((Insert) m).row())).containsExactly(
                List.of("eu", "50", "4", "eu low"), List.of("eu", "150", "5", "eu high"), List.of("us", "1", "6", "us"));
        assertThat(strings(((Update) eventChanges.get(3)).row())).containsExactly("eu", "5", "1", "changed");
        assertThat(strings(((Delete) eventChanges.get(4)).old())).containsExactly("us", "7", "3", null);
        // A row moving between partitions: the old key deleted, the new row inserted, both as the root's.
        List<Message> moved = txns.get(6).rowChanges();
        assertThat(moved).hasSize(2);
        assertThat(strings(((Delete) moved.get(0)).old())).containsExactly("eu", "5", "1", null);
        assertThat(strings(((Insert) moved.get(1)).row())).containsExactly("eu", "250", "1", "changed");
        assertThat(moved).allSatisfy(m -> assertThat(relationOf(m)).isEqualTo(events));

        // Replica identity full: old rows are whole ('O').
        List<Message> auditChanges = txns.get(7).rowChanges();
        assertThat(auditChanges).hasSize(4);
        Update full = (Update) auditChanges.get(2);
        assertThat(full.oldIsKey()).isFalse();
        assertThat(strings(full.old())).containsExactly("1", "one");
        assertThat(strings(full.row())).containsExactly("1", "uno");
        Delete fullDelete = (Delete) auditChanges.get(3);
        assertThat(fullDelete.oldIsKey()).isFalse();
        assertThat(strings(fullDelete.old())).containsExactly("2", null);

        // An update leaving a TOASTed value alone sends it as unchanged.
        assertThat(strings(((Insert) txns.get(8).changes(Insert.class).get(0)).row())).containsExactly("1", body, "1");
        Update toast = (Update) txns.get(9).rowChanges().get(0);
        assertThat(toast.row().isUnchanged(1)).isTrue();
        assertThat(strings(toast.row())).containsExactly("1", "<unchanged>", "2");

        Truncate truncate = (Truncate) txns.get(10).changes(Truncate.class).get(0);
        assertThat(truncate.options()).isEqualTo(Truncate.RESTART_IDENTITY);
        assertThat(truncate.relations()).containsExactlyInAnyOrder(items, audit);

        // Nothing rolled back, nothing unpublished, nothing from before the slot.
        assertThat(txns).flatMap(Txn::changes).noneMatch(m -> m instanceof Insert i
                && (strings(i.row()).contains("rolled back") || strings(i.row()).contains("plain")));
    }

    private static int relationOf(Message m) {
        return switch (m) {
            case Insert i -> i.relation();
            case Update u -> u.relation();
            case Delete d -> d.relation();
            default -> throw new AssertionError("not a row change: " + m);
        };
    }

    @Test
    void transactionsArriveInCommitOrderNotStartOrder() throws Exception {
        startStreaming();
        try (Connection first = DriverManager.getConnection(url); Connection second = DriverManager.getConnection(url)) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            try (Statement a = first.createStatement(); Statement b = second.createStatement()) {
                a.execute("INSERT INTO items VALUES (40, 'began first', 1, 1, true, '\\x', NULL)");
                b.execute("INSERT INTO items VALUES (41, 'began second', 1, 1, true, '\\x', NULL)");
                b.execute("INSERT INTO items VALUES (42, 'began second', 1, 1, true, '\\x', NULL)");
                a.execute("INSERT INTO items VALUES (43, 'began first', 1, 1, true, '\\x', NULL)");
                second.commit();
                first.commit();
            }
        }
        Polled polled = new Polled();
        catchUp(polled);
        assertThat(polled.transactions).map(t -> t.changes(Insert.class).stream()
                .map(m -> strings(((Insert) m).row()).get(0)).toList())
                .containsExactly(List.of("41", "42"), List.of("40", "43"));
    }

    @Test
    void aPositionIsReachedWithNoPublishedChangeAtAll() throws Exception {
        startStreaming();
        // Commits flushed as they return: the position is then mostly the end of WAL as it is, no fence
        // written, and only a keepalive can report it.
        sql("SET synchronous_commit = on");
        Polled polled = new Polled();
        int unfenced = 0;
        for (int round = 0; round < 6; round++) {
            if (round % 2 == 0) {
                sql("INSERT INTO unpublished VALUES (" + round + ")");
            }
            long target = catchUp(polled);
            assertThat(Long.compareUnsigned(source.serverPosition(), target)).isNotNegative();
            if (polled.fences().stream().noneMatch(f -> f.lsn() == target)) {
                unfenced++;
            }
        }
        assertThat(unfenced).as("positions reached through a keepalive alone").isPositive();
        assertThat(polled.transactions).isEmpty();
        assertThat(polled.outside).allSatisfy(m -> assertThat(m).isInstanceOf(LogicalMessage.class));
        assertThat(polled.fences()).hasSameSizeAs(polled.outside);
    }

    @Test
    void underAsynchronousCommitThePositionIsFlushedAtOnceNotByTheWalWriter() throws Exception {
        startStreaming();
        sql("SET synchronous_commit = off");
        // A WAL writer that flushes only every 10 s: reaching a position sooner needs the fence's own flush.
        sql("ALTER SYSTEM SET wal_writer_delay = '10s'", "SELECT pg_reload_conf()");
        try {
            Polled polled = new Polled();
            boolean fenced = false;
            for (int attempt = 0; attempt < 5 && !fenced; attempt++) {
                // Repeated until a commit is left unflushed (an idle WAL writer flushes the first one it is woken for).
                boolean pending = false;
                for (int i = 0; i < 50 && !pending; i++) {
                    sql("INSERT INTO items VALUES (" + (1000 * attempt + i) + ", 'async', 1, 1, true, '\\x', NULL)");
                    pending = row("SELECT pg_current_wal_insert_lsn() > pg_current_wal_flush_lsn()").get(0).equals("t");
                }
                assertThat(pending).as("an asynchronous commit left unflushed").isTrue();
                long target = ReplicationSource.currentPosition(db);
                long flushed = LogSequenceNumber.valueOf(row("SELECT pg_current_wal_flush_lsn()::text").get(0)).asLong();
                assertThat(Long.compareUnsigned(flushed, target)).as("flushed by the position itself").isNotNegative();
                source.requestKeepalive();
                // Well within the WAL writer's 10 s.
                pollUntil(polled, "server position " + lsn(target) + " under asynchronous commit", Duration.ofSeconds(4),
                        p -> Long.compareUnsigned(source.serverPosition(), target) >= 0 && !p.inTransaction());
                fenced = polled.fences().stream().anyMatch(f -> f.lsn() == target);
            }
            assertThat(fenced).as("a fence was written for an unflushed commit and streamed at its position").isTrue();
            assertThat(polled.transactions).isNotEmpty().allSatisfy(t -> assertThat(t.changes(Insert.class))
                    .allSatisfy(m -> assertThat(strings(((Insert) m).row()).get(1)).isEqualTo("async")));
            int committed = Integer.parseInt(row("SELECT count(*)::text FROM items").get(0));
            assertThat(polled.transactions).hasSize(committed);
        } finally {
            sql("ALTER SYSTEM RESET wal_writer_delay", "SELECT pg_reload_conf()");
        }
    }

    @Test
    void acknowledgedPositionsReachTheSlot() throws Exception {
        SlotInfo slot = startStreaming();
        sql("INSERT INTO items VALUES (1, 'a', 1, 1, true, '\\x', NULL)");
        Polled polled = new Polled();
        long target = catchUp(polled);
        source.acknowledge(target);
        source.acknowledge(1); // lower: ignored
        String query = "SELECT confirmed_flush_lsn >= '" + lsn(target) + "'::pg_lsn FROM pg_replication_slots"
                + " WHERE slot_name = '" + slot.slotName() + "'";
        pollUntil(polled, "confirmed_flush_lsn of " + slot.slotName() + " at " + lsn(target), WAIT, p -> {
            try {
                return row(query).get(0).equals("t");
            } catch (SQLException e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    void closingTheSourceDropsTheTemporarySlot() throws Exception {
        SlotInfo slot = startStreaming();
        assertThat(row("SELECT temporary::text, active::text, plugin FROM pg_replication_slots WHERE slot_name = '"
                + slot.slotName() + "'")).containsExactly("true", "true", "pgoutput");
        source.close();
        source.close();
        awaitSlotGone(slot.slotName());

        // A slot never streamed goes too.
        ReplicationSource idle = connect();
        SlotInfo other;
        try {
            other = idle.createTemporarySlot(slotName());
            assertThat(slotCount(other.slotName())).isEqualTo(1);
        } finally {
            idle.close();
        }
        awaitSlotGone(other.slotName());
    }

    private int slotCount(String slot) throws SQLException {
        try (PreparedStatement s = db.prepareStatement("SELECT count(*) FROM pg_replication_slots WHERE slot_name = ?")) {
            s.setString(1, slot);
            try (ResultSet r = s.executeQuery()) {
                r.next();
                return r.getInt(1);
            }
        }
    }

    private void awaitSlotGone(String slot) {
        TestPostgres.await(WAIT, "slot " + slot + " dropped", () -> {
            try {
                return slotCount(slot) == 0;
            } catch (SQLException e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    void terminatingTheWalsenderMakesPollThrow() throws Exception {
        SlotInfo slot = startStreaming();
        assertThat(row("SELECT pg_terminate_backend(active_pid)::text FROM pg_replication_slots WHERE slot_name = '"
                + slot.slotName() + "'")).containsExactly("true");
        Exception[] thrown = new Exception[1];
        TestPostgres.await(WAIT, "poll to throw once its walsender is gone", () -> {
            try {
                source.poll();
                return false;
            } catch (Exception e) {
                thrown[0] = e;
                return true;
            }
        });
        assertThat(thrown[0]).isInstanceOf(SQLException.class);
        awaitSlotGone(slot.slotName());
    }

    @Test
    void misuseIsRefused() throws Exception {
        source = connect();
        assertThatThrownBy(() -> source.start("pub", 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> source.poll()).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> source.createTemporarySlot("Bad-Name")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> source.createTemporarySlot("x; DROP")).isInstanceOf(IllegalArgumentException.class);
        SlotInfo slot = source.createTemporarySlot(slotName());
        assertThatThrownBy(() -> source.createTemporarySlot(slotName())).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> source.start("pub' , x '1", slot.consistentPoint()))
                .isInstanceOf(IllegalArgumentException.class);
        source.close();
        assertThatThrownBy(() -> source.start("pub", slot.consistentPoint())).isInstanceOf(IllegalStateException.class);
    }
}
