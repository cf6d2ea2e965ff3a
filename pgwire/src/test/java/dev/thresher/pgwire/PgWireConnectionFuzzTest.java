package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.Timeout;

/**
 * Whatever bytes a client sends from the first one on, the server's pipeline (the startup decoder, the length-field
 * framing and the message decoder after it, the connection handler) answers with typed errors only, a FATAL error
 * closes the connection, and what it sends is bounded ({@link FuzzedConnection#check}). The same bytes get the same
 * answer whether they come at once or in pieces (unless a load ran: how far its writer got when a later message
 * arrives is timing). Each input runs as a trusted login (which reaches the query protocols) and as a SCRAM one
 * (which reaches the SASL exchange). Regression inputs: {@code
 * src/test/resources/dev/thresher/pgwire/PgWireConnectionFuzzTestInputs/fromTheFirstByte/}; fuzzing: docs/security.md,
 * "Fuzzing".
 */
class PgWireConnectionFuzzTest {

    @Timeout(Fuzzing.INPUT_TIMEOUT_SECONDS)
    @FuzzTest
    void fromTheFirstByte(byte[] input) {
        Fuzzing.withinBound(() -> {
            FuzzedConnection whole = new FuzzedConnection(AuthMode.TRUST).feed(input).check();
            FuzzedConnection pieces = new FuzzedConnection(AuthMode.TRUST).feed(input, FuzzedConnection.pieces(input)).check();
            if (!whole.sentCopyIn()) {
                assertThat(pieces.comparable()).as("the answer to the same bytes in pieces").isEqualTo(whole.comparable());
            }
            FuzzedConnection scram = new FuzzedConnection(AuthMode.SCRAM).feed(input).check();
            whole.close();
            pieces.close();
            scram.close();
        });
    }
}
