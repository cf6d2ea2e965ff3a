package dev.thresher.cellhost;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * What fd 0 yields to a v2 {@code run}, byte for byte, against the golden vector of
 * {@code docs/guest-abi.md} section 4a; and the same stream read in every chunk size a guest might ask for.
 */
class PagedInputGoldenTest {

    /** Hex digits of {@code golden/abi/<name>.hex}; whitespace ignored, {@code #} starts a comment. */
    private static byte[] golden(String name) throws IOException {
        try (InputStream in = PagedInputGoldenTest.class.getResourceAsStream("/golden/abi/" + name + ".hex")) {
            assertThat(in).as(name).isNotNull();
            String text = new String(in.readAllBytes(), StandardCharsets.US_ASCII).replaceAll("#[^\n]*", "");
            return HexFormat.of().parseHex(text.replaceAll("\\s", ""));
        }
    }

    private static byte[] drain(InputStream in, int chunk) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[chunk];
        for (int n = in.read(buf, 0, chunk); n != -1; n = in.read(buf, 0, chunk)) {
            assertThat(n).isBetween(1, chunk);
            out.write(buf, 0, n);
        }
        return out.toByteArray();
    }

    @Test
    void twoBatchesOfPartitionSevenAreTheGoldenStream() throws IOException {
        byte[] expected = golden("v2/run_input_paged");
        assertThat(expected).hasSize(166);
        // the batches are the ones inside the vector: the first is row_batch_revenue, 88 bytes at offset 6
        byte[] first = java.util.Arrays.copyOfRange(expected, 6, 94);
        byte[] second = java.util.Arrays.copyOfRange(expected, 98, 162);
        assertThat(ByteBuffer.wrap(second, 8, 4).order(ByteOrder.LITTLE_ENDIAN).getInt()).isEqualTo(1); // one row

        GuestIo io = new GuestIo(64);
        GuestIo.PagedInput in = io.beginPaged("{}".getBytes(StandardCharsets.UTF_8), RowBatchStream.of(first, second));
        assertThat(drain(in, 4096)).isEqualTo(expected);
        assertThat(in.batchesRead()).isEqualTo(2);
        assertThat(in.failure()).isNull();
    }

    @Test
    void anyReadSizeYieldsTheSameBytes() throws IOException {
        Random random = new Random(1);
        byte[][] batches = new byte[5][];
        for (int i = 0; i < batches.length; i++) {
            batches[i] = new byte[1 + random.nextInt(300)];
            random.nextBytes(batches[i]);
        }
        byte[] args = "{\"x\":[1,2,3]}".getBytes(StandardCharsets.UTF_8);
        byte[] whole = drain(new GuestIo(64).beginPaged(args, RowBatchStream.of(batches)), 1 << 16);
        for (int chunk : new int[] {1, 3, 4, 7, 64}) {
            assertThat(drain(new GuestIo(64).beginPaged(args, RowBatchStream.of(batches)), chunk)).as("chunk %d", chunk)
                    .isEqualTo(whole);
        }
        ByteBuffer b = ByteBuffer.wrap(whole).order(ByteOrder.LITTLE_ENDIAN);
        b.position(args.length);
        for (byte[] batch : batches) {
            assertThat(b.getInt()).isEqualTo(batch.length);
            b.position(b.position() + batch.length);
        }
        assertThat(b.getInt()).isZero();
        assertThat(b.hasRemaining()).isFalse();
    }
}
