package dev.thresher.http;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * The body of an upload request ({@code POST /admin/tables/{name}/rows}), read as it arrives instead of held whole:
 * the event loop {@linkplain #offer offers} its chunks, the route's worker reads them as an {@link InputStream}. At
 * most {@link #HIGH_WATER} bytes wait here (plus what one socket read brings): past that the connection is not read
 * until the worker has taken some, so a client can send any number of rows through a bounded buffer. The worker's
 * wait for the next bytes is bounded by {@code waitMillis}; a connection that closes, or a body that cannot be
 * decoded, ends the stream with an {@link IOException}.
 */
final class Upload extends InputStream {
    static final int HIGH_WATER = 1 << 20;

    private final Channel channel;
    private final long waitMillis;
    private final ArrayDeque<byte[]> chunks = new ArrayDeque<>();
    private byte[] current;
    private int at;
    private long buffered;
    private boolean ended;
    private IOException failure;
    /** More was not asked of the connection when the last chunk came, because the buffer was full. */
    private boolean paused;
    /** What runs when the body's last chunk arrives ({@link #whenEnded}). */
    private Runnable onEnd;

    Upload(Channel channel, long waitMillis) {
        this.channel = channel;
        this.waitMillis = waitMillis;
    }

    /**
     * A chunk of the body (copied; the caller releases it); asks the connection for more while there is room. Once
     * the reader stopped taking the body, its chunks are dropped as they come, and more is always asked for: the
     * connection reads the body to its end before it closes ({@link #whenEnded}).
     */
    void offer(ByteBuf content, boolean last) {
        boolean more;
        Runnable end = null;
        synchronized (this) {
            boolean taking = failure == null;
            if (taking && content.isReadable()) {
                byte[] bytes = new byte[content.readableBytes()];
                content.readBytes(bytes);
                chunks.add(bytes);
                buffered += bytes.length;
            }
            if (last) {
                ended = true;
                end = onEnd;
                onEnd = null;
            }
            paused = taking && !last && buffered >= HIGH_WATER;
            more = !last && !paused;
            notifyAll();
        }
        if (more) {
            channel.read();
        }
        if (end != null) {
            end.run();
        }
    }

    /**
     * Runs {@code then} once the body's last chunk arrived (now, if it has); until then what comes is dropped. An
     * answer written before the body's end closes the connection only then, so the client, still sending, reads
     * the answer rather than a reset.
     */
    void whenEnded(Runnable then) {
        synchronized (this) {
            if (!ended) {
                onEnd = then;
                return;
            }
        }
        then.run();
    }

    /** The body cannot be read to its end: the connection closed, or what came is not a body. */
    synchronized void fail(IOException cause) {
        if (!ended && failure == null) {
            failure = cause;
            notifyAll();
        }
    }

    /** Whether the whole body arrived: the connection can carry another request after the answer. */
    synchronized boolean complete() {
        return ended && failure == null;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        boolean resume;
        int n;
        synchronized (this) {
            long waitUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
            while (current == null) {
                current = chunks.poll();
                at = 0;
                if (current != null) {
                    break;
                }
                if (failure != null) {
                    throw failure;
                }
                if (ended) {
                    return -1;
                }
                long left = waitUntil - System.nanoTime();
                if (left <= 0) {
                    failure = new IOException("the body stopped arriving: nothing came for " + waitMillis
                            + " ms (limits.httpRequestTimeoutMs)");
                    throw failure;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while waiting for the body");
                }
            }
            n = Math.min(len, current.length - at);
            System.arraycopy(current, at, b, off, n);
            at += n;
            buffered -= n;
            if (at == current.length) {
                current = null;
            }
            resume = paused && buffered < HIGH_WATER / 2;
            if (resume) {
                paused = false;
            }
        }
        if (resume) {
            channel.read();
        }
        return n;
    }

    /** Stops taking the body: what is buffered is dropped, and what still comes is too. */
    @Override
    public synchronized void close() {
        if (!ended && failure == null) {
            failure = new IOException("the upload was closed before its end");
        }
        chunks.clear();
        current = null;
        buffered = 0;
    }
}
