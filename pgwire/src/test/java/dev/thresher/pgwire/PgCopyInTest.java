package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Copy-in mode: which messages it takes, what it feeds the writer, when it waits for the COPY's answer. */
class PgCopyInTest {
    private final EmbeddedChannel channel = new EmbeddedChannel(new ChannelInboundHandlerAdapter());
    private boolean closed;
    private int copying;
    private int awaiting;
    private final PgCopyIn copyIn = new PgCopyIn(channel.pipeline().firstContext(), new PgCopyIn.Connection() {
        @Override
        public boolean closed() {
            return closed;
        }

        @Override
        public void copying() {
            copying++;
        }

        @Override
        public void awaitAnswer() {
            awaiting++;
        }
    });

    private static FrontendMessage.CopyData data(String text) {
        return new FrontendMessage.CopyData(text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void outsideCopyInModeCopyMessagesAreDroppedAndOthersLeft() {
        assertThat(copyIn.handle(data("1\n"))).isTrue();
        assertThat(copyIn.handle(new FrontendMessage.CopyDone())).isTrue();
        assertThat(copyIn.handle(new FrontendMessage.CopyFail("no"))).isTrue();
        assertThat(copyIn.handle(new FrontendMessage.Query("SELECT 1"))).isFalse();
        assertThat(copyIn.handle(new FrontendMessage.Sync())).isFalse();
        assertThat(awaiting).isZero();
        assertThat((Object) channel.readOutbound()).isNull();
    }

    @Test
    void theDataGoesToTheWriterUntilCopyDone() throws IOException {
        CopyInStream stream = copyIn.stream();
        copyIn.ready(stream, 2);
        assertThat((Object) channel.readOutbound()).isEqualTo(new BackendMessage.CopyInResponse(2));
        assertThat(copying).isEqualTo(1);
        assertThat(copyIn.active()).isTrue();
        assertThat(copyIn.handle(data("1\ta\n"))).isTrue();
        assertThat(copyIn.handle(new FrontendMessage.Flush())).isTrue(); // Flush and Sync are ignored
        assertThat(copyIn.handle(new FrontendMessage.Sync())).isTrue();
        assertThat(copyIn.handle(data("2\tb\n"))).isTrue();
        assertThat(copyIn.handle(new FrontendMessage.CopyDone())).isTrue();
        assertThat(copyIn.active()).isFalse();
        assertThat(awaiting).isEqualTo(1);
        assertThat(new String(stream.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("1\ta\n2\tb\n");
    }

    @Test
    void anotherMessageFailsTheCopyAndIsDropped() {
        CopyInStream stream = copyIn.stream();
        copyIn.ready(stream, 1);
        assertThat(copyIn.handle(new FrontendMessage.Query("SELECT 1"))).isTrue();
        assertThat(copyIn.active()).isFalse();
        assertThat(awaiting).isEqualTo(1);
        assertThatThrownBy(stream::read).isInstanceOf(IOException.class)
                .hasMessageContaining("unexpected Query message during COPY from stdin");
    }

    @Test
    void copyFailFailsTheWriter() {
        CopyInStream stream = copyIn.stream();
        copyIn.ready(stream, 1);
        copyIn.handle(new FrontendMessage.CopyFail("cancelled by the client"));
        assertThat(awaiting).isEqualTo(1);
        assertThatThrownBy(stream::read).isInstanceOf(IOException.class).hasMessageContaining("cancelled by the client");
    }

    @Test
    void readingStopsAboveTheHighWaterMarkAndTheWriterEndingReleasesIt() {
        copyIn.ready(copyIn.stream(), 1);
        copyIn.handle(new FrontendMessage.CopyData(new byte[(int) PgCopyIn.HIGH_WATER_BYTES + 1]));
        assertThat(copyIn.paused()).isTrue();
        assertThat(channel.config().isAutoRead()).isFalse();
        copyIn.writerEnded(); // before the client's data ended: the COPY is over
        assertThat(copyIn.paused()).isFalse();
        assertThat(copyIn.active()).isFalse();
    }

    @Test
    void aWriterReadyAfterTheConnectionClosedFindsItsStreamFailed() {
        closed = true;
        CopyInStream stream = copyIn.stream();
        copyIn.ready(stream, 1);
        assertThat(copyIn.active()).isFalse();
        assertThat(copying).isZero();
        assertThatThrownBy(stream::read).isInstanceOf(IOException.class).hasMessageContaining("the connection closed");
    }
}
