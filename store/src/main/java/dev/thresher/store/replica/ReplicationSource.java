package dev.thresher.store.replica;

import dev.thresher.store.replica.PgOutput.Message;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;

/**
 * One logical replication connection to a shard database ({@code replication=database}), streaming one
 * temporary {@code pgoutput} slot (protocol version 1, text format, logical messages included) through
 * pgjdbc's replication API. For ONE thread: a replica's applier.
 *
 * <p>The life of a source: {@link #connect}; {@link #createTemporarySlot} (a slot that exports its
 * snapshot); the caller copies the partition under that snapshot on an ordinary connection ({@code BEGIN
 * ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT '...'; COPY ...}) BEFORE the next command on
 * this source, since the snapshot lives only until then; {@link #start} from the slot's consistent point;
 * then {@link #poll} in a loop, applying each message, with {@link #acknowledge} as changes are applied;
 * {@link #close}, which drops the slot with the connection.
 *
 * <p><b>Reading as fresh as a query issued at call start.</b> {@link #currentPosition} on an ordinary
 * connection to the same database returns X; {@link #requestKeepalive}; keep polling and applying. As soon
 * as {@link #serverPosition()} {@code >= X} (unsigned) at a moment when the caller holds no transaction
 * half applied (none begun, or the last one polled has reached its {@link PgOutput.Commit}; a caller that
 * buffers each transaction until its commit is always in that state), every transaction that committed
 * before {@code currentPosition} was called is in what the caller has applied. Inside a transaction the
 * position can already be past X (its own Begin and changes carry positions), but the half-applied
 * transaction must not be shown. Transactions are streamed whole, in commit order.
 *
 * <p><b>Errors.</b> {@link SQLException}s from the driver and the server pass through unchanged; the
 * connection is then useless (every later call but {@link #close} is an {@link IllegalStateException}):
 * close it and build the replica anew. An undecodable message is an
 * {@link IllegalArgumentException} from {@link PgOutput#decode}; misuse (a second slot, {@code poll} before
 * {@code start}, a name that is not a plain identifier) is an {@link IllegalStateException} or
 * {@link IllegalArgumentException}.
 *
 * <p>The connection's user needs the {@code REPLICATION} attribute; the one calling
 * {@link #currentPosition} needs {@code EXECUTE} on {@code pg_logical_emit_message} (superusers have it).
 * The walsender drops the connection if it hears nothing for {@code wal_sender_timeout} (60 s by default):
 * status updates go out from inside {@link #poll}, so poll at least every few seconds.
 */
public final class ReplicationSource implements AutoCloseable {
    /** The prefix of the non-transactional message {@link #currentPosition} may write; appliers ignore it. */
    public static final String FENCE_PREFIX = "thresher_fence";
    /** How often the stream reports its positions to the server, at the latest. */
    static final Duration STATUS_INTERVAL = Duration.ofSeconds(1);

    private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final String POSITION_SQL = """
            WITH p AS MATERIALIZED (SELECT pg_current_wal_insert_lsn() AS insert_lsn)
            SELECT (CASE WHEN insert_lsn > pg_current_wal_flush_lsn()
                         THEN pg_logical_emit_message(false, '%s', ''::text, true)
                         ELSE insert_lsn END)::text
            FROM p""".formatted(FENCE_PREFIX);

    /**
     * The slot {@link #createTemporarySlot} made.
     *
     * @param consistentPoint the LSN from which the slot streams: the snapshot holds every transaction
     *     committed before it, the stream every one committed after
     * @param snapshotName the exported snapshot, for {@code SET TRANSACTION SNAPSHOT}; valid until the
     *     next command on the source
     */
    public record SlotInfo(String slotName, long consistentPoint, String snapshotName) {
        public SlotInfo {
            Objects.requireNonNull(slotName, "slotName");
            Objects.requireNonNull(snapshotName, "snapshotName");
        }
    }

    private final Connection connection;
    private SlotInfo slot;
    private PGReplicationStream stream;
    private long serverPosition;
    private long acknowledged;
    private boolean closed;
    /** An operation failed with an SQLException: the connection is not to be talked to again. */
    private boolean broken;

    private ReplicationSource(Connection connection) {
        this.connection = connection;
    }

    /**
     * Opens a replication connection. {@code timeout} bounds connecting and logging in, and every later
     * wait on the socket before {@link #start} (slot creation waits for the transactions running when it
     * began to end); once streaming, pgjdbc lowers the socket timeout to the status interval. The URL's
     * own parameters must not contradict {@code replication=database}, {@code preferQueryMode=simple}.
     *
     * @param user the user, or null to take it from the URL
     * @param password the password, or null to take it from the URL (or for none)
     */
    public static ReplicationSource connect(String jdbcUrl, String user, String password, Duration timeout)
            throws SQLException {
        Objects.requireNonNull(jdbcUrl, "jdbcUrl");
        long seconds = Math.max(1, (timeout.toMillis() + 999) / 1000);
        int bounded = (int) Math.min(seconds, Integer.MAX_VALUE / 1000);
        Properties properties = new Properties();
        if (user != null) {
            PGProperty.USER.set(properties, user);
        }
        if (password != null) {
            PGProperty.PASSWORD.set(properties, password);
        }
        PGProperty.REPLICATION.set(properties, "database");
        PGProperty.PREFER_QUERY_MODE.set(properties, "simple");
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(properties, "10");
        PGProperty.CONNECT_TIMEOUT.set(properties, bounded);
        PGProperty.LOGIN_TIMEOUT.set(properties, bounded);
        PGProperty.SOCKET_TIMEOUT.set(properties, bounded);
        PGProperty.APPLICATION_NAME.set(properties, "thresher-replica");
        return new ReplicationSource(DriverManager.getConnection(jdbcUrl, properties));
    }

