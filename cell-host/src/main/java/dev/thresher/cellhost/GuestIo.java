package dev.thresher.cellhost;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.SequenceInputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A sandbox's standard streams. WASI fd 0 reads whatever input the current invocation installed (and
 * end-of-file between invocations); fds 1 and 2 share one capture that keeps at most {@code captureBytes}
 * per invocation and counts the rest, so a chatty guest cannot grow host memory.
 */
final class GuestIo {
    private final SwitchableInput stdin = new SwitchableInput();
    private final BoundedCapture output;
    /** The current invocation's input when it is paged. */
    private PagedInput paged;

    GuestIo(int captureBytes) {
        this.output = new BoundedCapture(captureBytes);
    }

    InputStream stdin() {
        return stdin;
    }

    OutputStream output() {
        return output;
    }

    /** Installs the next invocation's input: {@code first} then {@code second}, then end-of-file. */
    void begin(byte[] first, byte[] second) {
        stdin.current = new SequenceInputStream(new ByteArrayInputStream(first), new ByteArrayInputStream(second));
        paged = null;
        output.reset();
    }

    /**
     * Installs a paged run's input (guest ABI v2): the arguments, then each batch as a frame (u32 length,
     * little-endian, then the batch), then a zero length, then end-of-file. A batch is pulled from
     * {@code batches} only once the guest has read everything before it.
     *
     * @return the input, which records a failure to pull a batch (the guest then sees end-of-file)
     */
    PagedInput beginPaged(byte[] args, RowBatchStream batches) {
        PagedInput in = new PagedInput(args, batches);
        stdin.current = in;
        paged = in;
        output.reset();
        return in;
    }

    /**
     * Replaces what fd 0 yields from now on, in the middle of an invocation: {@code bytes}, then end-of-file. Input
     * installed before and not read yet is dropped (an HTTP handler's nested call: its outcome follows).
     */
    void replaceInput(byte[] bytes) {
        stdin.current = new ByteArrayInputStream(bytes);
        paged = null;
    }

    /** Why the current paged input could not pull a batch, or null (also for input that is not paged). */
    RuntimeException inputFailure() {
        PagedInput p = paged;
        return p == null ? null : p.failure();
    }

    /** Drops unread input and returns what the guest printed, or an empty string. */
    String end() {
        stdin.current = InputStream.nullInputStream();
        return output.text();
    }

    /**
     * Arguments, then frames pulled one at a time, then the end frame. A batch that cannot be pulled ends
     * the input at once and is kept as {@link #failure()}: the host reports it whatever the guest does.
     */
    static final class PagedInput extends InputStream {
        private static final byte[] END_FRAME = new byte[4];

        private final RowBatchStream batches;
        /** What fd 0 yields now: the arguments, a frame's length, a batch or the end frame. */
        private byte[] chunk;
        private int at;
        /** The batch whose length is {@link #chunk}. */
        private byte[] pendingBatch;
        private boolean ended;
        private RuntimeException failure;
        private int batchesRead;

        PagedInput(byte[] args, RowBatchStream batches) {
            this.batches = batches;
            this.chunk = args;
        }

        /** Why a batch could not be pulled, or null. */
        RuntimeException failure() {
            return failure;
        }

        /** Batches handed to the guest so far (pulled, whether or not read to their end). */
        int batchesRead() {
            return batchesRead;
        }

        @Override
        public int read() {
            byte[] one = new byte[1];
            return read(one, 0, 1) == -1 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            while (chunk == null || at == chunk.length) {
                if (!advance()) {
                    return -1;
                }
            }
            int n = Math.min(len, chunk.length - at);
            System.arraycopy(chunk, at, b, off, n);
            at += n;
            return n;
        }

        @Override
        public int available() {
            return chunk == null ? 0 : chunk.length - at;
        }

        /** Moves to the next chunk: a frame's length, its batch, or the end frame. False at the end. */
        private boolean advance() {
            if (ended) {
                return false;
            }
            at = 0;
            if (pendingBatch != null) {
                chunk = pendingBatch;
                pendingBatch = null;
                return true;
            }
            byte[] next;
            try {
                next = batches.next();
            } catch (RuntimeException e) {
                failure = e;
                ended = true;
                chunk = null;
                return false;
            }
            if (next == null) {
                chunk = END_FRAME;
                ended = true;
                return true;
            }
            if (next.length == 0) {
                // A row batch is never empty (its header alone is 16 bytes); a frame of 0 would end the input.
                failure = new IllegalArgumentException("an empty batch cannot be streamed: its frame would read as the end");
                ended = true;
                chunk = null;
                return false;
            }
            batchesRead++;
            chunk = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(next.length).array();
            pendingBatch = next;
            return true;
        }
    }

    private static final class SwitchableInput extends InputStream {
        volatile InputStream current = InputStream.nullInputStream();

        @Override
        public int read() throws IOException {
            return current.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            return current.read(b, off, len);
        }

        @Override
        public int available() throws IOException {
            return current.available();
        }
    }

    private static final class BoundedCapture extends OutputStream {
        private final int cap;
        private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
        private long dropped;

        BoundedCapture(int cap) {
            this.cap = cap;
        }

        @Override
        public synchronized void write(int b) {
            if (kept.size() < cap) {
                kept.write(b);
            } else {
                dropped++;
            }
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            int take = Math.min(len, cap - kept.size());
            kept.write(b, off, take);
            dropped += len - take;
        }

        synchronized void reset() {
            kept.reset();
            dropped = 0;
        }

        synchronized String text() {
            if (kept.size() == 0 && dropped == 0) {
                return "";
            }
            String s = kept.toString(StandardCharsets.UTF_8);
            return dropped == 0 ? s : s + "... (" + dropped + " more bytes dropped)";
        }
    }
}
