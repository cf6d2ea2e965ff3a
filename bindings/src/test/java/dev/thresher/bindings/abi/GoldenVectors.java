package dev.thresher.bindings.abi;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * Reads {@code golden/abi/v1/<name>.hex} (or another directory's): hex digits, whitespace ignored, {@code #} starts a comment
 * running to the end of the line. Golden files are only ever added to, never edited.
 */
final class GoldenVectors {
    private GoldenVectors() {
    }

    static byte[] load(String name) {
        return load("v1", name);
    }

    /** {@code golden/abi/<dir>/<name>.hex}. */
    static byte[] load(String dir, String name) {
        String path = "/golden/abi/" + dir + "/" + name + ".hex";
        try (InputStream in = GoldenVectors.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing golden vector " + path);
            }
            StringBuilder hex = new StringBuilder();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                int hash = line.indexOf('#');
                hex.append((hash >= 0 ? line.substring(0, hash) : line).replaceAll("\\s+", ""));
            }
            return HexFormat.of().parseHex(hex);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
