package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** An upload's buffer: it asks the connection for more only while it holds less than its high-water mark. */
class UploadTest {
    private final AtomicInteger reads = new AtomicInteger();
    private final EmbeddedChannel channel = new EmbeddedChannel(new ChannelOutboundHandlerAdapter() {
        @Override
        public void read(ChannelHandlerContext ctx) {
            reads.incrementAndGet();
        }
    });

    @Test
    void pastItsHighWaterMarkItStopsAskingForMoreUntilHalfIsTaken() throws Exception {
        Upload upload = new Upload(channel, 1_000);
        int base = reads.get(); // the channel's own first read
        int chunk = 64 * 1024;
        int offered = 0;
        while (offered < Upload.HIGH_WATER) {
            int before = reads.get();
            upload.offer(Unpooled.wrappedBuffer(new byte[chunk]), false);
            offered += chunk;
            assertThat(reads.get() - before).as("after %d bytes", offered).isEqualTo(offered < Upload.HIGH_WATER ? 1 : 0);
        }
        byte[] into = new byte[chunk];
        int taken = 0;
        while (taken + chunk <= Upload.HIGH_WATER / 2) { // still over half: nothing asked
            taken += upload.read(into, 0, chunk);
            assertThat(reads.get() - base).isEqualTo(Upload.HIGH_WATER / chunk - 1);
        }
        taken += upload.read(into, 0, chunk);
        assertThat(reads.get() - base).as("below half: the connection is read again").isEqualTo(Upload.HIGH_WATER / chunk);
        upload.offer(Unpooled.wrappedBuffer(new byte[] {7}), true);
        long rest = 0;
        for (int n = upload.read(into, 0, into.length); n >= 0; n = upload.read(into, 0, into.length)) {
            rest += n;
        }
        assertThat(taken + rest).isEqualTo(Upload.HIGH_WATER + 1);
        assertThat(upload.complete()).isTrue();
    }

    @Test
    void aClosedConnectionOrAStallEndsTheReadWithAFailure() {
        Upload cut = new Upload(channel, 10_000);
        cut.offer(Unpooled.wrappedBuffer(new byte[] {1, 2}), false);
        cut.fail(new IOException("the connection closed before the body's end"));
        assertThatThrownBy(() -> cut.readAllBytes()).isInstanceOf(IOException.class).hasMessageContaining("closed");
        assertThat(cut.complete()).isFalse();

        Upload stalled = new Upload(channel, 50);
        assertThatThrownBy(stalled::read).isInstanceOf(IOException.class).hasMessageContaining("nothing came for 50 ms");
        assertThat(stalled.complete()).isFalse();
    }

    @Test
    void whatComesAfterTheReaderClosedIsDroppedAndReadToItsEnd() throws Exception {
        Upload upload = new Upload(channel, 1_000);
        upload.offer(Unpooled.wrappedBuffer(new byte[] {1}), false);
        upload.close();
        java.util.concurrent.atomic.AtomicBoolean ended = new java.util.concurrent.atomic.AtomicBoolean();
        upload.whenEnded(() -> ended.set(true));
        int before = reads.get();
        for (int i = 0; i < 40; i++) { // 2.5 MiB: far past the high-water mark, none of it kept
            upload.offer(Unpooled.wrappedBuffer(new byte[64 * 1024]), false);
        }
        assertThat(reads.get() - before).as("the rest is asked for, to be dropped").isEqualTo(40);
        assertThat(ended).isFalse();
        upload.offer(Unpooled.EMPTY_BUFFER, true);
        assertThat(ended).as("told of the body's end").isTrue();
        assertThat(upload.complete()).as("the connection cannot carry another request").isFalse();
        assertThatThrownBy(upload::read).isInstanceOf(IOException.class);
    }
}
