package dev.thresher.pgwire;

import dev.thresher.errors.Quoted;
import io.netty.channel.ChannelHandlerContext;

/**
 * The copy-in mode of COPY FROM STDIN on one connection: CopyInResponse once the writer is ready, then CopyData fed
 * to the writer's {@link CopyInStream} until CopyDone or CopyFail. Reading stops while the data queued for the writer
 * is above {@link #HIGH_WATER_BYTES} and starts again below {@link #LOW_WATER_BYTES}. Any other message but Flush and
 * Sync fails the COPY and is dropped, as in PostgreSQL. The COPY's own answer (CommandComplete or the error) is the
 * writer's, answered by the connection; while it is awaited the connection handles nothing else. Touched on the
 * connection's event loop only.
 */
final class PgCopyIn {
    /** COPY data queued for the writer above which the connection stops reading its socket. */
    static final long HIGH_WATER_BYTES = 4L << 20;
    /** ... and below which it reads again. */
    static final long LOW_WATER_BYTES = 1L << 20;
    /** How long a COPY waits for the client's next data before it fails. */
    static final long IDLE_TIMEOUT_MS = 60_000;

    /** What copy-in mode needs of its connection. */
    interface Connection {
        boolean closed();

        /** Copy-in mode began: the client's CopyData may come now; other messages wait for the COPY's answer. */
        void copying();

        /** The client's data ended (or the COPY failed): nothing more is handled until the writer's answer. */
        void awaitAnswer();
    }

    private final ChannelHandlerContext ctx;
    private final Connection connection;
    /** Where the data goes while the connection is in copy-in mode; null otherwise. */
    private CopyInStream stream;
    /** Reading stopped because the data queued for the writer passed {@link #HIGH_WATER_BYTES}. */
    private boolean paused;

    PgCopyIn(ChannelHandlerContext ctx, Connection connection) {
        this.ctx = ctx;
        this.connection = connection;
    }

    /** A stream for the writer of a new COPY: its drain below the low-water mark resumes reading. */
    CopyInStream stream() {
        return new CopyInStream(LOW_WATER_BYTES, IDLE_TIMEOUT_MS, () -> ctx.executor().execute(this::drained));
    }

    /** The writer is ready to read {@code stream}: CopyInResponse, and copy-in mode begins. */
    void ready(CopyInStream stream, int columns) {
        if (connection.closed()) {
            stream.fail("the connection closed");
            return;
        }
        this.stream = stream;
        ctx.writeAndFlush(new BackendMessage.CopyInResponse(columns));
        connection.copying();
    }

    /** Whether the connection is in copy-in mode. */
    boolean active() {
        return stream != null;
    }

    /** Whether reading stopped for the writer to catch up. */
    boolean paused() {
        return paused;
    }

    /**
     * Takes {@code message} if it belongs to copy-in mode: CopyData, CopyDone and CopyFail (dropped outside it, as
     * PostgreSQL does), and in copy-in mode any message (Flush and Sync ignored, the others fail the COPY).
     *
     * @return whether the message was taken
     */
    boolean handle(FrontendMessage message) {
        switch (message) {
            case FrontendMessage.CopyData d -> data(d);
            case FrontendMessage.CopyDone d -> {
                if (stream != null) {
                    stream.end();
                    stream = null;
                    connection.awaitAnswer(); // the COPY's answer first
                }
            }
            case FrontendMessage.CopyFail f -> {
                if (stream != null) {
                    stream.fail(Quoted.of(f.message()));
                    stream = null;
                    connection.awaitAnswer();
                }
            }
            default -> {
                if (stream == null) {
                    return false;
                }
                if (!(message instanceof FrontendMessage.Flush) && !(message instanceof FrontendMessage.Sync)) {
                    // PostgreSQL: "unexpected message type during COPY from stdin"; the COPY fails, the message is dropped
                    stream.fail("unexpected " + message.getClass().getSimpleName() + " message during COPY from stdin");
                    stream = null;
                    connection.awaitAnswer(); // until the writer has rolled back and its failure is answered
                }
            }
        }
        return true;
    }

    private void data(FrontendMessage.CopyData d) {
        if (stream == null) {
            return;
        }
        stream.pause(); // before feeding: a drain below the low-water mark then always calls back
        if (stream.feed(d.data()) > HIGH_WATER_BYTES) {
            paused = true;
            ctx.channel().config().setAutoRead(false);
        }
    }

    /** The writer drained the queued data below the low-water mark: read again. */
    private void drained() {
        if (paused && !connection.closed()) {
            paused = false;
            if (ctx.channel().isWritable()) {
                ctx.channel().config().setAutoRead(true);
            }
        }
    }

    /** The writer ended (its answer is next): a COPY whose data had not ended fails, and reading is no longer held. */
    void writerEnded() {
        if (stream != null) {
            stream.fail("the COPY already ended"); // the writer ended before the client's data did
            stream = null;
        }
        paused = false;
    }

    /** The connection closed: a COPY in progress fails. */
    void closed() {
        if (stream != null) {
            stream.fail("the connection closed");
            stream = null;
        }
    }
}
