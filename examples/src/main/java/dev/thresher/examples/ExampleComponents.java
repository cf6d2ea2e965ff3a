package dev.thresher.examples;

import com.dylibso.chicory.wabt.Wat2Wasm;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The sample components, compiled from their WebAssembly text on first use (with Chicory's wabt, no
 * native tools) and cached for the life of the JVM.
 */
public final class ExampleComponents {
    private static final String REVENUE_BY_REGION = "revenue_by_region.wat";

    private ExampleComponents() {
    }

    /** The selector {@code revenue_by_region} is written against. */
    public static final String REVENUE_BY_REGION_SELECTOR = "SELECT region, amount FROM orders";

    /** The WebAssembly text of {@code revenue_by_region}. */
    public static String revenueByRegionWat() {
        return Wat.REVENUE_BY_REGION;
    }

    /** The manifest {@code revenue_by_region} is deployed with ({@code examples/revenue_by_region/thresher.json}). */
    public static byte[] revenueByRegionManifest() {
        return resource("thresher.json").getBytes(StandardCharsets.UTF_8);
    }

    /** The compiled module of {@code revenue_by_region}; a fresh copy on each call. */
    public static byte[] revenueByRegionWasm() {
        return Wasm.REVENUE_BY_REGION.clone();
    }

    private static String resource(String name) {
        try (InputStream in = ExampleComponents.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // Holder classes: loaded, and so compiled, once on first use, thread-safely by the JVM.
    private static final class Wat {
        static final String REVENUE_BY_REGION = resource(ExampleComponents.REVENUE_BY_REGION);
    }

    private static final class Wasm {
        static final byte[] REVENUE_BY_REGION = Wat2Wasm.parse(Wat.REVENUE_BY_REGION);
    }
}
