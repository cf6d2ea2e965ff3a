package dev.thresher.pgwire;

import dev.thresher.bindings.CallService;
import dev.thresher.bindings.access.AccessService;
import dev.thresher.errors.Category;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pgwire connection: its messages queued and handled in order, its phases, back-pressure and idle timeout, how a
 * query ends (ReadyForQuery) and how errors are answered. Its parts: {@link PgAuthentication} (startup and
 * authentication), {@link PgSession} (who, settings, transaction state), {@link PgStatements} (prepared statements
 * and portals), {@link PgExtendedProtocol} (Parse, Bind, Describe, Close), {@link PgExecutor} (simple queries and
 * Execute, through one dispatch of statements writing to a {@link PgResultSink}), {@link PgCopyIn} (COPY FROM STDIN's
 * copy-in mode), {@link PgWork} (calls to the {@link CallService}, writes and lookups off the event loop),
 * {@link PgRows}, {@link PgAdmission} (where the connection is counted) and {@link PgIdleTimeout}. All state is touched
 * on the connection's event loop only.
 *
 * <p>Ordering: messages are queued and handled one at a time; while a call is in flight nothing else is
 * handled and reading stops, so responses leave in request order even for pipelined extended-protocol
 * batches. The call's future completes on any thread; its continuation hops back to the event loop.
 *
 * <p>Cancellation: the call contract has no caller cancellation, so a CancelRequest is accepted and
 * ignored, and closing the connection while a call is in flight does not cancel the call: its result is
 * dropped when it arrives.
 *
 * <p>Bounds: sessions per user ({@code limits.pgwireConnectionsPerUser}, counted once authenticated), an idle
 * session's life ({@code limits.pgwireIdleSessionTimeoutMs}), statements per simple query
 * ({@code limits.pgwireStatementsPerQuery}; a script runs in a loop, continued from a callback only after work that
 * left the event loop, so no script grows the stack), and what prepared statements and portals hold, by count
 * ({@code limits.pgwireStatementsPerConnection}) and by bytes ({@code limits.pgwireStatementBytesPerConnection}).
 * Names and values a client sent appear in messages through {@link Quoted}: cut short, control characters escaped.
 */
