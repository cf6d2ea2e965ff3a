package dev.thresher.pgwire;

import dev.thresher.bindings.CallOutcome;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.JournalScope;
import dev.thresher.bindings.TableService;
import dev.thresher.bindings.access.AccessService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.channel.ChannelHandlerContext;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The work of a session that leaves the event loop: calls handed to the {@link CallService} (their id told in a
 * notice once recorded), COPY FROM STDIN, INSERT, table, binding, user and grant statements on the writer threads,
 * SHOW CALL and journal queries on the lookup threads. While it runs the connection handles nothing else and stops
 * reading; its answer is written on the event loop, to the statement's {@link PgResultSink}, and dropped when the
 * connection closed meanwhile (closing a connection does not stop dispatched work). Touched on the connection's event
 * loop only, but for the hand-offs to it.
 */
final class PgWork {
    private static final Logger log = LoggerFactory.getLogger(PgWork.class);

    /** What the work needs of its connection. */
    interface Connection {
        boolean closed();

        /** Work is in flight: nothing else is handled and reading stops. */
        void pauseReading();

        /** The work in flight came back (its answer, if the connection is open, follows). */
        void answered();

        /** After an answer: reading and handling resume, unless the answer started the next work. */
        void resumeUnlessContinued();
    }

    private final PgWireConfig config;
    private final CallService calls;
    private final PgWireServer.Writes writes;
    /** Where SHOW CALL and journal queries look up; null when this server cannot. */
    private final PgWireServer.Lookups lookups;
    private final AccessService access;
    private final ChannelHandlerContext ctx;
    private final PgSession session;
    private final PgCopyIn copyIn;
    private final Connection connection;
    /** Counts the calls started on this connection; the number of the one in flight, 0 when none is. */
    private long callsStarted;
    private long activeCall;
    /** The id the call in flight was last told under (a call planned again is told again), null before that. */
    private String recordedCallId;
    /** While a failed call's failure is reported: its id, for the ErrorResponse's detail; null otherwise. */
    private String failedCallId;

    PgWork(PgWireConfig config, CallService calls, PgWireServer.Writes writes, PgWireServer.Lookups lookups,
           AccessService access, ChannelHandlerContext ctx, PgSession session, PgCopyIn copyIn, Connection connection) {
        this.config = config;
        this.calls = calls;
        this.writes = writes;
        this.lookups = lookups;
        this.access = access;
        this.ctx = ctx;
        this.session = session;
        this.copyIn = copyIn;
        this.connection = connection;
    }

    // ---- writes: COPY FROM STDIN and INSERT

    /**
     * Starts a COPY: the writer checks the table on its thread and then reads the data; once it is ready
     * the connection answers CopyInResponse and takes CopyData until CopyDone or CopyFail. The COPY's own
     * answer (CommandComplete "COPY n", or the error) comes when the writer is done; a writer that fails
     * before the client's data ends is answered at once, and the rest of the data is dropped (as PostgreSQL
     * does).
     */
    void copy(ParsedStatement.Copy c, PgResultSink sink) {
        if (!allowed(p -> p.checkDeploy("load rows"), sink::failed)) {
            return;
        }
        TableService.CopySpec spec = new TableService.CopySpec(c.table(), c.columns(), c.csv(), c.header(), c.delimiter(),
                c.nullString());
        CopyInStream stream = copyIn.stream();
        startWrite("COPY " + c.table(), () -> writes.tables().copyFrom(session.tenant(), session.user(), spec,
                columns -> ctx.executor().execute(() -> copyIn.ready(stream, columns)), stream), rows -> {
            sink.write(new BackendMessage.CommandComplete("COPY " + rows));
            sink.done();
        }, sink::failed);
    }

    void insert(ParsedStatement.Insert i, PgResultSink sink) {
        if (!allowed(p -> p.checkDeploy("insert rows"), sink::failed)) {
            return;
        }
        startWrite("INSERT", () -> writes.tables().insert(session.tenant(), session.user(), i.typed()), rows -> {
            sink.write(new BackendMessage.CommandComplete("INSERT 0 " + rows));
            sink.done();
        }, sink::failed);
    }

    void tableStatement(ParsedStatement.TableStatement t, PgResultSink sink) {
        if (!allowed(p -> p.checkDeploy("create, alter or drop tables"), sink::failed)) {
            return;
        }
        startTagged("table statement", () -> writes.tables().execute(session.tenant(), session.user(), t.typed()),
                sink);
    }

