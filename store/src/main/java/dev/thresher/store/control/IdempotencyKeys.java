package dev.thresher.store.control;

import dev.thresher.bindings.IdempotentRequests;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.store.DbDeadline;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link IdempotentRequests} over the control database's {@code idempotency_keys} (migration V10).
 *
 * <p>A request claims its key with one insert. The claim's owner (a fresh id per claim, so a later owner fences an
 * earlier one) runs the request and records the response ({@code state = 'done'}), or releases the key when the
 * outcome is not to be kept. Another request with the key reads the row: another fingerprint is
 * {@code IDEMPOTENCY_KEY_REUSED}; a done row is replayed; a running one is polled every {@value #POLL_MS} ms until
 * it is done or released (then it claims the key itself) or until this request's deadline. A claim is held until
 * its owner's deadline plus {@value #GRACE_MS} ms: by then nothing of its call can be published (the publish fence),
 * so a request finding it lapsed takes it over, and is told the call the earlier owner recorded.
 *
 * <p>Expired rows are swept with the rest of the coordination state ({@link CallJournal#cleanup}).
 *
 * <p>Every statement is bounded by the request's deadline ({@link DbDeadline}); the blocking work runs on this
 * object's own threads, never on a front door's event loop.
 */
public final class IdempotencyKeys implements IdempotentRequests, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(IdempotencyKeys.class);
    /** How often a request waiting for a running duplicate looks again. */
    static final long POLL_MS = 50;
    /** How long after its owner's deadline a claim lapses. */
    static final long GRACE_MS = 2_000;
    /** The longest key accepted, in characters. */
    public static final int MAX_KEY_LENGTH = 255;

    private final DataSource db;
    private final long retentionMs;
    private final ThreadPoolExecutor blocking;
    private final ScheduledExecutorService timer;

    /**
     * @param db the control database
     * @param retentionMs how long a journaled response is kept ({@code limits.coordinationRetentionMs})
     */
    public IdempotencyKeys(DataSource db, long retentionMs, String name) {
        this.db = Objects.requireNonNull(db, "db");
        this.retentionMs = retentionMs;
        this.blocking = new ThreadPoolExecutor(4, 4, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1024),
                Thread.ofPlatform().daemon().name(name + "-idempotency-", 0).factory());
        this.blocking.allowCoreThreadTimeOut(true);
        this.timer = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().daemon().name(name + "-idempotency-timer").factory());
    }

    /**
     * Refuses a key that cannot be one: empty, longer than {@value #MAX_KEY_LENGTH} characters, or holding anything
     * but visible ASCII.
     *
     * @throws ThresherException {@code INVALID_ARGUMENTS}
     */
    public static void validateKey(String key) {
        if (key.isEmpty() || key.length() > MAX_KEY_LENGTH) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "an Idempotency-Key is 1 to " + MAX_KEY_LENGTH
                    + " characters, was " + key.length());
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "an Idempotency-Key holds visible ASCII"
                        + " characters only (no spaces or control characters)");
            }
        }
    }

    @Override
    public CompletableFuture<Answer> once(String tenant, String key, byte[] fingerprint, long deadlineMs,
                                          Function<Run, CompletableFuture<Outcome>> execute) {
        validateKey(key);
        CompletableFuture<Answer> answer = new CompletableFuture<>();
        Deadline deadline = Deadline.after(Duration.ofMillis(Math.max(0, deadlineMs)));
        submit(answer, () -> attempt(tenant, key, fingerprint.clone(), deadline, execute, answer));
        return answer;
    }

    private void submit(CompletableFuture<Answer> answer, Runnable work) {
        try {
            blocking.execute(() -> {
                try {
                    work.run();
                } catch (RuntimeException e) {
                    answer.completeExceptionally(e);
                }
            });
        } catch (RejectedExecutionException e) {
            answer.completeExceptionally(new ThresherException(ErrorCode.CELL_UNAVAILABLE,
                    "too many requests with an Idempotency-Key are waiting on this node; retry later"));
        }
    }

    private sealed interface Claim {
        record Claimed(UUID owner, Optional<UUID> previousCall) implements Claim {}

        record Replay(Response response) implements Claim {}

        record Busy() implements Claim {}

        record Mismatch() implements Claim {}
    }

    private void attempt(String tenant, String key, byte[] fingerprint, Deadline deadline,
                         Function<Run, CompletableFuture<Outcome>> execute, CompletableFuture<Answer> answer) {
        if (deadline.passed()) {
            answer.completeExceptionally(new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting"
                    + " for the request that holds this Idempotency-Key; nothing ran for this one").beforeGuestCode());
            return;
        }
        Claim claim;
        try (DbDeadline scope = DbDeadline.enter(deadline)) {
            claim = claim(tenant, key, fingerprint, deadline);
        }
        switch (claim) {
            case Claim.Mismatch m -> answer.completeExceptionally(new ThresherException(ErrorCode.IDEMPOTENCY_KEY_REUSED,
                    "this Idempotency-Key was used for a different request (another route or body) within the"
                            + " coordination retention; use a new key for a new request").beforeGuestCode());
            case Claim.Replay r -> answer.complete(new Answer(r.response(), true));
            case Claim.Busy b -> {
                long waitMs = Math.min(POLL_MS, Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline.remainingNanos())));
                try {
                    timer.schedule(() -> submit(answer, () -> attempt(tenant, key, fingerprint, deadline, execute, answer)),
                            waitMs, TimeUnit.MILLISECONDS);
                } catch (RejectedExecutionException e) {
                    answer.completeExceptionally(new ThresherException(ErrorCode.CELL_UNAVAILABLE, "the node is stopping"));
                }
            }
            case Claim.Claimed c -> run(tenant, key, c, deadline, execute, answer);
        }
    }

    private void run(String tenant, String key, Claim.Claimed claim, Deadline deadline,
                     Function<Run, CompletableFuture<Outcome>> execute, CompletableFuture<Answer> answer) {
        CompletableFuture<Outcome> ran;
        try {
            ran = execute.apply(new Run(claim.previousCall(), callId -> recordCall(tenant, key, claim.owner(), callId,
                    deadline)));
        } catch (RuntimeException e) {
            ran = CompletableFuture.failedFuture(e);
        }
        ran.whenComplete((outcome, failure) -> submit(answer, () -> {
            if (failure != null || outcome == null) {
                release(tenant, key, claim.owner(), deadline);
                answer.completeExceptionally(failure != null ? failure
                        : new ThresherException(ErrorCode.INTERNAL_ERROR, "the request completed with no response"));
                return;
            }
            if (outcome.keep()) {
                record(tenant, key, claim.owner(), outcome.response(), deadline);
            } else {
                release(tenant, key, claim.owner(), deadline);
            }
            answer.complete(new Answer(outcome.response(), false));
        }));
    }

    private Claim claim(String tenant, String key, byte[] fingerprint, Deadline deadline) {
        UUID owner = UUID.randomUUID();
        long claimMs = TimeUnit.NANOSECONDS.toMillis(Math.max(0, deadline.remainingNanos())) + GRACE_MS;
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                Claim claim = claim(c, tenant, key, fingerprint, owner, claimMs);
                c.commit();
                return claim;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    private Claim claim(Connection c, String tenant, String key, byte[] fingerprint, UUID owner, long claimMs)
            throws SQLException {
        // an expired row is gone for this key first: the key is new again
        try (PreparedStatement ps = c.prepareStatement("""
                DELETE FROM idempotency_keys WHERE tenant = ? AND key = ? AND expires_at < clock_timestamp()
                  AND (state = 'done' OR claimed_until < clock_timestamp())""")) {
            ps.setString(1, tenant);
            ps.setString(2, key);
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement("""
                INSERT INTO idempotency_keys (tenant, key, fingerprint, state, owner, claimed_until, expires_at)
                VALUES (?, ?, ?, 'running', ?, clock_timestamp() + make_interval(secs => ? / 1000.0),
                        clock_timestamp() + make_interval(secs => ? / 1000.0))
                ON CONFLICT (tenant, key) DO NOTHING""")) {
            ps.setString(1, tenant);
            ps.setString(2, key);
            ps.setBytes(3, fingerprint);
            ps.setObject(4, owner);
            ps.setLong(5, claimMs);
            ps.setLong(6, retentionMs);
            if (ps.executeUpdate() == 1) {
                return new Claim.Claimed(owner, Optional.empty());
            }
        }
        byte[] stored;
        String state;
        UUID call;
        boolean lapsed;
        Response response = null;
        try (PreparedStatement ps = c.prepareStatement("""
                SELECT fingerprint, state, call_id, status, response, claimed_until < clock_timestamp()
                FROM idempotency_keys WHERE tenant = ? AND key = ? FOR UPDATE""")) {
            ps.setString(1, tenant);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new Claim.Busy(); // released between the insert and this read: look again
                }
                stored = rs.getBytes(1);
                state = rs.getString(2);
                call = rs.getObject(3, UUID.class);
                if (state.equals("done")) {
                    response = new Response(rs.getInt(4), rs.getString(5));
                }
                lapsed = rs.getBoolean(6);
            }
        }
        if (!Arrays.equals(stored, fingerprint)) {
            return new Claim.Mismatch();
        }
        if (response != null) {
            return new Claim.Replay(response);
        }
        if (!lapsed) {
            return new Claim.Busy();
        }
        // its owner died (or could not record its response): this request takes the claim over
        try (PreparedStatement ps = c.prepareStatement("""
                UPDATE idempotency_keys SET owner = ?, claimed_until = clock_timestamp() + make_interval(secs => ? / 1000.0)
                WHERE tenant = ? AND key = ?""")) {
            ps.setObject(1, owner);
            ps.setLong(2, claimMs);
            ps.setString(3, tenant);
            ps.setString(4, key);
            ps.executeUpdate();
        }
        log.info("took over Idempotency-Key {} of tenant {} from an owner that did not finish (its call: {})", key,
                tenant, call);
        return new Claim.Claimed(owner, Optional.ofNullable(call));
    }

    /** Remembers the nested call of the claim, so a later owner can tell whether it was published. */
    private void recordCall(String tenant, String key, UUID owner, String callId, Deadline deadline) {
        UUID id;
        try {
            id = UUID.fromString(callId);
        } catch (IllegalArgumentException e) {
            return;
        }
        update("UPDATE idempotency_keys SET call_id = ? WHERE tenant = ? AND key = ? AND owner = ? AND state = 'running'",
                deadline, id, tenant, key, owner);
    }

    private void record(String tenant, String key, UUID owner, Response r, Deadline deadline) {
        update("""
                UPDATE idempotency_keys SET state = 'done', status = ?, response = ?
                WHERE tenant = ? AND key = ? AND owner = ? AND state = 'running'""", deadline, r.status(),
                ControlSql.storable(r.body()), tenant, key, owner);
    }

    private void release(String tenant, String key, UUID owner, Deadline deadline) {
        update("DELETE FROM idempotency_keys WHERE tenant = ? AND key = ? AND owner = ? AND state = 'running'",
                deadline, tenant, key, owner);
    }

    /**
     * One statement, bounded by the request's deadline but given at least a second: a response already computed is
     * worth recording. When it fails, the claim lapses on its own and a later request takes it over.
     */
    private void update(String sql, Deadline deadline, Object... params) {
        Deadline bound = deadline.remainingNanos() > TimeUnit.SECONDS.toNanos(1) ? deadline
                : Deadline.after(Duration.ofSeconds(1));
        try (DbDeadline scope = DbDeadline.enter(bound); Connection c = db.getConnection();
             PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            ps.executeUpdate();
        } catch (SQLException | RuntimeException e) {
            log.warn("could not update an Idempotency-Key; its claim lapses on its own: {}", e.toString());
        }
    }

    private static ThresherException unavailable(SQLException e) {
        if (DbDeadline.passed()) {
            return new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed reading the Idempotency-Key: "
                    + e.getMessage(), e).beforeGuestCode();
        }
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: " + e.getMessage(), e).beforeGuestCode();
    }

    @Override
    public void close() {
        timer.shutdownNow();
        blocking.shutdown();
    }
}
