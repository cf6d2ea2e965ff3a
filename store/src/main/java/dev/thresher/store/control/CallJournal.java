package dev.thresher.store.control;

import dev.thresher.bindings.Binding;
import dev.thresher.errors.ErrorCode;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The call journal: invocation records, the journal of component outcomes by (tenant, wire identity), the shard slots
 * published from them and the reduce leases, with their retention. The one writer of {@code invocations},
 * {@code journal}, {@code shard_runs} and {@code reduce_leases}; the coordinator reaches it through its
 * {@code CallStore}, the leader side through its {@code ShardRunJournal}, the janitor directly. The fenced publication of a
 * host request's slots is {@link ShardRunPublisher}'s, called from here.
 * Every method is one short transaction; callers run them off event loops.
 */
public final class CallJournal {
    private final ControlSql sql;
    private final ShardRunPublisher slots;

    public CallJournal(DataSource db) {
        this.sql = new ControlSql(db);
        this.slots = new ShardRunPublisher(sql);
    }

    // ---- invocations ------------------------------------------------------------------------------

    /**
     * Records the start of a call, provided {@code binding} is still the binding's current version:
     * a node that resolved the binding from its cache learns here, in the same statement, that a newer
     * version exists (and nothing is recorded).
     *
     * The call's deadline is stored by the control database's clock ({@code clock_timestamp()} plus
     * {@code remainingMs}): the one clock every node judges it by (slot and result publication are fenced by
     * it, and a leader starts no guest past it).
     *
     * @param remainingMs the call's time left, on the coordinator's clock, as the statement is sent
     * @return the deadline stored, in microseconds since the epoch on the control database's clock; empty when
     *     nothing was recorded because the binding has a newer version
     */
    public OptionalLong insertInvocation(UUID callId, Binding binding, String principal, String coordinatorHost,
                                         int shardCount, long remainingMs, long deadlineMs) {
        return sql.queryOne("""
                INSERT INTO invocations (call_id, tenant, binding_name, binding_version, package_digest, principal,
                  coordinator_host, shard_count, deadline_at, deadline_ms, state)
                SELECT ?, ?, ?, ?, ?, ?, ?, ?, clock_timestamp() + make_interval(secs => ? / 1000.0), ?, 'running'
                WHERE ? = (SELECT max(b.version) FROM bindings b WHERE b.tenant = ? AND b.name = ?)
                RETURNING (extract(epoch FROM deadline_at) * 1000000)::bigint""", rs -> rs.getLong(1),
                callId, binding.tenant(), binding.name(), binding.version(), binding.componentDigest(), principal,
                coordinatorHost, shardCount, remainingMs, deadlineMs,
                binding.version(), binding.tenant(), binding.name())
                .map(OptionalLong::of).orElse(OptionalLong.empty());
    }

    /** Records a call refused before it was recorded as running (at planning), in one statement. */
    public void insertRefusedInvocation(UUID callId, Binding binding, String principal, String coordinatorHost,
                                        long remainingMs, long deadlineMs, ErrorCode code, String message) {
        sql.update("""
                INSERT INTO invocations (call_id, tenant, binding_name, binding_version, package_digest, principal,
                  coordinator_host, shard_count, deadline_at, deadline_ms, state, error_code, error_message, finished_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, 0, clock_timestamp() + make_interval(secs => ? / 1000.0), ?, 'failed', ?, ?,
                  clock_timestamp())""",
                callId, binding.tenant(), binding.name(), binding.version(), binding.componentDigest(), principal,
                coordinatorHost, remainingMs, deadlineMs, code.code(), message);
    }

    /**
     * Records a call's failure unless it finished already, and says whether it had published its result: the result,
     * when the invocation was {@code succeeded} (a publication whose commit its coordinator never heard answered), else
     * empty.
     */
    public Optional<String> failUnlessPublished(UUID callId, ErrorCode code, String message, int attempts) {
        return fail(callId, code, message, attempts).filter(r -> "succeeded".equals(r[0]) && r[1] != null).map(r -> r[1]);
    }

