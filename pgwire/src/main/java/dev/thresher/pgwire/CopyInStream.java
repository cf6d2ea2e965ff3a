package dev.thresher.pgwire;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The data of one {@code COPY ... FROM STDIN} as the writer thread reads it: the event loop
 * {@link #feed feeds} each CopyData's bytes, then {@link #end} or {@link #fail}; the writer thread blocks
 * in {@link #read} until bytes come. The bytes queued are counted, so the connection can stop reading from
 * its socket above a high-water mark and start again when the writer has drained the queue below the low one.
 */
final class CopyInStream extends InputStream {
    private static final byte[] END = new byte[0];

    private final LinkedBlockingQueue<byte[]> chunks = new LinkedBlockingQueue<>();
    private final AtomicLong queued = new AtomicLong();
    private final long lowWaterBytes;
    private final long idleTimeoutMs;
    private final Runnable drained;
    private volatile String failure;
    private volatile boolean paused;
    private byte[] current;
    private int at;
    private boolean ended;

    /**
     * @param lowWaterBytes below this many queued bytes, a paused stream calls {@code drained}
     * @param idleTimeoutMs how long the reader waits for the next piece of data before it gives up
     * @param drained called on the reading thread when a paused stream drains; must hand over to the event loop
     */
    CopyInStream(long lowWaterBytes, long idleTimeoutMs, Runnable drained) {
        this.lowWaterBytes = lowWaterBytes;
        this.idleTimeoutMs = idleTimeoutMs;
        this.drained = drained;
    }

    /** Queues a piece of data; returns the bytes queued now. */
    long feed(byte[] data) {
        if (data.length == 0) {
            return queued.get();
        }
        long now = queued.addAndGet(data.length);
        chunks.add(data);
        return now;
    }

    /** Marks the stream paused: the next drain below the low-water mark calls back. */
    void pause() {
        paused = true;
    }

    /** The client's data is complete. */
    void end() {
        chunks.add(END);
    }

    /** The client gave up (CopyFail), or the connection is gone: the reader fails with {@code message}. */
    void fail(String message) {
        failure = message;
        chunks.add(END);
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) == -1 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        while (current == null || at == current.length) {
            if (ended) {
                return -1;
            }
            byte[] next;
            try {
                next = chunks.poll(idleTimeoutMs, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for COPY data", e);
            }
            if (next == null) {
                throw new IOException("no COPY data for " + idleTimeoutMs + " ms");
            }
            if (next == END) {
                ended = true;
                if (failure != null) {
                    throw new IOException("COPY from stdin failed: " + failure);
                }
                return -1;
            }
            current = next;
            at = 0;
        }
        int n = Math.min(len, current.length - at);
        System.arraycopy(current, at, b, off, n);
        at += n;
        if (at == current.length) {
            long left = queued.addAndGet(-current.length);
            if (paused && left < lowWaterBytes) {
                paused = false;
                drained.run();
            }
        }
        return n;
    }
}
