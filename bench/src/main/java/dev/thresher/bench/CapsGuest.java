package dev.thresher.bench;

import com.dylibso.chicory.wabt.Wat2Wasm;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The caps workload's guest, {@code caps_by_bucket.wat}: compiled in-process with Chicory's wabt (as
 * {@code examples} compiles the sample) once its bucket count is put in.
 */
final class CapsGuest {
    private CapsGuest() {
    }

    static String wat(int buckets) {
        if (buckets < 1 || buckets > 32) {
            throw new IllegalArgumentException("the caps guest has 1..32 buckets, not " + buckets);
        }
        try (InputStream in = CapsGuest.class.getResourceAsStream("caps_by_bucket.wat")) {
            if (in == null) {
                throw new IllegalStateException("missing resource caps_by_bucket.wat");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("__BUCKETS__", Integer.toString(buckets));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] wasm(int buckets) {
        return Wat2Wasm.parse(wat(buckets));
    }
}