    /** Records a call's failure, unless it already finished; whether this recorded it. */
    public boolean failInvocation(UUID callId, ErrorCode code, String message, int attempts) {
        return fail(callId, code, message, attempts).map(r -> "running".equals(r[0])).orElse(false);
    }

    /**
     * The one statement ending a running call as failed: the update, and the state and result it found before it
     * (the main query does not see its own update), empty when there is no such call.
     */
    private Optional<String[]> fail(UUID callId, ErrorCode code, String message, int attempts) {
        return sql.queryOne("""
                WITH failed AS (
                  UPDATE invocations SET state = 'failed', error_code = ?, error_message = ?,
                    finished_at = clock_timestamp(), attempts = ?
                  WHERE call_id = ? AND state = 'running')
                SELECT state, result_json FROM invocations WHERE call_id = ?""",
                rs -> new String[] {rs.getString(1), rs.getString(2)}, code.code(), message, attempts, callId, callId);
    }

    /**
     * Ends every invocation left running that can no longer finish, in one statement: its deadline passed
     * more than {@code graceMs} ago (nothing of it can be published past its deadline: slot and result
     * publication are fenced by it), or the node that coordinates it restarted since it was recorded (the
     * process that would reduce and publish it is gone). Either is recorded as failed, with a typed reason,
     * only while still running: a result published meanwhile stays published.
     *
     * @param reconciler the node doing it, named in the message
     * @return the invocations ended
     */
    public int reconcileInvocations(String reconciler, long graceMs) {
        return sql.update("""
                UPDATE invocations i SET state = 'failed', finished_at = clock_timestamp(),
                  error_code = CASE WHEN i.deadline_at < clock_timestamp() THEN ? ELSE ? END,
                  error_message = CASE WHEN i.deadline_at < clock_timestamp()
                    THEN 'reconciled by ' || ? || ': still running ' || round(extract(epoch FROM clock_timestamp()
                      - i.deadline_at)::numeric, 1) || ' s after its deadline; its coordinator ' || i.coordinator_host
                      || ' recorded no outcome (it stopped, or lost the control database); nothing was published'
                    ELSE 'reconciled by ' || ? || ': its coordinator ' || i.coordinator_host
                      || ' restarted while it ran; nothing was published' END
                WHERE i.state = 'running'
                  AND (i.deadline_at < clock_timestamp() - make_interval(secs => ? / 1000.0)
                       OR EXISTS (SELECT 1 FROM hosts h WHERE h.host_id = i.coordinator_host
                                  AND h.started_at > i.created_at))""",
                ErrorCode.DEADLINE_EXCEEDED.code(), ErrorCode.COORDINATOR_LOST.code(), reconciler, reconciler, graceMs);
    }

    /**
     * What a leader learns before it runs a host request's slots, in one statement: the journaled outcomes of
     * its wire ids, the call's deadline as stored, and the control database's clock now.
     *
     * @param deadlineMicros the call's deadline on the control database's clock; empty when no such invocation
     * @param clockMicros the control database's clock when it answered
     */
    public record RequestStart(Map<String, JournalEntry> journaled, OptionalLong deadlineMicros, long clockMicros) {}