    /**
     * Creates this source's slot: {@code CREATE_REPLICATION_SLOT name TEMPORARY LOGICAL pgoutput
     * (SNAPSHOT 'export')}. The slot lives as long as this connection. Waits for the transactions running
     * when it began to end (bounded by the connect timeout).
     *
     * @param slotName lower-case letters, digits and underscores (not a digit first), at most 63, unique on
     *     the server
     */
    public SlotInfo createTemporarySlot(String slotName) throws SQLException {
        requireOpen();
        if (slot != null) {
            throw new IllegalStateException("this source already has slot " + slot.slotName());
        }
        requireName(slotName, "slot name");
        requireHealthy();
        try (Statement statement = connection.createStatement()) {
            statement.execute("CREATE_REPLICATION_SLOT " + slotName + " TEMPORARY LOGICAL pgoutput (SNAPSHOT 'export')");
            try (ResultSet result = statement.getResultSet()) {
                if (result == null || !result.next()) {
                    throw new SQLException("CREATE_REPLICATION_SLOT " + slotName + " returned no row", "08P01");
                }
                String snapshot = result.getString("snapshot_name");
                if (snapshot == null) {
                    throw new SQLException("CREATE_REPLICATION_SLOT " + slotName + " exported no snapshot", "08P01");
                }
                slot = new SlotInfo(result.getString("slot_name"),
                        LogSequenceNumber.valueOf(result.getString("consistent_point")).asLong(), snapshot);
            }
        } catch (SQLException e) {
            broken = true;
            throw e;
        }
        return slot;
    }

    /**
     * Starts streaming the slot: {@code START_REPLICATION SLOT ... LOGICAL startLsn ("proto_version" '1',
     * "publication_names" 'publication', "messages" 'true')}, reporting positions every
     * {@link #STATUS_INTERVAL}. Ends the exported snapshot.
     *
     * @param publication one publication, a plain lower-case identifier
     * @param startLsn where to start, normally the slot's {@link SlotInfo#consistentPoint()} (the server
     *     never starts before it); also where {@link #serverPosition()} starts
     */
    public void start(String publication, long startLsn) throws SQLException {
        requireOpen();
        if (slot == null) {
            throw new IllegalStateException("create the slot before starting");
        }
        if (stream != null) {
            throw new IllegalStateException("already streaming");
        }
        requireName(publication, "publication");
        requireHealthy();
        try {
            stream = connection.unwrap(PGConnection.class).getReplicationAPI()
                    .replicationStream()
                    .logical()
                    .withSlotName(slot.slotName())
                    .withStartPosition(LogSequenceNumber.valueOf(startLsn))
                    .withSlotOption("proto_version", "1")
                    .withSlotOption("publication_names", publication)
                    .withSlotOption("messages", "true")
                    .withStatusInterval((int) STATUS_INTERVAL.toMillis(), TimeUnit.MILLISECONDS)
                    .withAutomaticFlush(false)
                    .start();
        } catch (SQLException e) {
            broken = true;
            throw e;
        }
        serverPosition = startLsn;
    }

    /**
     * The next message, or null when none has arrived; never blocks on an idle stream (pgjdbc's
     * {@code readPending()}: at most a 1 ms look at the socket). Keepalives are consumed here, and the
     * periodic status update goes out from here.
     *
     * @throws SQLException when the connection failed, the server ended the stream or an error came
     * @throws IllegalArgumentException when a message cannot be decoded
     */
    public Message poll() throws SQLException {
        PGReplicationStream s = requireStreaming();
        ByteBuffer payload;
        try {
            payload = s.readPending();
        } catch (SQLException e) {
            broken = true;
            throw e;
        }
        // Keepalives set it to the end of WAL they report, XLogData to the WAL position in its header.
        long received = s.getLastReceiveLSN().asLong();
        if (Long.compareUnsigned(received, serverPosition) > 0) {
            serverPosition = received;
        }
        if (payload == null) {
            if (s.isClosed()) {
                broken = true;
                throw new SQLException("the server ended the replication stream of slot " + slot.slotName(), "08006");
            }
            return null;
        }
        return PgOutput.decode(payload);
    }

