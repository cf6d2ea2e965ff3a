package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.CallResult;
import dev.thresher.limits.Limits;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@code Expect: 100-continue} on the front's own pipeline: the interim response never overtakes the responses owed
 * to earlier pipelined requests, and an expectation the front does not know is ignored rather than answered out of
 * turn with a bare 417.
 */
class HttpFrontContinueTest {
    private static final String TOKEN = "continue-test-token-0123456789";
    private final CompletableFuture<CallResult> slow = new CompletableFuture<>();
    private final Wire.StubCalls calls = new Wire.StubCalls(r -> r.bindingName().equals("slow") ? slow
            : CompletableFuture.completedFuture(Wire.StubCalls.echoOf(r)));
    private final EmbeddedChannel channel = new EmbeddedChannel(new ChannelInitializer<Channel>() {
        @Override
        protected void initChannel(Channel ch) {
            HttpFront.configure(ch.pipeline(), Limits.DEFAULTS, HttpFront.builder().tenant("t1").limits(Limits.DEFAULTS)
                    .calls(calls).access(HttpAccess.withToken(TOKEN)).connection(new AtomicInteger()));
        }
    });

    private void send(String text) {
        channel.writeInbound(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
        channel.runPendingTasks();
    }

    private String sent() {
        channel.runPendingTasks();
        StringBuilder out = new StringBuilder();
        ByteBuf buf;
        while ((buf = channel.readOutbound()) != null) {
            out.append(buf.toString(StandardCharsets.UTF_8));
            buf.release();
        }
        return out.toString();
    }

    private static String head(String path, String extra) {
        return "POST " + path + " HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN + "\r\n" + extra;
    }

    @Test
    void aContinueIsSentWhenNoEarlierRequestIsOwedItsResponse() {
        send(head("/v1/bindings/fast/call", "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
        assertThat(sent()).isEqualTo("HTTP/1.1 100 Continue\r\n\r\n");
        send("{}");
        assertThat(sent()).startsWith("HTTP/1.1 200 OK\r\n").contains("\"binding\":\"fast\"");
        channel.finishAndReleaseAll();
    }

    @Test
    void aPipelinedRequestExpectingContinueGetsNoneAheadOfTheResponseOwedBeforeIt() {
        send(head("/v1/bindings/slow/call", "Content-Length: 2\r\n\r\n{}")
                + head("/v1/bindings/fast/call", "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
        assertThat(sent()).as("nothing while the first call runs").isEmpty();
        slow.complete(new CallResult("c1", "{\"first\":1}"));
        String first = sent();
        assertThat(first).startsWith("HTTP/1.1 200 OK\r\n").contains("{\"first\":1}").doesNotContain("100 Continue");
        send("{}"); // the client sends its body when it stops waiting for a 100
        assertThat(sent()).startsWith("HTTP/1.1 200 OK\r\n").contains("\"binding\":\"fast\"");
        assertThat(channel.isOpen()).isTrue();
        channel.finishAndReleaseAll();
    }

    @Test
    void anUnknownExpectationIsIgnoredAndTheRequestAnsweredInTurn() {
        send(head("/v1/bindings/slow/call", "Content-Length: 2\r\n\r\n{}")
                + head("/v1/bindings/fast/call", "Expect: something-else\r\nContent-Length: 2\r\n\r\n{}"));
        assertThat(sent()).isEmpty();
        slow.complete(new CallResult("c1", "{\"first\":1}"));
        String both = sent();
        assertThat(both).doesNotContain("417");
        assertThat(both.indexOf("{\"first\":1}")).isPositive().isLessThan(both.indexOf("\"binding\":\"fast\""));
        channel.finishAndReleaseAll();
    }

    @Test
    void aRequestExpectingContinueWithAContentLengthThatIsNoNumberIsRefused400AndClosed() {
        send(head("/v1/bindings/fast/call", "Expect: 100-continue\r\nContent-Length: twelve\r\n\r\n{}"));
        String answer = sent();
        assertThat(answer).startsWith("HTTP/1.1 400 Bad Request\r\n").contains("PROTOCOL_VIOLATION")
                .containsIgnoringCase("connection: close").doesNotContain("100 Continue");
        assertThat(channel.isOpen()).isFalse();
        assertThat(calls.requests).isEmpty();
        channel.finishAndReleaseAll();
    }

    @Test
    void continueWithAnotherExpectationIsStillAContinue() {
        send(head("/v1/bindings/fast/call", "Expect: something-else\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
        assertThat(sent()).isEqualTo("HTTP/1.1 100 Continue\r\n\r\n");
        send("{}");
        assertThat(sent()).startsWith("HTTP/1.1 200 OK\r\n").contains("\"binding\":\"fast\"");
        channel.finishAndReleaseAll();
    }
}