    void bindingStatement(ParsedStatement.BindingStatement statement, PgResultSink sink) {
        if (!allowed(p -> p.checkDeploy("deploy bindings"), sink::failed)) {
            return;
        }
        if (writes != null && writes.bindings() == null) {
            sink.failed(PgError.of(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                    "binding statement: this server does not deploy components")));
            return;
        }
        startTagged("binding statement",
                () -> writes.bindings().execute(session.tenant(), session.user(), statement.typed()), sink);
    }

    /**
     * A user or grant statement, run by the access service on the writer threads as the session's user (who must be an
     * admin of its tenant, or be changing its own password).
     */
    void accessStatement(ParsedStatement.AccessStatement statement, PgResultSink sink) {
        dev.thresher.bindings.access.AccessStatement parsed;
        dev.thresher.bindings.access.Principal by;
        try {
            parsed = statement.typed();
            by = principal();
            if (!(parsed instanceof dev.thresher.bindings.access.AccessStatement.AlterPassword a
                    && a.name().equals(by.user()))) {
                by.checkAdmin("manage users and grants"); // before anything else, whatever this server serves
            }
        } catch (ThresherException e) {
            sink.failed(PgError.of(e));
            return;
        }
        startTagged("user or grant statement", () -> access.execute(by, parsed), sink);
    }

    /**
     * The session user's grants now: a grant or a revoke anywhere in the cluster applies from the next statement.
     *
     * @throws ThresherException {@link ErrorCode#PERMISSION_DENIED} when the user was dropped meanwhile
     */
    private dev.thresher.bindings.access.Principal principal() {
        return access.principal(session.user()).orElseThrow(() -> new ThresherException(ErrorCode.PERMISSION_DENIED,
                "permission denied: user " + dev.thresher.bindings.access.Identifiers.quoted(session.user()) + " no longer exists"));
    }

    /** Runs {@code check} on the session's principal; on refusal reports it through {@code onFailure}. */
    private boolean allowed(Consumer<dev.thresher.bindings.access.Principal> check, Consumer<PgError> onFailure) {
        try {
            check.accept(principal());
            return true;
        } catch (ThresherException e) {
            onFailure.accept(PgError.of(e));
            return false;
        }
    }

    /** A statement on the writer threads that answers with the command tag its work returns. */
    private void startTagged(String what, java.util.function.Supplier<String> work, PgResultSink sink) {
        String[] tag = new String[1];
        startWrite(what, () -> {
            tag[0] = work.get();
            return 0;
        }, rows -> {
            sink.write(new BackendMessage.CommandComplete(tag[0]));
            sink.done();
        }, sink::failed);
    }

    /** Blocking table work for the writer threads; handling pauses until it is done, as for a call. */
    private interface Write {
        long run();
    }

    private void startWrite(String what, Write work, Consumer<Long> onSuccess, Consumer<PgError> onFailure) {
        if (writes == null) {
            onFailure.accept(PgError.of(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                    what + ": this server does not write tables")));
            return;
        }
        connection.pauseReading();
        CompletableFuture<Long> future;
        try {
            future = CompletableFuture.supplyAsync(work::run, writes.executor());
        } catch (RejectedExecutionException e) {
            future = CompletableFuture.failedFuture(new ThresherException(ErrorCode.CELL_UNAVAILABLE, what
                    + ": " + PgWireServer.WRITERS_MAX + " loads and inserts are running on this node already; retry"));
        }
        future.whenComplete((rows, failure) -> {
            try {
                ctx.executor().execute(() -> writeDone(rows, failure, onSuccess, onFailure));
            } catch (RejectedExecutionException e) {
                log.debug("event loop shut down; dropping the answer of {}", what);
            }
        });
    }

    private void writeDone(Long rows, Throwable failure, Consumer<Long> onSuccess, Consumer<PgError> onFailure) {
        copyIn.writerEnded();
        connection.answered();
        if (connection.closed() || !ctx.channel().isActive()) {
            return;
        }
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        if (cause == null) {
            onSuccess.accept(rows);
        } else {
            onFailure.accept(PgError.of(cause));
        }
        connection.resumeUnlessContinued();
    }

    // ---- calls

    /**
     * Hands the call to the service and stops handling messages until it completes. The completion runs
     * on the event loop; if the connection is gone by then, the result is dropped (the call is not
     * cancelled: closing a connection does not stop dispatched work).
     */
    void startCall(String bindingName, String argumentsJson, Consumer<CallResult> onSuccess,
                           Consumer<PgError> onFailure) {
        int limit = config.limits().directCallPayloadBytes();
        long bytes = Quoted.utf8Length(argumentsJson);
        if (bytes > limit) {
            onFailure.accept(PgError.of(new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "the arguments of "
                    + Quoted.of(bindingName) + " are " + bytes + " bytes; limits.directCallPayloadBytes is " + limit)));
            return;
        }
        if (!allowed(p -> p.checkCall(bindingName), onFailure)) {
            return;
        }
        long call = ++callsStarted;
        activeCall = call;
        recordedCallId = null;
        boolean notice = session.callIdNotice();
        CompletableFuture<CallResult> future;
        try {
            future = calls.call(new CallRequest(session.tenant(), session.user(), bindingName, argumentsJson,
                    session.callDeadlineMs())
                    .onRecorded(id -> recorded(call, id, notice)));
        } catch (RuntimeException e) {
            future = CompletableFuture.failedFuture(e);
        }
        if (future == null) {
            future = CompletableFuture.failedFuture(
                    new ThresherException(ErrorCode.INTERNAL_ERROR, "the call service returned no future"));
        }
        connection.pauseReading();
        future.whenComplete((result, failure) -> {
            try {
                ctx.executor().execute(() -> callDone(result, failure, onSuccess, onFailure));
            } catch (RejectedExecutionException e) {
                log.debug("event loop shut down; dropping the result of a call of {}", bindingName);
            }
        });
    }

    /**
     * The coordinator recorded call number {@code call} of this connection as {@code id} (on its own thread,
     * which must not block). The notice is written on the event loop: the call's answer is handed to the loop
     * after this (the coordinator tells the id before it completes the call's future, and the loop runs its
     * tasks in the order they were handed over), so the notice always leaves between whatever was written before
     * the call and the call's own answer, never inside another message and never after the ReadyForQuery that
     * ends the statement; a notice for a call that is no longer in flight is dropped.
     */
    private void recorded(long call, String id, boolean notice) {
        try {
            ctx.executor().execute(() -> {
                if (activeCall != call || connection.closed() || !ctx.channel().isActive()) {
                    return;
                }
                recordedCallId = id;
                if (notice) {
                    ctx.writeAndFlush(new BackendMessage.NoticeResponse("call " + id + " recorded", id));
                }
            });
        } catch (RejectedExecutionException e) {
            log.debug("event loop shut down; dropping the id notice of call {}", id);
        }
    }

    private void callDone(CallResult result, Throwable failure, Consumer<CallResult> onSuccess,
                          Consumer<PgError> onFailure) {
        connection.answered();
        activeCall = 0;
        String callId = recordedCallId;
        recordedCallId = null;
        if (connection.closed() || !ctx.channel().isActive()) {
            log.debug("{} closed before its call completed; dropping the result", ctx.channel());
            return;
        }
        if (failure == null && result == null) {
            failure = new ThresherException(ErrorCode.INTERNAL_ERROR, "the call service completed with no result");
        }
        if (failure == null) {
            onSuccess.accept(result);
        } else {
            // the ErrorResponse written for this failure names the call (queryFailed, fail)
            failedCallId = callId;
            try {
                onFailure.accept(PgError.of(failure));
            } finally {
                failedCallId = null;
            }
        }
        connection.resumeUnlessContinued();
    }

    // ---- SHOW CALL

    /**
     * Looks the call up on the lookup threads and answers one row (with its RowDescription first when
     * {@code describe}, as a simple query does); handling pauses until the answer is written, as for a call.
     * An id that names none of this tenant's calls, or a call of a binding the session's user may not call now
     * ({@link JournalScope}), is {@link ErrorCode#UNKNOWN_CALL} ({@code 42704} undefined_object): the same answer.
     */
    void showCall(ParsedStatement.ShowCall show, PgResultSink sink) {
        if (lookups == null || lookups.outcomes() == null) {
            sink.failed(PgError.error(ErrorCode.UNSUPPORTED_STATEMENT,
                    "SHOW CALL: this server does not keep call outcomes"));
            return;
        }
        JournalScope scope;
        try {
            scope = JournalScope.of(principal()); // the grants now: a revoked grant hides the calls it allowed
        } catch (ThresherException e) {
            sink.failed(PgError.of(e));
            return;
        }
        connection.pauseReading();
        CompletableFuture<Optional<CallOutcome>> future;
        try {
            future = CompletableFuture.supplyAsync(() -> lookups.outcomes().lookup(scope, show.callId()),
                    lookups.executor());
        } catch (RejectedExecutionException e) {
            future = CompletableFuture.failedFuture(new ThresherException(ErrorCode.CELL_UNAVAILABLE,
                    "SHOW CALL: " + PgWireServer.LOOKUPS_QUEUED + " lookups are waiting on this node already; retry"));
        }
        future.whenComplete((outcome, failure) -> {
            try {
                ctx.executor().execute(() -> lookupDone(show.callId(), outcome, failure, sink));
            } catch (RejectedExecutionException e) {
                log.debug("event loop shut down; dropping the answer of SHOW CALL {}", show.callId());
            }
        });
    }

    private void lookupDone(java.util.UUID callId, Optional<CallOutcome> outcome, Throwable failure,
                            PgResultSink sink) {
        connection.answered();
        if (connection.closed() || !ctx.channel().isActive()) {
            return;
        }
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        if (cause == null && (outcome == null || outcome.isEmpty())) {
            cause = new ThresherException(ErrorCode.UNKNOWN_CALL, "call " + callId + " does not exist for tenant '"
                    + session.tenant() + "', or is a call of a binding you may not call (finished calls are kept"
                    + " limits.coordinationRetentionMs, "
                    + config.limits().coordinationRetentionMs() + " ms)");
        }
        if (cause == null) {
            if (sink.describes()) {
                sink.write(PgRows.showCallDescription(sink.format()));
            }
            sink.write(new BackendMessage.DataRow(PgRows.showCallRow(outcome.get())));
            sink.write(new BackendMessage.CommandComplete("SHOW"));
            sink.done();
        } else {
            sink.failed(PgError.of(cause));
        }
        connection.resumeUnlessContinued();
    }

    // ---- journal queries

    /**
     * Answers a journal query: runs it on the lookup threads the first time (handling pauses until its rows are
     * there, as for a call), then writes its rows (after its RowDescription when {@code describe}, as a simple query
     * does), at most {@code maxRows} of them when positive, the rest left for the portal's next Execute.
     */
    void journalSelect(JournalResults.Cursor cursor, PgResultSink sink) {
        if (cursor.rows() != null) {
            cursor.send(sink.maxRows(), sink::write);
            sink.done();
            return;
        }
        if (lookups == null || lookups.journal() == null) {
            sink.failed(PgError.error(ErrorCode.UNSUPPORTED_STATEMENT,
                    "SELECT: this server does not serve the journal views"));
            return;
        }
        JournalScope scope;
        try {
            scope = JournalScope.of(principal());
        } catch (ThresherException e) {
            sink.failed(PgError.of(e));
            return;
        }
        connection.pauseReading();
        CompletableFuture<dev.thresher.bindings.JournalRows> future;
        try {
            future = CompletableFuture.supplyAsync(() -> lookups.journal().select(scope, cursor.select()),
                    lookups.executor());
        } catch (RejectedExecutionException e) {
            future = CompletableFuture.failedFuture(new ThresherException(ErrorCode.CELL_UNAVAILABLE,
                    "SELECT: " + PgWireServer.LOOKUPS_QUEUED + " lookups are waiting on this node already; retry"));
        }
        future.whenComplete((rows, failure) -> {
            try {
                ctx.executor().execute(() -> selectDone(cursor, rows, failure, sink));
            } catch (RejectedExecutionException e) {
                log.debug("event loop shut down; dropping the answer of a journal query");
            }
        });
    }

    private void selectDone(JournalResults.Cursor cursor, dev.thresher.bindings.JournalRows rows, Throwable failure,
                            PgResultSink sink) {
        connection.answered();
        if (connection.closed() || !ctx.channel().isActive()) {
            return;
        }
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        if (cause == null && rows == null) {
            cause = new ThresherException(ErrorCode.INTERNAL_ERROR, "the journal answered no rows");
        }
        if (cause == null) {
            cursor.ran(rows);
            if (sink.describes()) {
                sink.write(cursor.description());
            }
            cursor.send(sink.maxRows(), sink::write);
            sink.done();
        } else {
            sink.failed(PgError.of(cause));
        }
        connection.resumeUnlessContinued();
    }

    /** While a failed call's failure is reported: its id, for the ErrorResponse's detail; null otherwise. */
    String failedCallId() {
        return failedCallId;
    }
}