    /**
     * A position P such that every transaction whose commit record ends at or before P has been returned
     * whole by {@link #poll} (or, before the first message, lies in the slot's snapshot when streaming
     * started at its consistent point). Never decreases. Compare unsigned.
     *
     * <p>It is the highest of: the WAL end of every keepalive polled (the end of the last WAL record the
     * server decoded; it sends a keepalive only after every message that record produced) and the WAL
     * position in the header of every message polled (for pgoutput: the start of the WAL record of the
     * change a Begin, Relation or change message goes with, the end of the commit record for a Commit, the
     * end of its own record for a logical message; the server decodes WAL in order and sends each
     * transaction whole at its commit, so every transaction whose commit ends at or before that position
     * was sent earlier). pgjdbc keeps the latter in {@code getLastReceiveLSN()} and the former in the
     * same field when higher; a keepalive followed in the same read by data is thus only reflected once
     * that data's transaction has been polled to its Commit, whose position is past the keepalive's.
     *
     * <p>With nothing published changing, the server reports the end of the WAL it has decoded after
     * {@link #requestKeepalive}, and on its own whenever it runs out of flushed WAL past the position this
     * stream last reported receiving; so a position from {@link #currentPosition} is reached without
     * waiting for any change.
     */
    public long serverPosition() {
        return serverPosition;
    }

    /**
     * Asks the server for a keepalive now (a status update with the reply-requested flag); it arrives,
     * like every message, through {@link #poll}.
     */
    public void requestKeepalive() throws SQLException {
        PGReplicationStream s = requireStreaming();
        try {
            s.forceUpdateStatus();
        } catch (SQLException e) {
            broken = true;
            throw e;
        }
    }

    /**
     * Reports {@code lsn} as flushed and applied, so the server may recycle the WAL the slot holds before
     * it; sent with the next status update (within {@link #STATUS_INTERVAL}, from {@link #poll}). A lower
     * value than one acknowledged before is ignored.
     */
    public void acknowledge(long lsn) throws SQLException {
        PGReplicationStream s = requireStreaming();
        if (Long.compareUnsigned(lsn, acknowledged) > 0) {
            acknowledged = lsn;
            LogSequenceNumber position = LogSequenceNumber.valueOf(lsn);
            s.setFlushedLSN(position);
            s.setAppliedLSN(position);
        }
    }

    /** The slot this source created, or null before {@link #createTemporarySlot}. */
    public SlotInfo slot() {
        return slot;
    }

    /**
     * Ends streaming (CopyDone) and closes the connection; the server drops the temporary slot as the
     * walsender exits, shortly after. Closing twice does nothing. The connection is closed even when
     * ending the stream fails, and the first failure is thrown; after an earlier operation failed with an
     * {@link SQLException} (the connection lost, the stream ended) the socket is just closed, quietly.
     */
    @Override
    public void close() throws SQLException {
        if (closed) {
            return;
        }
        closed = true;
        if (broken) {
            try {
                connection.close();
            } catch (SQLException alreadyReported) {
                // The failure that broke the connection was thrown when it happened.
            }
            return;
        }
        SQLException failure = null;
        if (stream != null) {
            try {
                stream.close();
            } catch (SQLException e) {
                failure = e;
            }
        }
        try {
            connection.close();
        } catch (SQLException e) {
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * The position a read must wait for to see every transaction committed before this call, on an
     * ordinary connection to the database the source streams (autocommit or not; the statement writes no
     * transactional state): in one statement, the current WAL insert position, and when WAL has been
     * inserted but not yet flushed (asynchronous commits: a walsender only sends flushed WAL, and the WAL
     * writer may take up to three {@code wal_writer_delay}s) a non-transactional logical message with
     * prefix {@link #FENCE_PREFIX}, flushed at once with everything before it ({@code
     * pg_logical_emit_message(false, 'thresher_fence', '', true)}, PostgreSQL 17), whose end is returned.
     *
     * <p>Every commit that completed before the call has its commit record before the insert position
     * read first. When nothing is unflushed, that position is the end of the last WAL record, which is
     * exactly where the server's decoding stops, so a keepalive reports it. Edge: when the last record
     * ended exactly on a WAL page boundary, the insert position points past the next page's header, which
     * no record ends at; that position is above the flush position, so a fence is written and its end
     * returned instead. A fence arrives as a {@link PgOutput.LogicalMessage} outside any transaction
     * (every source of the database gets every fence); its position alone already satisfies the wait.
     */
    public static long currentPosition(Connection ordinary) throws SQLException {
        try (Statement statement = ordinary.createStatement(); ResultSet result = statement.executeQuery(POSITION_SQL)) {
            if (!result.next()) {
                throw new SQLException("the WAL position query returned no row", "XX000");
            }
            return LogSequenceNumber.valueOf(result.getString(1)).asLong();
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("the replication source is closed");
        }
    }

    private void requireHealthy() {
        if (broken) {
            throw new IllegalStateException("the replication connection failed; close this source");
        }
    }

    private PGReplicationStream requireStreaming() {
        requireOpen();
        requireHealthy();
        if (stream == null) {
            throw new IllegalStateException("the replication source is not streaming; call start first");
        }
        return stream;
    }

    private static void requireName(String name, String what) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(what + " must be a plain lower-case identifier of at most 63 bytes: " + name);
        }
    }
}
