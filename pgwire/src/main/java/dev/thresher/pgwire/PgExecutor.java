package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.channel.ChannelHandlerContext;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs statements: a simple query's script, one statement after the other, and a portal's Execute, both through one
 * dispatch ({@link #run}) that writes each answer to a {@link PgResultSink}. SET, SHOW, transaction statements, session
 * commands and session queries are answered here; calls, writes and lookups are {@link PgWork}'s. Touched on the
 * connection's event loop only.
 */
final class PgExecutor {
    private static final Logger log = LoggerFactory.getLogger(PgExecutor.class);
    /** PostgreSQL's command tag for CALL, with or without a result row. */
    static final String CALL_TAG = "CALL";

    /** What the executor needs of its connection. */
    interface Connection {
        /** The query or the extended protocol's Sync is answered: ReadyForQuery. */
        void readyForQuery();

        /** A simple query failed: its error, then ReadyForQuery. */
        void queryFailed(PgError error);

        /** An extended-protocol message failed: its error, then everything up to Sync is discarded. */
        void fail(PgError error);
    }

    private final PgWireConfig config;
    private final ChannelHandlerContext ctx;
    private final PgSession session;
    private final PgStatements statementStore;
    private final PgWork work;
    private final Connection connection;

    PgExecutor(PgWireConfig config, ChannelHandlerContext ctx, PgSession session, PgStatements statementStore,
               PgWork work, Connection connection) {
        this.config = config;
        this.ctx = ctx;
        this.session = session;
        this.statementStore = statementStore;
        this.work = work;
        this.connection = connection;
    }

    /**
     * A simple query: its statements run in order, each answered in turn, then one ReadyForQuery;
     * the first failure ends the query (PostgreSQL's implicit transaction aborts there too).
     */
    void simpleQuery(String sql) {
        List<ParsedStatement> statements;
        try {
            statements = CallStatementParser.parseScript(sql, config.limits().pgwireStatementsPerQuery());
        } catch (ThresherException e) {
            connection.queryFailed(PgError.of(e));
            return;
        }
        if (statements.isEmpty()) {
            ctx.write(new BackendMessage.EmptyQueryResponse());
            connection.readyForQuery();
            return;
        }
        session.queryStarts(statements.size());
        runScript(statements, 0);
    }

    /**
     * Runs the script's statements from {@code from} on: those answered here (SET, SHOW, transaction statements) in
     * this loop, one after the other; at the first whose work leaves the event loop (a call, a write, a lookup) it
     * returns, and that work's answer continues the script from the next statement, on a fresh stack. So however
     * many statements a script holds, the stack never grows with them.
     */
    private void runScript(List<ParsedStatement> statements, int from) {
        int index = from;
        while (runStatement(statements, index)) {
            index++;
        }
    }

    /**
     * Runs statement {@code index} of the script (past the last: ends the query): true when it was answered here and
     * the script goes on with the next one in {@link #runScript}'s loop; false when the query ended, failed, or its
     * work left the event loop and will continue the script itself.
     */
    private boolean runStatement(List<ParsedStatement> statements, int index) {
        if (index == statements.size()) {
            session.queryEnds(true, ctx::write);
            connection.readyForQuery();
            return false;
        }
        session.statementStarts(); // the statements of one simple query share a transaction (BEGIN makes it explicit)
        return run(statements.get(index), null, null, scriptSink(statements, index));
    }

    /** A simple query's statement {@code index}: described, in text, every row; once answered, the script goes on. */
    private PgResultSink scriptSink(List<ParsedStatement> statements, int index) {
        return new PgResultSink() {
            @Override
            public boolean describes() {
                return true;
            }

            @Override
            public short format() {
                return 0;
            }

            @Override
            public int maxRows() {
                return 0;
            }

            @Override
            public void write(BackendMessage message) {
                ctx.write(message);
            }

            @Override
            public void done() {
                runScript(statements, index + 1);
            }

            @Override
            public void failed(PgError error) {
                connection.queryFailed(error);
            }
        };
    }

    /** A portal's Execute: not described (Describe does that), in the portal's format, at most {@code maxRows} rows. */
    private PgResultSink portalSink(short format, int maxRows) {
        return new PgResultSink() {
            @Override
            public boolean describes() {
                return false;
            }

            @Override
            public short format() {
                return format;
            }

            @Override
            public int maxRows() {
                return maxRows;
            }

            @Override
            public void write(BackendMessage message) {
                ctx.write(message);
            }

            @Override
            public void done() {
                // the extended protocol goes on with the next message
            }

            @Override
            public void failed(PgError error) {
                connection.fail(error);
            }
        };
    }

    /**
     * Runs one statement, a simple query's ({@code portal} null) or a portal's, and writes its answer to {@code sink}:
     * the one dispatch of both protocols. True when the statement was answered here and the caller goes on (a
     * script's loop, so the stack never grows with its statements; {@link PgResultSink#done} is not called); false
     * when it failed, or its work left the event loop and that work's answer calls {@link PgResultSink#done}.
     */
    private boolean run(ParsedStatement statement, PgStatements.Portal portal, String portalName, PgResultSink sink) {
        // Long because: one case per kind of statement, so both protocols' dispatch reads in one place.
        PgError refused = session.refused(statement);
        if (refused != null) {
            sink.failed(refused);
            return false;
        }
        try {
            switch (statement) {
                case ParsedStatement.SessionCommand command -> {
                    PgError error = sessionCommand(command);
                    if (error != null) {
                        sink.failed(error);
                        return false;
                    }
                    return true;
                }
                case ParsedStatement.Answered answered -> {
                    answered(answered, portal, sink);
                    return true;
                }
                case ParsedStatement.Copy c -> {
                    if (portal != null) {
                        sink.failed(PgError.of(new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "COPY FROM STDIN"
                                + " is served in a simple query (as psql, pgjdbc's CopyManager and pg-copy-streams send it)")));
                    } else {
                        work.copy(c, sink);
                    }
                    return false;
                }
                case ParsedStatement.Insert i -> {
                    work.insert(i, sink);
                    return false;
                }
                case ParsedStatement.TableStatement t -> {
                    work.tableStatement(t, sink);
                    return false;
                }
                case ParsedStatement.BindingStatement b -> {
                    work.bindingStatement(b, sink);
                    return false;
                }
                case ParsedStatement.AccessStatement a -> {
                    work.accessStatement(a, sink);
                    return false;
                }
                case ParsedStatement.ShowCall show -> {
                    work.showCall(show, sink);
                    return false;
                }
                case ParsedStatement.Select select -> {
                    if (portal == null && select.parameterCount() > 0) {
                        throw noParameters(select.parameterCount());
                    }
                    work.journalSelect(portal != null ? portal.cursor() : new JournalResults.Cursor(select.select(),
                            JournalResults.formats(List.of(), select.select().columns().size())), sink);
                    return false;
                }
                case ParsedStatement.Call c -> {
                    return call(c, portal, portalName, sink);
                }
                case ParsedStatement.Show s -> {
                    show(s, sink);
                    return true;
                }
                case ParsedStatement.Set s -> {
                    set(s);
                    return true;
                }
                case ParsedStatement.Transaction t -> {
                    transaction(t);
                    return true;
                }
                case ParsedStatement.Empty e -> {
                    if (portal != null) {
                        sink.write(new BackendMessage.EmptyQueryResponse()); // a script's empty query is answered whole
                    }
                    return true;
                }
            }
        } catch (ThresherException e) {
            sink.failed(PgError.of(e));
            return false;
        }
    }

    /** A session or catalog query answered from the session, with its values bound in a portal. */
    private void answered(ParsedStatement.Answered answered, PgStatements.Portal portal, PgResultSink sink) {
        if (portal == null && answered.parameterCount() > 0) {
            throw noParameters(answered.parameterCount());
        }
        SessionQueries.Answer answer = portal != null ? portal.answer() : new SessionQueries.Answer(answered.query(),
                List.of(), JournalResults.formats(List.of(), answered.query().columns().size()));
        answer.run(session);
        if (sink.describes()) {
            sink.write(answer.description());
        }
        answer.send(session, sink.maxRows(), sink::write);
    }

    /** SHOW name: one row of one text column, named after the parameter. */
    private void show(ParsedStatement.Show s, PgResultSink sink) {
        Map.Entry<String, String> shown = session.shown(s.name());
        if (sink.describes()) {
            sink.write(PgRows.showDescription(shown.getKey(), sink.format()));
        }
        sink.write(new BackendMessage.DataRow(List.of(PgRows.bytes(shown.getValue()))));
        sink.write(new BackendMessage.CommandComplete("SHOW"));
    }

    private static ThresherException noParameters(int count) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, "there is no parameter $" + count
                + " in a simple query; use the extended query protocol to bind it");
    }

    /**
     * A CALL: its literal argument, or in a portal the one bound to {@code $1}; a portal runs to completion once, and
     * executing it again yields no more rows. The row is described in a simple query only, in text.
     */
    private boolean call(ParsedStatement.Call c, PgStatements.Portal portal, String portalName, PgResultSink sink) {
        String arguments;
        if (portal == null) {
            if (!(c.argument() instanceof ParsedStatement.Argument.Literal literal)) {
                throw noParameters(1);
            }
            arguments = literal.json();
        } else {
            if (portal.executed()) {
                sink.write(new BackendMessage.CommandComplete(CALL_TAG));
                return true;
            }
            statementStore.ran(portalName, portal);
            arguments = c.argument() instanceof ParsedStatement.Argument.Literal literal ? literal.json() : portal.bound();
        }
        // maxRows is irrelevant: a call returns exactly one row, and any positive maxRows admits it.
        work.startCall(c.bindingName(), arguments, result -> {
            if (sink.describes()) {
                sink.write(PgRows.rowDescription((short) 0));
            }
            sink.write(PgRows.dataRow(result));
            sink.write(new BackendMessage.CommandComplete(CALL_TAG));
            sink.done();
        }, sink::failed);
        return false;
    }

    /**
     * DISCARD ALL, RESET, DEALLOCATE, CLOSE ALL, UNLISTEN: answered, or the error to answer (DISCARD ALL inside a
     * transaction block, DEALLOCATE of a statement that does not exist), as in PostgreSQL.
     */
    private PgError sessionCommand(ParsedStatement.SessionCommand command) {
        switch (command.kind()) {
            case DISCARD_ALL -> {
                if (session.inTransaction()) {
                    return PgError.protocol(SqlStates.ACTIVE_SQL_TRANSACTION,
                            "DISCARD ALL cannot run inside a transaction block");
                }
                statementStore.closeAll();
                session.resetAll(ctx::write);
            }
            case RESET -> {
                if (!session.reset(command.name(), ctx::write)) {
                    log.debug("{} ignoring RESET {}", ctx.channel(), command.name());
                }
            }
            case RESET_ALL -> session.resetAll(ctx::write);
            case DEALLOCATE -> {
                if (!statementStore.closeStatement(command.name())) {
                    return PgError.protocol(SqlStates.INVALID_SQL_STATEMENT_NAME,
                            "prepared statement \"" + command.name() + "\" does not exist");
                }
            }
            case DEALLOCATE_ALL -> statementStore.closeAll();
            case CLOSE_ALL -> statementStore.closePortals();
            case UNLISTEN -> { } // there is no LISTEN
        }
        ctx.write(new BackendMessage.CommandComplete(command.kind().tag));
        return null;
    }

    /**
     * BEGIN, COMMIT and ROLLBACK move the transaction status as PostgreSQL does. Calls are not
     * transactional: a call publishes its result when it completes, and ROLLBACK does not undo it.
     */
    private void transaction(ParsedStatement.Transaction t) {
        String tag = switch (t.kind()) {
            case BEGIN -> {
                session.begin();
                yield "BEGIN";
            }
            case COMMIT -> session.commit(ctx::write); // a failed block rolls back
            case ROLLBACK -> {
                session.rollback(ctx::write);
                yield "ROLLBACK";
            }
        };
        if (t.kind() != ParsedStatement.Transaction.Kind.BEGIN) {
            statementStore.closePortals(); // the end of a transaction closes its portals
        }
        ctx.write(new BackendMessage.CommandComplete(tag));
    }

    void execute(FrontendMessage.Execute e) {
        PgStatements.Portal portal = statementStore.portal(e.portalName());
        if (portal == null) {
            connection.fail(PgError.protocol(SqlStates.INVALID_CURSOR_NAME, "portal \"" + Quoted.of(e.portalName())
                    + "\" does not exist"));
            return;
        }
        run(portal.prepared().statement(), portal, e.portalName(), portalSink(portal.resultFormat(), e.maxRows()));
    }

    /** SET: see {@link PgSession#set}; a setting it does not keep is accepted and ignored. */
    private void set(ParsedStatement.Set s) {
        if (!session.set(s, ctx::write)) {
            log.debug("{} ignoring SET {}", ctx.channel(), s.name());
        }
        ctx.write(new BackendMessage.CommandComplete("SET"));
    }
}
