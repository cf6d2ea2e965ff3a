package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.CallResult;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.PgWireProtocolTest.Calls;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Write back-pressure on a real socket: a client that pipelines and never reads stops being read. */
class PgWireBackPressureTest {
    private static final int QUERIES = 300;
    /** 300 results of 128 KiB are 38 MiB: far more than loopback socket buffers and the 1 MiB high mark. */
    private static final String BIG = "\"" + "x".repeat(128 * 1024) + "\"";

    @Test
    void aClientThatDoesNotReadIsNotReadEither() throws Exception {
        Calls calls = new Calls(r -> CompletableFuture.completedFuture(new CallResult("c", BIG)));
        Limits limits = Limits.fromProperties(Map.of("limits.pgwireAuthTimeoutMs", "60000"));
        try (PgWireServer server = PgWireServer.start(
                new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", "", "acme", limits), calls);
             Socket socket = new Socket("127.0.0.1", server.port())) {
            socket.setSoTimeout(30_000);
            FrontendBytes bytes = new FrontendBytes().startup(Map.of("user", "thresher"));
            for (int i = 0; i < QUERIES; i++) {
                bytes.query("CALL BINDING x('{}')");
            }
            OutputStream out = socket.getOutputStream();
            out.write(bytes.toByteArray());
            out.flush();

            // Wait (bounded) until the connection stops reading, or every query was taken: without
            // back-pressure the server runs all of them. Once paused, a connection takes no statement until
            // its client reads, so the count seen here is final until then.
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (server.readPauses() == 0 && calls.requests.size() < QUERIES) {
                assertThat(System.nanoTime() - deadline).as("waiting for the connection to stop reading").isNegative();
                Thread.sleep(5);
            }
            assertThat(server.readPauses()).as("the connection stopped reading").isEqualTo(1);
            assertThat(calls.requests.size()).as("calls taken while the client did not read").isLessThan(QUERIES);

            // Reading resumes the server: every query is answered, in order.
            DataInputStream in = new DataInputStream(socket.getInputStream());
            int completions = 0;
            int ready = 0;
            while (ready < QUERIES + 1) {
                char type = (char) in.readUnsignedByte();
                int length = in.readInt();
                in.skipNBytes(length - 4);
                if (type == 'C') {
                    completions++;
                } else if (type == 'Z') {
                    ready++;
                } else {
                    assertThat(type).isIn('R', 'S', 'K', 'T', 'D');
                }
            }
            assertThat(completions).isEqualTo(QUERIES);
            assertThat(calls.requests).hasSize(QUERIES);
        }
    }

    /**
     * A batch answered only at its one Sync (pgx's SendBatch, psycopg's pipeline): its answers pass the high water
     * mark before the Sync, so the server must flush them then, as PostgreSQL flushes a full send buffer; otherwise
     * nothing was sent, the channel never becomes writable again, and the connection waits for ever.
     */
    @Test
    void aBatchAnsweredAtItsOneSyncIsFlushedPastTheHighWaterMark() throws Exception {
        Calls calls = new Calls(r -> CompletableFuture.completedFuture(new CallResult("c", BIG)));
        Limits limits = Limits.fromProperties(Map.of("limits.pgwireAuthTimeoutMs", "60000"));
        try (PgWireServer server = PgWireServer.start(
                new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", "", "acme", limits), calls);
             Socket socket = new Socket("127.0.0.1", server.port())) {
            socket.setSoTimeout(30_000);
            FrontendBytes bytes = new FrontendBytes().startup(Map.of("user", "thresher"))
                    .parse("s", "CALL BINDING x('{}')");
            for (int i = 0; i < QUERIES; i++) {
                bytes.bind("", "s", (short) 0, (short) 0).execute("");
            }
            bytes.sync();
            OutputStream out = socket.getOutputStream();
            out.write(bytes.toByteArray());
            out.flush();

            // kills: PgConnectionHandler.drain pausing reads on an unwritable channel without flushing what it wrote
            DataInputStream in = new DataInputStream(socket.getInputStream());
            int completions = 0;
            int ready = 0;
            while (ready < 2) { // after the startup, and after the Sync
                char type = (char) in.readUnsignedByte();
                int length = in.readInt();
                in.skipNBytes(length - 4);
                if (type == 'C') {
                    completions++;
                } else if (type == 'Z') {
                    ready++;
                } else {
                    assertThat(type).isIn('R', 'S', 'K', '1', '2', 'D');
                }
            }
            assertThat(completions).isEqualTo(QUERIES);
            assertThat(calls.requests).hasSize(QUERIES);
        }
    }
}