    /** The journaled outcomes of {@code wireIds}, and the call's stored deadline with the clock to judge it by. */
    public RequestStart requestStart(String tenant, UUID callId, List<String> wireIds) {
        return sql.autoCommit(c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT " + JOURNAL_COLUMNS.replaceAll("(\\w+)", "j.$1") + """
                    , d.deadline_us, d.clock_us
                    FROM (SELECT (extract(epoch FROM i.deadline_at) * 1000000)::bigint AS deadline_us,
                                 (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS clock_us
                          FROM (SELECT 1) one LEFT JOIN invocations i ON i.call_id = ?) d
                    LEFT JOIN journal j ON j.tenant = ? AND j.wire_id = ANY (?)""")) {
                ps.setObject(1, callId);
                ps.setString(2, tenant);
                ps.setArray(3, c.createArrayOf("text", wireIds.toArray()));
                Map<String, JournalEntry> found = new HashMap<>();
                OptionalLong deadline = OptionalLong.empty();
                long clock = 0;
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        if (rs.getString(1) != null) {
                            JournalEntry e = journalEntry(tenant, rs);
                            found.put(e.wireId(), e);
                        }
                        long d = rs.getLong(14);
                        deadline = rs.wasNull() ? OptionalLong.empty() : OptionalLong.of(d);
                        clock = rs.getLong(15);
                    }
                }
                return new RequestStart(found, deadline, clock);
            }
        });
    }

    // ---- coordination: journal, slots, reduce leases, results --------------------------------------

    static final String JOURNAL_COLUMNS = """
            wire_id, call_id, kind, host_id, partition_id, epoch, succeeded, error_code, error_message, row_count,
            emit_count, payload, guest_micros""";

    /** The journaled outcome of a wire identity, if any. */
    public Optional<JournalEntry> journaled(String tenant, String wireId) {
        return Optional.ofNullable(journaled(tenant, List.of(wireId)).get(wireId));
    }

    /** The journaled outcomes of several wire identities of one tenant, in one statement; absent ones are missing. */
    public Map<String, JournalEntry> journaled(String tenant, List<String> wireIds) {
        return sql.autoCommit(c -> journaled(c, tenant, wireIds));
    }

    static Map<String, JournalEntry> journaled(Connection c, String tenant, List<String> wireIds)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT " + JOURNAL_COLUMNS
                + " FROM journal WHERE tenant = ? AND wire_id = ANY (?)")) {
            ps.setString(1, tenant);
            ps.setArray(2, c.createArrayOf("text", wireIds.toArray()));
            Map<String, JournalEntry> found = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    JournalEntry e = journalEntry(tenant, rs);
                    found.put(e.wireId(), e);
                }
            }
            return found;
        }
    }

    static JournalEntry journalEntry(String tenant, ResultSet rs) throws SQLException {
        return new JournalEntry(tenant, rs.getString(1), rs.getObject(2, UUID.class), rs.getString(3), rs.getString(4),
                rs.getInt(5), rs.getLong(6), rs.getBoolean(7), rs.getInt(8), rs.getString(9), rs.getInt(10),
                rs.getInt(11), rs.getBytes(12), rs.getLong(13));
    }

    /**
     * Journals an outcome unless one is already journaled under its (tenant, wire identity), then
     * returns the one that stands: the first writer wins, so every delivery of a wire identity
     * sees the same outcome.
     */
    public JournalEntry journal(JournalEntry e) {
        return sql.inTransaction(c -> journal(c, List.of(e)).get(e.wireId()));
    }

    /** Journals outcomes of one tenant (first writer wins, one batch) and returns the standing ones by wire id. */
    private static Map<String, JournalEntry> journal(Connection c, List<JournalEntry> entries) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO journal (tenant, " + JOURNAL_COLUMNS + """
                ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, wire_id) DO NOTHING""")) {
            for (JournalEntry e : entries) {
                ControlSql.bind(ps, e.tenant(), e.wireId(), e.callId(), e.kind(), e.hostId(), e.partitionId(), e.epoch(),
                        e.succeeded(), e.errorCode(), e.errorMessage(), e.rowCount(), e.emitCount(), e.payload(),
                        e.guestMicros());
                ps.addBatch();
            }
            int[] inserted = ps.executeBatch();
            // An entry this batch inserted is the one that stands; only those that met an earlier
            // writer's are read back (a redelivery or a race), so the common case costs no read.
            Map<String, JournalEntry> standing = new HashMap<>();
            List<String> earlier = new ArrayList<>();
            for (int i = 0; i < inserted.length; i++) {
                JournalEntry e = entries.get(i);
                if (inserted[i] == 1) {
                    standing.put(e.wireId(), e);
                } else {
                    earlier.add(e.wireId());
                }
            }
            if (!earlier.isEmpty()) {
                standing.putAll(journaled(c, entries.get(0).tenant(), earlier));
            }
            return standing;
        }
    }

    /**
     * Why a slot was not published: {@code NOT_LEADER} when the host held no live lease of the partition under
     * the outcome's epoch, {@code DEADLINE_PASSED} when the call's deadline had passed on the control
     * database's clock.
     */
    public enum ShardRunFence { PUBLISHED, NOT_LEADER, DEADLINE_PASSED }

    /**
     * One shard outcome to journal and publish.
     *
     * @param outcome the component outcome of the slot's run (or the journaled one being replayed)
     * @param runIndex the slot it fills
     * @param attempt the attempt that produced it (1 or more); 0 when unknown, then neither it nor {@code readMicros}
     *     is journaled
     * @param readMicros how long reading the slot's partition took, for operators (the journal views)
     */
    public record ShardRunPublication(JournalEntry outcome, int runIndex, int attempt, long readMicros) {
        /** An outcome whose attempt and read time are not known. */
        public ShardRunPublication(JournalEntry outcome, int runIndex) {
            this(outcome, runIndex, 0, 0);
        }
    }

    /**
     * What stands for one slot after {@link #publishShardOutcomes}.
     *
     * @param standing the journaled outcome (the first writer's, which may be an earlier delivery's)
     * @param fence {@link ShardRunFence#PUBLISHED} for a failed outcome too (there is nothing to publish)
     */
    public record ShardRunPublished(JournalEntry standing, ShardRunFence fence) {}

    /**
     * Journals the shard outcomes of one host request (first writer wins) and publishes each standing
     * successful one as its call's slot under a lease, all in one transaction. Each publication is
     * fenced: it happens only while {@code hostId} holds a live lease on the partition under the
     * outcome's epoch, judged by the clock when the row is written, the lease row locked against a
     * concurrent takeover until the transaction ends.
     *
     * @param publications outcomes of one tenant and host, at least one
     * @return what stands, in the order of {@code publications}
     */
    public List<ShardRunPublished> publishShardOutcomes(List<ShardRunPublication> publications, String hostId, long leaseMs) {
        return slots.publish(publications, hostId, leaseMs);
    }

    /**
     * What the coordinator reads before reduce, in one transaction.
     *
     * @param leaseHeld whether this host holds the call's reduce lease now
     * @param slots every published slot of the call, with its partials, lease state and its partition's current epoch
     * @param journaledReduce the reduction's journaled outcome, when a reduce already ran under that wire identity
     */
    public record ReduceStart(boolean leaseHeld, List<ShardRunRow> runs, Optional<JournalEntry> journaledReduce) {}

    /**
     * Takes (or renews) the reduce lease of a call, granted when free, expired, or already this host's,
     * and reads the call's published slots and any journaled reduction, in one transaction.
     */
    public ReduceStart startReduce(UUID callId, String tenant, String hostId, String reduceWireId, long leaseMs) {
        // Three statements sent together: one round trip, one implicit transaction.
        return sql.autoCommit(c -> {
            try (PreparedStatement ps = c.prepareStatement(TAKE_REDUCE_LEASE + ";\n" + READ_SHARD_RUNS + ";\n" + "SELECT "
                    + JOURNAL_COLUMNS + " FROM journal WHERE tenant = ? AND wire_id = ?")) {
                ControlSql.bind(ps, callId, hostId, reduceWireId, leaseMs, callId, tenant, reduceWireId);
                ps.execute();
                boolean held = ps.getUpdateCount() == 1;
                List<ShardRunRow> rows = new ArrayList<>();
                ps.getMoreResults();
                try (ResultSet rs = ps.getResultSet()) {
                    while (rs.next()) {
                        rows.add(new ShardRunRow(rs.getInt(1), rs.getInt(2), rs.getLong(3), rs.getString(4), rs.getString(5),
                                rs.getInt(6), rs.getInt(7), rs.getInt(8), rs.getBytes(9), rs.getBoolean(10), rs.getLong(11)));
                    }
                }
                ps.getMoreResults();
                JournalEntry reduce = null;
                try (ResultSet rs = ps.getResultSet()) {
                    if (rs.next()) {
                        reduce = journalEntry(tenant, rs);
                    }
                }
                return held ? new ReduceStart(true, rows, Optional.ofNullable(reduce))
                        : new ReduceStart(false, List.of(), Optional.empty());
            }
        });
    }

    /**
     * A call's published slots with their partials, lease state and partition's current epoch; parameter: call id.
     * The partials and the epoch are looked up per slot by primary key (subqueries, never joins): a plan cached while
     * the journal was small would otherwise keep scanning the whole journal once it has grown. Package-private for
     * the test that checks its plan.
     */
    static final String READ_SHARD_RUNS = """
            SELECT s.run_index, s.partition_id, s.epoch, s.wire_id, s.host_id, s.row_count, s.emit_count,
                   s.entry_count, (SELECT j.payload FROM journal j WHERE j.tenant = s.tenant AND j.wire_id = s.wire_id),
                   s.lease_until > clock_timestamp(),
                   coalesce((SELECT p.epoch FROM partitions p WHERE p.partition_id = s.partition_id), -1)
            FROM shard_runs s
            WHERE s.call_id = ? ORDER BY s.run_index""";

    private static final String TAKE_REDUCE_LEASE = """
            INSERT INTO reduce_leases (call_id, host_id, wire_id, lease_until)
            VALUES (?, ?, ?, now() + make_interval(secs => ? / 1000.0))
            ON CONFLICT (call_id) DO UPDATE SET host_id = EXCLUDED.host_id, lease_until = EXCLUDED.lease_until,
              taken_at = now()
            WHERE reduce_leases.host_id = EXCLUDED.host_id OR reduce_leases.lease_until < now()""";

    /**
     * Takes the reduce lease of a call: granted when free, expired, or already this host's.
     *
     * @return whether this host holds the lease now
     */
    public boolean takeReduceLease(UUID callId, String hostId, String wireId, long leaseMs) {
        return sql.update(TAKE_REDUCE_LEASE, callId, hostId, wireId, leaseMs) == 1;
    }

    /**
     * Journals a call's reduction (first writer wins) and, when the standing reduction succeeded,
     * publishes its result, in one transaction: visible once or never. The result is published only
     * while the call is still running, {@code hostId} holds a live reduce lease, and the binding's
     * current version is the one the call pinned (a redeploy during the call refuses the result rather
     * than mix versions). When the call already has a published result, that result stays and is returned.
     *
     * @param reduction the reduction's outcome, or the journaled one being replayed
     * @return the standing reduction, and what became of the publication (empty when the reduction failed)
     */
    public Map.Entry<JournalEntry, Optional<PublishOutcome>> journalAndPublish(JournalEntry reduction, String hostId,
                                                                               int attempts) {
        // Three statements sent together, one round trip and one implicit transaction: journal (first writer
        // wins), publish the standing reduction if it succeeded, read back what stands.
        return sql.autoCommit(c -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO journal (tenant, " + JOURNAL_COLUMNS
                    + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, wire_id) DO NOTHING;\n"
                    + PUBLISH_STANDING_REDUCTION + ";\n" + PUBLICATION_STATE)) {
                JournalEntry e = reduction;
                ControlSql.bind(ps, e.tenant(), e.wireId(), e.callId(), e.kind(), e.hostId(), e.partitionId(), e.epoch(),
                        e.succeeded(), e.errorCode(), e.errorMessage(), e.rowCount(), e.emitCount(), e.payload(),
                        e.guestMicros(),
                        hostId, attempts, e.tenant(), e.wireId(), e.callId(), hostId,
                        hostId, e.callId(), e.tenant(), e.wireId());
                ps.execute();
                ps.getMoreResults();
                boolean published = ps.getUpdateCount() == 1;
                ps.getMoreResults();
                try (ResultSet rs = ps.getResultSet()) {
                    if (!rs.next()) {
                        throw new SQLException("the reduction " + e.wireId() + " is not in the journal after journaling it");
                    }
                    JournalEntry standing = journalEntry(e.tenant(), rs);
                    if (!standing.succeeded()) {
                        return Map.entry(standing, Optional.<PublishOutcome>empty());
                    }
                    if (published) {
                        return Map.entry(standing, Optional.of(new PublishOutcome(PublishOutcome.Status.PUBLISHED,
                                Optional.of(new String(standing.payload(), java.nio.charset.StandardCharsets.UTF_8)))));
                    }
                    return Map.entry(standing, Optional.of(notPublished(rs.getString(14), rs.getString(15),
                            rs.getBoolean(16), rs.getBoolean(17))));
                }
            }
        });
    }

    /**
     * Publishes the standing reduction of a call as its result, while the call is running, {@code hostId}
     * holds a live reduce lease and the binding is at the pinned version. Parameters: host id, attempts,
     * tenant, reduce wire id, call id, host id.
     */
    private static final String PUBLISH_STANDING_REDUCTION = """
            UPDATE invocations i SET state = 'succeeded', result_json = convert_from(j.payload, 'UTF8'), finished_at = now(),
              published_by = ?, attempts = ?
            FROM journal j
            WHERE j.tenant = ? AND j.wire_id = ? AND j.succeeded
              AND i.call_id = ? AND i.state = 'running' AND i.deadline_at >= clock_timestamp()
              AND EXISTS (SELECT 1 FROM reduce_leases r WHERE r.call_id = i.call_id AND r.host_id = ?
                          AND r.lease_until > now())
              AND i.binding_version = (SELECT max(b.version) FROM bindings b
                                       WHERE b.tenant = i.tenant AND b.name = i.binding_name)""";

    /**
     * The standing reduction (columns 1–13) and its call's state: 14 state, 15 result, 16 whether
     * {@code hostId} holds a live reduce lease. Parameters: host id, call id, tenant, reduce wire id.
     */
    private static final String PUBLICATION_STATE = "SELECT " + JOURNAL_COLUMNS.replaceAll("(\\w+)", "j.$1") + """
            , i.state, i.result_json,
              EXISTS (SELECT 1 FROM reduce_leases r WHERE r.call_id = i.call_id AND r.host_id = ?
                      AND r.lease_until > now()), i.deadline_at < clock_timestamp()
            FROM journal j LEFT JOIN invocations i ON i.call_id = ?
            WHERE j.tenant = ? AND j.wire_id = ?""";

    /**
     * Why a result was not published, from the call's state (null: no such invocation), whether this host holds
     * the lease and whether the call's deadline has passed.
     */
    private static PublishOutcome notPublished(String state, String result, boolean leaseHeld, boolean deadlinePassed) {
        if ("succeeded".equals(state)) {
            return new PublishOutcome(PublishOutcome.Status.ALREADY_PUBLISHED, Optional.of(result));
        }
        if (!"running".equals(state)) {
            return new PublishOutcome(PublishOutcome.Status.NOT_RUNNING, Optional.empty());
        }
        if (deadlinePassed) {
            return new PublishOutcome(PublishOutcome.Status.DEADLINE_PASSED, Optional.empty());
        }
        return new PublishOutcome(leaseHeld ? PublishOutcome.Status.BINDING_REPLACED
                : PublishOutcome.Status.REDUCE_LEASE_LOST, Optional.empty());
    }

    /**
     * Publishes a call's result: visible once or never (see {@link #journalAndPublish}); for operators and
     * tests that publish without a reduction.
     */
    public PublishOutcome publishResult(UUID callId, String hostId, String resultJson, int attempts) {
        return sql.inTransaction(c -> publishResult(c, callId, hostId, resultJson, attempts));
    }

    private static PublishOutcome publishResult(Connection c, UUID callId, String hostId, String resultJson,
                                                int attempts) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                UPDATE invocations i SET state = 'succeeded', result_json = ?, finished_at = now(), published_by = ?,
                  attempts = ?
                WHERE i.call_id = ? AND i.state = 'running' AND i.deadline_at >= clock_timestamp()
                  AND EXISTS (SELECT 1 FROM reduce_leases r WHERE r.call_id = i.call_id AND r.host_id = ?
                              AND r.lease_until > now())
                  AND i.binding_version = (SELECT max(b.version) FROM bindings b
                                           WHERE b.tenant = i.tenant AND b.name = i.binding_name)""")) {
            ControlSql.bind(ps, resultJson, hostId, attempts, callId, hostId);
            if (ps.executeUpdate() == 1) {
                return new PublishOutcome(PublishOutcome.Status.PUBLISHED, Optional.of(resultJson));
            }
        }
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT i.state, i.result_json,
                       EXISTS (SELECT 1 FROM reduce_leases r WHERE r.call_id = i.call_id AND r.host_id = ?
                               AND r.lease_until > now()), i.deadline_at < clock_timestamp()
                FROM invocations i WHERE i.call_id = ?""")) {
            ControlSql.bind(ps, hostId, callId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? notPublished(rs.getString(1), rs.getString(2), rs.getBoolean(3), rs.getBoolean(4))
                        : notPublished(null, null, false, false);
            }
        }
    }

    /**
     * Deletes coordination state older than the retention: journal entries, slots, reduce leases
     * and finished invocations. The state of a call whose invocation is still running is kept,
     * whatever its age, so a slow call never loses its slots or its journal; an invocation left
     * running (its coordinator died) is dropped an hour after the retention, and its state with
     * the next sweep.
     *
     * @return rows deleted
     */
    public int cleanup(long retentionMs) {
        String notRunning = " AND NOT EXISTS (SELECT 1 FROM invocations i WHERE i.call_id = t.call_id AND i.state = 'running')";
        return sql.inTransaction(c -> {
            int n = 0;
            for (String sql : List.of(
                    "DELETE FROM journal t WHERE recorded_at < now() - make_interval(secs => ? / 1000.0)" + notRunning,
                    "DELETE FROM shard_runs t WHERE published_at < now() - make_interval(secs => ? / 1000.0)" + notRunning,
                    "DELETE FROM reduce_leases t WHERE taken_at < now() - make_interval(secs => ? / 1000.0)" + notRunning,
                    "DELETE FROM invocations WHERE state <> 'running' AND finished_at < now() - make_interval(secs => ? / 1000.0)",
                    "DELETE FROM invocations WHERE created_at < now() - make_interval(secs => ? / 1000.0) - interval '1 hour'")) {
                try (PreparedStatement ps = c.prepareStatement(sql)) {
                    ps.setLong(1, retentionMs);
                    n += ps.executeUpdate();
                }
            }
            // journaled outer responses expire with the retention they were written with (IdempotencyKeys)
            try (PreparedStatement ps = c.prepareStatement("DELETE FROM idempotency_keys WHERE expires_at < now()"
                    + " AND (state = 'done' OR claimed_until < now())")) {
                n += ps.executeUpdate();
            }
            return n;
        });
    }

    /** Invocation rows of a state, for operators and tests. */
    public int countInvocations(String state) {
        return sql.queryOne("SELECT count(*) FROM invocations WHERE state = ?", rs -> rs.getInt(1), state).orElse(0);
    }
}
