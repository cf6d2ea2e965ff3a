package dev.thresher.cellhost;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.SequenceInputStream;
import java.nio.charset.StandardCharsets;

/**
 * A sandbox's standard streams. WASI fd 0 reads whatever input the current invocation installed (and
 * end-of-file between invocations); fds 1 and 2 share one capture that keeps at most {@code captureBytes}
 * per invocation and counts the rest, so a chatty guest cannot grow host memory.
 */
final class GuestIo {
    private final SwitchableInput stdin = new SwitchableInput();
    private final BoundedCapture output;

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
        output.reset();
    }

    /** Drops unread input and returns what the guest printed, or an empty string. */
    String end() {
        stdin.current = InputStream.nullInputStream();
        return output.text();
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
