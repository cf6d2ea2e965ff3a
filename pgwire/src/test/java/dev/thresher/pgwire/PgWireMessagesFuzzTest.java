package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.thresher.pgwire.BackendReader.Message;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Timeout;

/**
 * After a login, any sequence of typed messages (the input as {@code type, int32 length, body} frames, each length
 * made to match what follows, so the fuzzer explores the messages rather than the framing) is answered with typed
 * errors only and bounded output ({@link FuzzedConnection#check}); and a connection that is still open afterwards
 * still serves: after CopyFail, Sync and ROLLBACK, a call is answered. Regression inputs: {@code
 * src/test/resources/dev/thresher/pgwire/PgWireMessagesFuzzTestInputs/afterLogin/}; fuzzing: docs/security.md,
 * "Fuzzing".
 */
class PgWireMessagesFuzzTest {
    private static final byte[] STARTUP = FuzzedConnection.startup(Map.of("user", FuzzedConnection.USER,
            "database", "thresher", "application_name", "fuzz"));
    private static final String PROBE = "{\"probe\": true}";

    @Timeout(Fuzzing.INPUT_TIMEOUT_SECONDS)
    @FuzzTest
    void afterLogin(byte[] input) {
        Fuzzing.withinBound(() -> {
            FuzzedConnection c = new FuzzedConnection(AuthMode.TRUST).feed(STARTUP);
            assertThat(BackendReader.types(c.sent)).endsWith("KZ");
            c.feed(framed(input), FuzzedConnection.pieces(input)).check();
            if (c.channel.isOpen()) {
                int before = c.sent.size();
                c.feed(new FrontendBytes().copyFail("probe").sync().query("ROLLBACK")
                        .query("CALL BINDING echo('" + PROBE + "')").toByteArray()).check();
                List<Message> answer = c.sent.subList(before, c.sent.size());
                assertThat(answer.stream().filter(m -> m.type() == 'D').map(Message::firstColumn))
                        .as("the call after the input; answered " + BackendReader.types(answer)).contains(PROBE);
                assertThat(answer.getLast().type()).isEqualTo('Z');
            }
            c.close();
        });
    }

    /**
     * The input as frames: a type byte, then a length that says how many of the following bytes are the body (cut to
     * what is there); the length written is the body's.
     */
    static byte[] framed(byte[] input) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer in = ByteBuffer.wrap(input);
        while (in.hasRemaining()) {
            byte type = in.get();
            int length = in.remaining() >= 4 ? in.getInt() - 4 : 0;
            int body = Math.max(0, Math.min(length, in.remaining()));
            out.write(type);
            out.writeBytes(ByteBuffer.allocate(4).putInt(body + 4).array());
            out.write(input, in.position(), body);
            in.position(in.position() + body);
        }
        return out.toByteArray();
    }
}