final class PgConnectionHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(PgConnectionHandler.class);

    private static final AtomicInteger PROCESS_IDS = new AtomicInteger();

    /** Authenticating ({@link PgAuthentication}), serving queries, or closed. */
    private enum Phase { AUTHENTICATING, READY, CLOSED }

    private final PgWireConfig config;
    private final CallService calls;
    private final LongAdder readPauses;
    /** Handling stopped because the client is not reading its output; cleared when the channel is writable again. */
    private boolean pausedForWrites;
    private final ArrayDeque<FrontendMessage> pending = new ArrayDeque<>();
    /** The session's prepared statements and portals. */
    private final PgStatements statementStore;
    /** Parse, Bind, Describe and Close, from {@link #handlerAdded} on. */
    private PgExtendedProtocol extended;
    /** Calls, writes and lookups, the work that leaves the event loop, from {@link #handlerAdded} on. */
    private PgWork work;
    /** The simple query protocol and the one dispatch of statements, from {@link #handlerAdded} on. */
    private PgExecutor executor;

    private ChannelHandlerContext ctx;
    private Phase phase = Phase.AUTHENTICATING;
    /** The startup and authentication phases, from {@link #handlerAdded} on. */
    private PgAuthentication authentication;
    /** Who checks logins and grants. */
    private final AccessService access;
    private final AuthThrottle throttle;
    /** Who the session is, its settings and its transaction state. */
    private final PgSession session;
    private boolean callInFlight;
    private boolean skipUntilSync;
    /**
     * The FATAL error for bytes that could not be decoded into a message: sent once every message decoded before them
     * is answered, as PostgreSQL, which reads one message at a time, answers them; nothing after them is handled.
     */
    private PgError undecodable;
    /** COPY FROM STDIN's copy-in mode, from {@link #handlerAdded} on. */
    private PgCopyIn copyIn;
    private final PgWireServer.Writes writes;
    /** Where SHOW CALL looks calls up; null when this server cannot. */
    private final PgWireServer.Lookups lookups;
    /** Where this connection is counted among the server's: its address's sockets awaiting authentication, its user's sessions. */
    private final PgAdmission admission;
    /** Checks {@code limits.pgwireIdleSessionTimeoutMs} from authentication on. */
    private final PgIdleTimeout idle;

    PgConnectionHandler(PgWireConfig config, CallService calls, LongAdder readPauses, PgWireServer.Writes writes) {
        this(config, calls, readPauses, writes, null);
    }

    PgConnectionHandler(PgWireConfig config, CallService calls, LongAdder readPauses, PgWireServer.Writes writes,
                        PgWireServer.Lookups lookups) {
        this(config, calls, readPauses, writes, lookups, PgWireServer.staticAccess(config), new AuthThrottle(),
                new PgConnections(config.limits()));
    }

    PgConnectionHandler(PgWireConfig config, CallService calls, LongAdder readPauses, PgWireServer.Writes writes,
                        PgWireServer.Lookups lookups, AccessService access, AuthThrottle throttle, PgConnections counts) {
        this.access = access;
        this.throttle = throttle;
        this.admission = new PgAdmission(counts);
        this.config = config;
        this.session = new PgSession(config.limits());
        this.statementStore = new PgStatements(config.limits());
        this.calls = calls;
        this.readPauses = readPauses;
        this.writes = writes;
        this.lookups = lookups;
        this.idle = new PgIdleTimeout(config.limits().pgwireIdleSessionTimeoutMs(), idling);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        authentication = new PgAuthentication(config, access, throttle, ctx, authenticating);
        copyIn = new PgCopyIn(ctx, copying);
        extended = new PgExtendedProtocol(ctx, session, statementStore, this::fail);
        work = new PgWork(config, calls, writes, lookups, access, ctx, session, copyIn, working);
        executor = new PgExecutor(config, ctx, session, statementStore, work, executing);
    }

    /**
     * Counts the socket among its address's sockets awaiting authentication; one past the address's share is refused
     * at once, FATAL {@code 53300}, as a socket past the node's cap is.
     */
    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        Optional<PgError> refused = admission.admitAwaiting(PgAdmission.clientAddress(ctx));
        if (refused.isPresent()) {
            fatal(refused.get());
            return;
        }
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FrontendMessage message)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (phase == Phase.CLOSED || undecodable != null) {
            return;
        }
        idle.waiting();
        pending.add(message);
        drain();
    }

    /**
     * Write back-pressure: once the channel is writable again (its outbound buffer fell under the low
     * water mark), reading and handling resume, unless a call is in flight.
     */
    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            pausedForWrites = false;
            idle.waiting(); // the client is reading what it was sent
        }
        if (ctx.channel().isWritable() && !callInFlight && !copyIn.paused() && phase != Phase.CLOSED) {
            ctx.channel().config().setAutoRead(true);
            drain();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (callInFlight) {
            log.debug("{} closed with a call in flight; the call goes on, its result will be dropped", ctx.channel());
        }
        phase = Phase.CLOSED;
        pending.clear();
        if (copyIn != null) {
            copyIn.closed();
        }
        if (authentication != null) {
            authentication.closed();
        }
        idle.stop();
        admission.closed();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (phase == Phase.CLOSED) {
            return;
        }
        if (find(cause, IOException.class) != null) {
            log.debug("{} I/O failure, closing: {}", ctx.channel(), cause.toString());
            phase = Phase.CLOSED;
            ctx.close();
            return;
        }
        PgError error;
        if (find(cause, TooLongFrameException.class) != null) {
            error = PgError.fatal(ErrorCode.PAYLOAD_TOO_LARGE, "message exceeds limits.pgwireMaxMessageBytes ("
                    + config.limits().pgwireMaxMessageBytes() + " bytes)");
        } else if (find(cause, CorruptedFrameException.class) != null) {
            // PostgreSQL's words; the frame decoder's own text names its internals (lengthFieldEndOffset and the like)
            error = PgError.fatal(ErrorCode.PROTOCOL_VIOLATION, "invalid message length");
        } else {
            ThresherException te = ThresherException.of(cause);
            if (te.code().category() == Category.INTERNAL) {
                log.warn("{} unexpected failure, closing", ctx.channel(), cause);
            }
            error = PgError.fatal(te.code(), te.getMessage());
        }
        if (find(cause, DecoderException.class) != null) {
            // A decoder reads ahead of the messages being handled (a call may be in flight): the error comes after
            // their answers, whether the bytes came in one read or in many.
            if (undecodable == null) {
                undecodable = error;
                drain();
            }
            return;
        }
        fatal(error);
    }

    /**
     * Handles queued messages until the queue is empty, a call is in flight, or the channel is not
     * writable: a client that pipelines and never reads must not make the server buffer responses without
     * bound, so what was written is flushed and reading stops until {@link #channelWritabilityChanged}.
     */
    private void drain() {
        FrontendMessage message;
        while (!callInFlight && phase != Phase.CLOSED && ctx.channel().isWritable() && (message = pending.poll()) != null) {
            try {
                handle(message);
            } catch (ThresherException e) {
                // Only for the READY phase; startup failures are fatal and handled where they happen.
                fail(PgError.of(e));
            }
        }
        if (undecodable != null && pending.isEmpty() && !callInFlight && phase != Phase.CLOSED) {
            fatal(undecodable);
            return;
        }
        if (!ctx.channel().isWritable() && phase != Phase.CLOSED) {
            // Answers wait for Sync, but past the high water mark they go out now, as PostgreSQL sends a full send
            // buffer: unflushed, they would keep the channel unwritable for ever and a batch with one Sync would hang.
            ctx.flush();
            ctx.channel().config().setAutoRead(false);
            if (!pausedForWrites) {
                pausedForWrites = true;
                readPauses.increment();
            }
        }
    }

    private void handle(FrontendMessage message) {
        switch (phase) {
            case AUTHENTICATING -> authentication.handle(message);
            case READY -> readyPhase(message);
            case CLOSED -> { }
        }
    }

    // ---- startup and authentication

    /** What {@link PgAuthentication} reads and ends of this connection. */
    private final PgAuthentication.Connection authenticating = new PgAuthentication.Connection() {
        @Override
        public void startupSettings(Map<String, String> parameters) {
            session.startupSettings(parameters, name -> log.debug("{} ignoring the startup parameter {}", ctx.channel(),
                    name));
        }

        @Override
        public void authenticated(PgAuthentication.Authenticated who) {
            completeStartup(who);
        }

        @Override
        public void fatal(PgError error) {
            PgConnectionHandler.this.fatal(error);
        }

        @Override
        public void closeQuietly() {
            phase = Phase.CLOSED;
            ctx.close();
        }

        @Override
        public boolean closed() {
            return phase == Phase.CLOSED;
        }

        @Override
        public boolean queued() {
            return !pending.isEmpty();
        }
    };

    private void completeStartup(PgAuthentication.Authenticated who) {
        admission.awaitingEnded();
        session.authenticated(who);
        Optional<PgError> refused = admission.admitSession(session.user());
        if (refused.isPresent()) {
            fatal(refused.get());
            return;
        }
        phase = Phase.READY;
        idle.waiting();
        idle.start(ctx.executor());
        ctx.write(new BackendMessage.AuthenticationOk());
        session.reportedParameters().forEach((name, value) -> ctx.write(new BackendMessage.ParameterStatus(name, value)));
        session.processId(PROCESS_IDS.incrementAndGet());
        ctx.write(new BackendMessage.BackendKeyData(session.processId(), ThreadLocalRandom.current().nextInt()));
        readyForQuery();
        log.debug("{} authenticated user {} ({})", ctx.channel(), session.user(), config.authMode());
    }

    /** What the idle timeout reads and ends of this connection. */
    private final PgIdleTimeout.Connection idling = new PgIdleTimeout.Connection() {
        @Override
        public boolean ready() {
            return phase == Phase.READY;
        }

        @Override
        public boolean busy() {
            return callInFlight || copyIn.active();
        }

        @Override
        public boolean clientReading() {
            return ctx.channel().isWritable();
        }

        @Override
        public void closeUnread() {
            log.debug("{} idle for limits.pgwireIdleSessionTimeoutMs and not reading; closing", ctx.channel());
            phase = Phase.CLOSED;
            pending.clear();
            ctx.close();
        }

        @Override
        public void fatal(PgError error) {
            PgConnectionHandler.this.fatal(error);
        }
    };

    // ---- query protocols

    private void readyPhase(FrontendMessage message) {
        if (copyIn.handle(message)) {
            return; // COPY's messages, and in copy-in mode any message
        }
        if (skipUntilSync && !(message instanceof FrontendMessage.Sync) && !(message instanceof FrontendMessage.Terminate)) {
            return; // after an extended-protocol error PostgreSQL discards everything up to Sync
        }
        switch (message) {
            case FrontendMessage.Query q -> executor.simpleQuery(q.sql());
            case FrontendMessage.Parse p -> extended.parse(p);
            case FrontendMessage.Bind b -> extended.bind(b);
            case FrontendMessage.Describe d -> extended.describe(d);
            case FrontendMessage.Execute e -> executor.execute(e);
            case FrontendMessage.Close c -> extended.close(c);
            case FrontendMessage.Sync s -> {
                skipUntilSync = false;
                if (session.status() == PgSession.TransactionStatus.IDLE) {
                    statementStore.closePortals(); // Sync ends the implicit transaction, and portals with it
                }
                readyForQuery();
            }
            case FrontendMessage.Flush f -> ctx.flush(); // everything written so far, whatever wrote it
            case FrontendMessage.Terminate t -> {
                phase = Phase.CLOSED;
                ctx.close();
            }
            case FrontendMessage.InvalidText t -> {
                PgError error = PgError.error(ErrorCode.INVALID_TEXT_ENCODING, t.message());
                if (t.type() == 'Q') {
                    queryFailed(error);
                } else {
                    fail(error);
                }
            }
            case FrontendMessage.AuthResponse p -> fatal(unexpected(p));
            case FrontendMessage.Startup s -> fatal(unexpected(s));
            case FrontendMessage.SslRequest r -> fatal(unexpected(r));
            case FrontendMessage.GssEncRequest r -> fatal(unexpected(r));
            case FrontendMessage.CancelRequest r -> fatal(unexpected(r));
            case FrontendMessage.CopyData d -> { }
            case FrontendMessage.CopyDone d -> { }
            case FrontendMessage.CopyFail f -> { }
        }
    }

    private static PgError unexpected(FrontendMessage message) {
        return PgError.fatal(ErrorCode.PROTOCOL_VIOLATION,
                "unexpected " + message.getClass().getSimpleName() + " message after startup");
    }

    /** What the executor needs of this connection: how a query ends and how an error is answered. */
    private final PgExecutor.Connection executing = new PgExecutor.Connection() {
        @Override
        public void readyForQuery() {
            PgConnectionHandler.this.readyForQuery();
        }

        @Override
        public void queryFailed(PgError error) {
            PgConnectionHandler.this.queryFailed(error);
        }

        @Override
        public void fail(PgError error) {
            PgConnectionHandler.this.fail(error);
        }
    };

    private void queryFailed(PgError error) {
        logFailure(error);
        blockFailed();
        ctx.write(new BackendMessage.ErrorResponse(error, work.failedCallId()));
        session.queryEnds(false, ctx::write);
        readyForQuery();
    }

    /** What copy-in mode changes of this connection. */
    private final PgCopyIn.Connection copying = new PgCopyIn.Connection() {
        @Override
        public boolean closed() {
            return phase == Phase.CLOSED;
        }

        @Override
        public void copying() {
            callInFlight = false; // CopyData may come now; other statements wait for the COPY's answer
            if (ctx.channel().isWritable()) {
                ctx.channel().config().setAutoRead(true);
            }
            drain();
        }

        @Override
        public void awaitAnswer() {
            callInFlight = true;
        }
    };

    /** What the work that leaves the event loop changes of this connection. */
    private final PgWork.Connection working = new PgWork.Connection() {
        @Override
        public boolean closed() {
            return phase == Phase.CLOSED;
        }

        @Override
        public void pauseReading() {
            PgConnectionHandler.this.pauseReading();
        }

        @Override
        public void answered() {
            callInFlight = false;
        }

        @Override
        public void resumeUnlessContinued() {
            PgConnectionHandler.this.resumeUnlessContinued();
        }
    };

    /**
     * Marks work in flight off the event loop (a call, a table write, a lookup) and stops reading: back-pressure, so a
     * pipelining client cannot grow the queue while it runs.
     */
    private void pauseReading() {
        callInFlight = true;
        ctx.channel().config().setAutoRead(false);
    }

    /**
     * After such work was answered: reading resumes and queued messages are handled, unless the answer's continuation
     * already started the next call or write of a multi-statement query.
     */
    private void resumeUnlessContinued() {
        if (callInFlight) {
            return;
        }
        idle.waiting(); // answered: the session waits for its client from here
        if (ctx.channel().isWritable()) {
            ctx.channel().config().setAutoRead(true);
        }
        drain();
    }

    // ---- output

    private void readyForQuery() {
        idle.waiting();
        ctx.writeAndFlush(new BackendMessage.ReadyForQuery(session.status().letter));
    }

    /**
     * An error in the extended protocol: reported and flushed at once (as PostgreSQL's elog does, since
     * node-postgres' row mode and pg-cursor send Execute + Flush and wait for the error before Sync),
     * then everything up to Sync is discarded.
     */
    private void fail(PgError error) {
        logFailure(error);
        blockFailed();
        ctx.writeAndFlush(new BackendMessage.ErrorResponse(error, work.failedCallId()));
        skipUntilSync = true;
    }

    /** An error inside a transaction block fails the block, as in PostgreSQL. */
    private void blockFailed() {
        session.fail();
    }

    private void fatal(PgError error) {
        logFailure(error);
        phase = Phase.CLOSED;
        pending.clear();
        ctx.writeAndFlush(new BackendMessage.ErrorResponse(error)).addListener(ChannelFutureListener.CLOSE);
    }

    private void logFailure(PgError error) {
        if (error.code().category() == Category.INTERNAL) {
            log.warn("{} {} {}: {}", ctx.channel(), error.sqlState(), error.code(), error.message());
        } else {
            log.debug("{} {} {}: {}", ctx.channel(), error.sqlState(), error.code(), error.message());
        }
    }

    private static <T extends Throwable> T find(Throwable t, Class<T> type) {
        for (Throwable cur = t; cur != null; cur = cur.getCause()) {
            if (type.isInstance(cur)) {
                return type.cast(cur);
            }
        }
        return null;
    }
}
